package scheduler

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// periodCap bounds the instants nominalPeriod looks at.
const periodCap = 20000

// nominalPeriod is the schedule's period as the alert rules use it: for
// "@every d", d; for a cron spec, the longest gap between consecutive
// instants over the coming year (at most periodCap instants), so that a
// weekdays-only job has a period of three days. 0 when the schedule has
// fewer than two instants ahead.
func nominalPeriod(j *jobState, from time.Time) time.Duration {
	if d := j.sched.Every(); d > 0 {
		return d
	}
	periodWalks.Add(1)
	end := from.AddDate(1, 0, 0)
	var longest time.Duration
	prev := j.sched.Next(from)
	for n := 0; n < periodCap && !prev.IsZero() && prev.Before(end); n++ {
		next := j.sched.Next(prev)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// period is nominalPeriod, computed once per job state (a table reload
// makes new ones) and, across job states, once per schedule and starting
// time (periods).
func (j *jobState) period(now time.Time) time.Duration {
	j.periodOnce.Do(func() { j.periodVal = periods.get(j, now) })
	return j.periodVal
}

// periods shares nominalPeriod's walks between the jobs of a table: the
// interval gauge asks for every job's period at the first metrics
// collection (one time for all), and a cron job's walk is up to periodCap
// instants of its schedule (~1 ms for a job every second): a table of
// 10,000 such jobs cost that collection ~12 s of CPU, while the engine was
// settling. Jobs with one schedule (spec and zone) now share one walk.
var periods periodCache

// periodWalks counts nominalPeriod's walks (for tests).
var periodWalks atomic.Int64

// periodCache keeps, per schedule, the last period nominalPeriod gave and
// the time it was computed from: the same schedule asked from the same
// time reads it, another time walks again (and replaces it). @every
// schedules need no walk.
type periodCache struct {
	mu sync.Mutex
	m  map[periodKey]periodVal
}

type periodKey struct{ spec, loc string }

type periodVal struct {
	from time.Time
	p    time.Duration
}

func (c *periodCache) get(j *jobState, from time.Time) time.Duration {
	if j.sched.Every() > 0 {
		return nominalPeriod(j, from)
	}
	k := periodKey{j.sched.String(), j.sched.Location().String()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok && v.from.Equal(from) {
		return v.p
	}
	p := nominalPeriod(j, from)
	if c.m == nil {
		c.m = map[periodKey]periodVal{}
	}
	c.m[k] = periodVal{from, p}
	return p
}

// jobGauges are the cluster-wide per-job gauges and this replica's own
// (docs/monitoring.md lists them), observed at each collection from what
// the last heartbeat read.
type jobGauges struct {
	lastSuccess, lastRun, nextRun, interval, deadline, clockOffset, maxSkew metric.Float64ObservableGauge
	fails, paused, pauseAfter, info, storeUp                                metric.Int64ObservableGauge
}

// registerJobGauges registers the gauges and their callback with the
// scheduler's meter, until Run returns (a stopped replica is no longer
// one of the cluster's).
func (s *Scheduler) registerJobGauges() error {
	m := s.cfg.meter.Meter(ScopeName)
	var g jobGauges
	var err error
	f := func(name, desc, unit string) metric.Float64ObservableGauge {
		if err != nil {
			return nil
		}
		var v metric.Float64ObservableGauge
		opts := []metric.Float64ObservableGaugeOption{metric.WithDescription(desc)}
		if unit != "" {
			opts = append(opts, metric.WithUnit(unit))
		}
		v, err = m.Float64ObservableGauge(name, opts...)
		return v
	}
	i := func(name, desc, unit string) metric.Int64ObservableGauge {
		if err != nil {
			return nil
		}
		var v metric.Int64ObservableGauge
		opts := []metric.Int64ObservableGaugeOption{metric.WithDescription(desc)}
		if unit != "" {
			opts = append(opts, metric.WithUnit(unit))
		}
		v, err = m.Int64ObservableGauge(name, opts...)
		return v
	}
	g.lastSuccess = f("solocron.job.last_success_timestamp", "Unix time the job's last successful run ended, from the store.", "s")
	g.lastRun = f("solocron.job.last_run_timestamp", "Unix time of the job's last run with this outcome (ended, or decided for missed and skipped runs), from the store.", "s")
	g.nextRun = f("solocron.job.next_run_timestamp", "Unix time of the job's next scheduled instant, plus jitter.", "s")
	g.interval = f("solocron.job.interval", "Nominal period of the job's schedule: the @every period, or the longest gap between a cron spec's instants over the coming year.", "s")
	g.deadline = f("solocron.job.starting_deadline", "The job's starting_deadline.", "s")
	g.clockOffset = f("solocron.replica.clock_offset", "This replica's clock minus Redis' clock, at its last heartbeat.", "s")
	g.maxSkew = f("solocron.max_clock_skew", "The table's store.max_clock_skew.", "s")
	g.fails = i("solocron.job.consecutive_failures", "Runs of the job in a row that ended failed, timed_out or lease_lost, from the store.", "{failure}")
	g.paused = i("solocron.job.paused", "1 when the job is paused (cluster-wide, or paused: true in the table), else 0.", "")
	g.pauseAfter = i("solocron.job.pause_after_failures", "The job's pause_after_failures (0: never), from the table.", "")
	g.info = i("solocron.replica.info", "1 for this replica, with its id, its version and the fingerprint of the job table it runs.", "")
	// Whether the replica reaches Redis, as /readyz says: an outage of the
	// store pages (SolocronStoreUnreachable) while it lasts, not only once
	// its missed runs are recorded after it.
	g.storeUp = i("solocron.store.up", "1 while this replica's heartbeats reach the store (as /readyz says), else 0.", "")
	if err != nil {
		return err
	}
	var fp fingerprintCache
	version := s.cfg.version
	if version == "" {
		version = defaultVersion()
	}
	s.gauges, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		tab, gen := s.table()
		now := s.now()
		o.ObserveInt64(g.info, 1, metric.WithAttributes(
			attribute.String("replica", s.cfg.replicaID),
			attribute.String("version", version),
			attribute.String("table", fp.get(tab, gen))))
		o.ObserveFloat64(g.maxSkew, s.cfg.skew.Seconds())
		var up int64
		if s.Ready() == nil {
			up = 1
		}
		o.ObserveInt64(g.storeUp, up, metric.WithAttributes(attribute.String("replica", s.cfg.replicaID)))
		if off, ok := s.redisClock.offset(now); ok {
			o.ObserveFloat64(g.clockOffset, off.Seconds(), metric.WithAttributes(attribute.String("replica", s.cfg.replicaID)))
		}
		for _, j := range tab {
			job := attribute.String("job", j.Name)
			attrs := metric.WithAttributeSet(attribute.NewSet(job))
			j.memo.mu.Lock()
			st, paused, synced := j.memo.stats, j.memo.paused, j.memo.statsRead
			j.memo.mu.Unlock()
			if next := j.sched.Next(now); !next.IsZero() {
				o.ObserveFloat64(g.nextRun, unixSeconds(j.fire(next)), attrs)
			}
			if p := j.period(now); p > 0 {
				o.ObserveFloat64(g.interval, p.Seconds(), attrs)
			}
			o.ObserveFloat64(g.deadline, j.StartingDeadline.Seconds(), attrs)
			o.ObserveInt64(g.pauseAfter, int64(j.PauseAfterFailures), attrs)
			if !synced || up == 0 {
				// Nothing read from the store yet: no value rather than a
				// wrong one. Nor while the store does not answer: what the
				// last heartbeat read grows stale (a partitioned replica
				// kept exporting a failure streak of 7 for a job that
				// succeeded since, and the rules' max by job over the
				// replicas kept SolocronJobFailing firing for it as long
				// as the partition lasted). The replicas that reach the
				// store export the job's state; when none does, the
				// rules keep the values recorded last.
				continue
			}
			// Paused cluster-wide (pause, pause_after_failures) or by the
			// table (paused: true): either way no run starts, and the
			// alert rules leave the job alone.
			var p int64
			if paused || j.Paused {
				p = 1
			}
			o.ObserveInt64(g.paused, p, attrs)
			o.ObserveInt64(g.fails, st.Fails, attrs)
			if !st.LastSuccess.IsZero() {
				o.ObserveFloat64(g.lastSuccess, unixSeconds(st.LastSuccess), attrs)
			}
			for k, t := range st.LastRun {
				if !t.IsZero() {
					o.ObserveFloat64(g.lastRun, unixSeconds(t), metric.WithAttributes(job, attribute.String("outcome", string(store.StatOutcomes[k]))))
				}
			}
		}
		return nil
	}, g.lastSuccess, g.lastRun, g.nextRun, g.interval, g.deadline, g.clockOffset, g.maxSkew, g.fails, g.paused, g.pauseAfter, g.info, g.storeUp)
	return err
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// fingerprintCache keeps the fingerprint of the table generation last asked
// about.
type fingerprintCache struct {
	mu  sync.Mutex
	gen int
	fp  string
}

func (c *fingerprintCache) get(tab []*jobState, gen int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fp == "" || c.gen != gen {
		jobs := make([]Job, len(tab))
		for i, j := range tab {
			jobs[i] = j.Job
		}
		c.fp, c.gen = TableFingerprint(jobs), gen
	}
	return c.fp
}

// zero makes a job's counters appear at 0 as soon as the replica knows
// the job, the series an alert reads (zeroOutcomes, zeroClaims): a counter
// that first shows up at 1 hides its first event from increase() and
// rate(), so an alert on a job's first failure would never fire.
func (t *telemetry) zero(job string, m *memo) {
	ctx := context.Background()
	for _, o := range zeroOutcomes {
		t.runs.Add(ctx, 0, m.sets.get(job, "outcome", string(o)).add[:]...)
	}
	for _, r := range zeroClaims {
		t.claims.Add(ctx, 0, m.sets.get(job, "result", r).add[:]...)
	}
	t.leaseLost.Add(ctx, 0, m.sets.get(job, "", "").add[:]...)
}

// statsChanged notes that this replica changed (or saw a change of) the
// job's run statistics in the store, without knowing them as changed: the
// next heartbeat tells the others, which read them.
func (s *Scheduler) statsChanged(job string) {
	s.noteChanged(job, nil)
}

// statsKnown notes that j's memo holds its statistics as changed (a close
// answered them, a heartbeat read a change): the next heartbeat publishes
// them, and the others take them without reading the job's meta.
func (s *Scheduler) statsKnown(j *jobState) {
	s.noteChanged(j.Name, j.memo)
}

func (s *Scheduler) noteChanged(job string, m *memo) {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	if s.changed == nil {
		s.changed = map[string]*memo{}
	}
	if old, ok := s.changed[job]; ok && old == nil {
		// A change not known stays one: the others must read the job.
		return
	}
	s.changed[job] = m
}

// takeChanged returns and forgets what statsChanged and statsKnown noted,
// as the heartbeat publishes it (statsEntry).
func (s *Scheduler) takeChanged() []string {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	out := make([]string, 0, len(s.changed))
	for j, m := range s.changed {
		entry := j
		if m != nil {
			if raw, at := m.statsValue(); at > 0 {
				entry = statsEntry(j, at, raw)
			}
		}
		out = append(out, entry)
	}
	clear(s.changed)
	// In a fixed order, not the map's: the published list is part of a
	// seed's replay.
	slices.Sort(out)
	return out
}

// unTakeChanged puts back what a failed heartbeat could not publish, as
// changes the others must read.
func (s *Scheduler) unTakeChanged(entries []string) {
	for _, e := range entries {
		job, _, _ := strings.Cut(e, "|")
		s.statsChanged(job)
	}
}

// statsEntry is a published change of a job's statistics with their value:
// "<job>|<server time µs>|<stats>" (job names hold no '|'). A change
// published as the job's name alone has the others read them.
func statsEntry(job string, at int64, raw string) string {
	return job + "|" + strconv.FormatInt(at, 10) + "|" + raw
}

// parseStatsEntry reads statsEntry; ok is false for a name alone.
func parseStatsEntry(e string) (job string, at int64, raw string, ok bool) {
	f := strings.SplitN(e, "|", 3)
	if len(f) != 3 {
		return e, 0, "", false
	}
	at, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || at <= 0 {
		return f[0], 0, "", false
	}
	return f[0], at, f[2], true
}

// changedLookback is how far back a heartbeat reads the jobs whose
// statistics changed: two heartbeats, and the clock skew between the
// replica that published a change (on its clock) and this one.
func changedLookback(interval, skew time.Duration) time.Duration {
	return 2*interval + skew
}
