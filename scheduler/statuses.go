package scheduler

import (
	"context"
	"fmt"
)

// MaxStatuses is the most jobs one Statuses call reads.
const MaxStatuses = 500

// Statuses reads the state of the named jobs, each with its latest limit
// history records, in one round trip: one script call for them all on a
// standalone or Sentinel store, one per job pipelined on Redis Cluster (per
// node, one round trip), the same on each master in redlock mode. The answer
// is in the order of jobs. At most MaxStatuses jobs per call: a caller pages.
func (c *Control) Statuses(ctx context.Context, jobs []string, limit int) ([]*Status, error) {
	if len(jobs) > MaxStatuses {
		return nil, fmt.Errorf("scheduler: Statuses reads at most %d jobs per call, got %d", MaxStatuses, len(jobs))
	}
	for _, j := range jobs {
		if err := checkJob(j); err != nil {
			return nil, err
		}
	}
	if limit <= 0 {
		limit = 10
	}
	if len(jobs) == 0 {
		return []*Status{}, nil
	}
	return c.store.Statuses(ctx, jobs, limit)
}
