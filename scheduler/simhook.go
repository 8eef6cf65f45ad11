package scheduler

import (
	"time"

	"github.com/solocron/solocron/scheduler/internal/simhook"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// The simulation's hooks (scheduler/internal/simhook): what the seeded fault
// search (scheduler/internal/sim) needs of the engine beyond its API.
func init() {
	simhook.Engine = &simhook.Hooks[Job, Option, *Scheduler, *Control]{
		NewScheduler: func(r simhook.Replica, table []Job, opts []Option) (*Scheduler, error) {
			cfg, err := newConfig(opts)
			if err != nil {
				return nil, err
			}
			cfg.jitter = r.Jitter
			b, err := r.Backend(cfg.backend())
			if err != nil {
				return nil, err
			}
			return newScheduler(b, cfg, table)
		},
		Store: func(c *Control) store.Backend { return c.store },
		Instants: func(job Job, skew time.Duration, from, to time.Time) ([]string, error) {
			j, err := newJobState(job.withDefaults(), "", &memo{}, skew)
			if err != nil {
				return nil, err
			}
			var ids []string
			for t := j.sched.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !j.fire(t).After(to); t = j.sched.Next(t) {
				ids = append(ids, runID(j.Name, t))
			}
			return ids, nil
		},
		WithDefaults: Job.withDefaults,
		ClaimTimeout: claimTimeout,
	}
}
