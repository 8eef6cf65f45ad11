//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// shiftClock is a replica clock off by an offset that the test changes.
type shiftClock struct{ off atomic.Int64 }

func (c *shiftClock) Now() time.Time            { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *shiftClock) set(d time.Duration)       { c.off.Store(int64(d)) }
func (c *shiftClock) offset() time.Duration     { return time.Duration(c.off.Load()) }
func newShiftClock(d time.Duration) *shiftClock { c := &shiftClock{}; c.set(d); return c }

// memLog keeps an in-process replica's log records.
type memLog struct {
	mu   sync.Mutex
	recs []logRec
}

func (m *memLog) Enabled(context.Context, slog.Level) bool { return true }
func (m *memLog) Handle(_ context.Context, r slog.Record) error {
	f := map[string]any{}
	r.Attrs(func(a slog.Attr) bool { f[a.Key] = a.Value.Any(); return true })
	m.mu.Lock()
	m.recs = append(m.recs, logRec{Time: time.Now(), Level: r.Level.String(), Msg: r.Message, Fields: f})
	m.mu.Unlock()
	return nil
}
func (m *memLog) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *memLog) WithGroup(string) slog.Handler      { return m }

// since returns the records logged at or after t whose message contains msg.
func (m *memLog) since(t time.Time, msg string) []logRec {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []logRec
	for _, r := range m.recs {
		if !r.Time.Before(t) && strings.Contains(r.Msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

// claims counts the claim outcomes a replica logged from t on: a run it
// started or found decided, or a claim Redis postponed or refused.
func (m *memLog) claims(t time.Time) int {
	n := 0
	for _, msg := range []string{"run started", "run already decided", "run decided", "claim postponed", "run not claimed"} {
		n += len(m.since(t, msg))
	}
	return n
}

type inProc struct {
	id    string
	clock *shiftClock
	log   *memLog
}

// startInProcess runs one in-process replica per clock on c's Redis, each
// with its own client, until the returned stop is called.
func startInProcess(t *testing.T, c *cluster, table []scheduler.Job, skew time.Duration, clocks map[string]*shiftClock) (map[string]*inProc, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	reps := map[string]*inProc{}
	for id, clk := range clocks {
		r := &inProc{id: id, clock: clk, log: &memLog{}}
		s, err := scheduler.New(schedtest.RedisStore(t, c.redis.Client(t, nil), scheduler.WithKeyPrefix(c.prefix)), table,
			scheduler.WithReplicaID(id), scheduler.WithMaxClockSkew(skew), scheduler.WithClock(clk),
			scheduler.WithLogger(slog.New(r.log)), scheduler.WithShutdownGrace(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		reps[id] = r
		wg.Go(func() { _ = s.Run(ctx) })
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return reps, stop
}

// 8a. Seven in-process replicas on a real Redis: five with clocks spread
// over ±max_clock_skew (2 s), one whose clock jumps an hour ahead for 8 s,
// one whose clock jumps an hour back for 8 s. Every run starts exactly
// once, none early beyond the skew, no catch-up burst (the job has a 1 h
// catch-up window, catchup: all), and the jumping replicas start nothing
// while their clocks are off.
func TestScenario08aClockSkewAndJumps(t *testing.T) {
	t.Parallel()
	bound(t, 60*time.Second)
	row := report(t, "8a", "clocks ±2 s (= max_clock_skew) on 5 replicas; ±1 h jump for 8 s on 2 more")
	c := newCluster(t, clusterConfig{})
	const skew = 2 * time.Second
	table := []scheduler.Job{{
		Name: jobName, Schedule: "@every 1s", Lease: 3 * time.Second, HistoryLimit: 2000,
		CatchupWindow: time.Hour, Catchup: scheduler.CatchupAll,
		Handler: c.led.inProcessJob(300*time.Millisecond, 50*time.Millisecond),
	}}
	clocks := map[string]*shiftClock{
		"minus2s": newShiftClock(-2 * time.Second), "minus1s": newShiftClock(-time.Second), "exact": newShiftClock(0),
		"plus1s": newShiftClock(time.Second), "plus2s": newShiftClock(2 * time.Second),
		"jump+1h": newShiftClock(0), "jump-1h": newShiftClock(0),
	}
	start := time.Now()
	reps, stop := startInProcess(t, c, table, skew, clocks)
	sleepUntil(start.Add(5 * time.Second))
	jumped := time.Now()
	clocks["jump+1h"].set(time.Hour)
	clocks["jump-1h"].set(-time.Hour)
	sleepUntil(jumped.Add(8 * time.Second))
	back := time.Now()
	clocks["jump+1h"].set(0)
	clocks["jump-1h"].set(0)
	sleepUntil(back.Add(12 * time.Second))
	stop()
	stopped := time.Now()

	// Start-up is excluded from "every instant starts": a replica whose
	// clock runs ahead claims instants up to the skew early, and may find
	// the run of an earlier instant, started just then by another replica,
	// still in flight (overlap: skip). Every instant is still decided once.
	// A new cluster's first instants, under the data-loss floor (max skew
	// + claim ahead after the job's state was created), were never the
	// job's to run: they have no record.
	from, to := nextInstant(start.Add(2*skew+time.Second)), back.Add(10*time.Second).Truncate(time.Second)
	got := c.decisions(nextInstant(start.Add(skew+time.Second)), to)
	all := c.led.Runs()
	n := starts(all)
	var missing []string
	inWindow := 0
	for at := from; !at.After(to); at = at.Add(time.Second) {
		inWindow++
		if n[runID(at)] == 0 {
			what := "no record"
			if rec, ok := c.record(runID(at)); ok {
				what = fmt.Sprintf("%s/%s by %s: %s", rec.Decision, rec.Outcome, rec.Replica, rec.Error)
			}
			missing = append(missing, at.UTC().Format(time.TimeOnly)+" ("+what+")")
		}
	}
	winners := map[string]int{}
	var early, late time.Duration
	for _, r := range all {
		winners[r.Replica]++
		d := r.Start.Sub(r.Scheduled())
		early, late = min(early, d), max(late, d)
		if d < -(skew + 100*time.Millisecond) {
			t.Errorf("%s started %s before its instant, more than the max clock skew", r.RunID, -d)
		}
		// A run claimed just before the jump (claims go out up to the
		// claim-ahead, 250 ms at this skew, before the instant) starts at
		// its instant on Redis' clock, whatever the replica's clock did
		// since: only instants after that were claimed with a wrong clock.
		if strings.HasPrefix(r.Replica, "jump") && r.Scheduled().After(jumped.Add(250*time.Millisecond)) && r.Start.Before(back) {
			t.Errorf("%s started %s while its clock was an hour off", r.RunID, r.Replica)
		}
	}
	catchups := 0
	for _, r := range c.history() {
		if r.Kind == scheduler.KindCatchup {
			catchups++
		}
	}
	dups := duplicates(all)
	st := judge(all, c.watch)
	row.Runs, row.Duplicates, row.Missed, row.StaleAccepted = len(n), len(dups), len(missing), st.HarmfulAccepted
	var byReplica []string
	for _, id := range []string{"minus2s", "minus1s", "exact", "plus1s", "plus2s", "jump+1h", "jump-1h"} {
		if winners[id] > 0 {
			byReplica = append(byReplica, fmt.Sprintf("%s %d", id, winners[id]))
		}
	}
	row.figure("starts from %s before to %s after the instant; runs by replica: %s; %d catch-up runs", ms(-early), ms(late), strings.Join(byReplica, ", "), catchups)
	var resumed []string
	for _, id := range []string{"jump+1h", "jump-1h"} {
		k := reps[id].log.claims(back.Add(time.Second))
		resumed = append(resumed, fmt.Sprintf("%s %d", id, k))
	}
	row.figure("claims made in the 11 s after the clocks came back: %s", strings.Join(resumed, ", "))
	row.figure("every instant from start-up decided once: %s", decisionSummary(got))

	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d instants never started: %v", len(missing), inWindow, missing)
		for _, r := range all {
			t.Logf("ledger: %s on %s start %+.3fs end %+.3fs token %d", r.RunID, r.Replica,
				r.Start.Sub(r.Scheduled()).Seconds(), r.End.Sub(r.Scheduled()).Seconds(), r.Token)
		}
		for id, r := range reps {
			for _, l := range r.log.since(start, "") {
				if l.Msg == "run already decided" {
					continue
				}
				t.Logf("%s %s %s %v", id, l.Time.Format("15:04:05.000"), l.Msg, l.Fields)
			}
		}
	}
	if catchups > 0 {
		t.Errorf("%d catch-up runs without any outage", catchups)
	}
	// No burst: nothing ran for an instant outside the time the replicas
	// ran (catch-up of the past, or instants an hour ahead), beyond what
	// the policy allows: at start a replica claims the latest instant whose
	// starting deadline (10 s) has not passed.
	for id := range n {
		if at := instantOf(id); at.Before(start.Add(-10*time.Second-skew)) || at.After(stopped.Add(skew)) {
			t.Errorf("%s ran, outside the %s..%s the replicas ran", id, start.Format(time.TimeOnly), stopped.Format(time.TimeOnly))
		}
	}
	if st.HarmfulAccepted > 0 || st.LegitRejected > 0 {
		t.Errorf("writes: %+v", st)
	}
}

// jumpAlone runs one replica alone and jumps its clock by jump for 5 s,
// then back: once its clock is right again it must decide the runs again,
// since it is the one replica up and Redis answers (SPEC 1).
func jumpAlone(t *testing.T, row *row, jump time.Duration) {
	c := newCluster(t, clusterConfig{})
	table := []scheduler.Job{{
		Name: jobName, Schedule: "@every 1s", Lease: 3 * time.Second, HistoryLimit: 2000,
		Handler: c.led.inProcessJob(300*time.Millisecond, 50*time.Millisecond),
	}}
	clk := newShiftClock(0)
	start := time.Now()
	_, stop := startInProcess(t, c, table, 2*time.Second, map[string]*shiftClock{"alone": clk})
	sleepUntil(start.Add(3 * time.Second))
	jumped := time.Now()
	clk.set(jump)
	sleepUntil(jumped.Add(5 * time.Second))
	back := time.Now()
	clk.set(0)
	sleepUntil(back.Add(8 * time.Second))
	stop()

	all := c.led.Runs()
	var firstAfter time.Time
	during := 0
	for _, r := range all {
		if r.Start.After(back) && (firstAfter.IsZero() || r.Start.Before(firstAfter)) {
			firstAfter = r.Start
		}
		if r.Start.After(jumped) && r.Start.Before(back) {
			during++
		}
	}
	dups := duplicates(all)
	row.Runs, row.Duplicates = len(starts(all)), len(dups)
	row.figure("%d runs started while the clock was off", during)
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	if firstAfter.IsZero() {
		row.Recovery = "none in 8 s"
		t.Errorf("the replica started no run in the 8 s after its clock came back (it is the only replica, Redis answers): runs go undecided")
	} else {
		row.Recovery = dur(firstAfter.Sub(back))
		if firstAfter.Sub(back) > 3*time.Second {
			t.Errorf("the replica resumed %s after its clock came back", firstAfter.Sub(back))
		}
	}
	// The instants from 2 s after the clock came back must each be decided.
	missed := 0
	byInstant := map[time.Time]bool{}
	for _, r := range c.history() {
		byInstant[r.ScheduledAt.UTC()] = true
	}
	for at := nextInstant(back.Add(2 * time.Second)); at.Before(back.Add(7 * time.Second)); at = at.Add(time.Second) {
		if !byInstant[at.UTC()] {
			missed++
		}
	}
	row.Missed = missed
	if missed > 0 {
		t.Errorf("%d instants after the clock came back were never decided", missed)
	}
}

// 8b. One replica alone; its clock jumps an hour ahead for 5 s, then back.
func TestScenario08bClockJumpAheadAndBack(t *testing.T) {
	t.Parallel()
	bound(t, 40*time.Second)
	row := report(t, "8b", "one replica alone: clock +1 h for 5 s, then back")
	jumpAlone(t, row, time.Hour)
}

// 8c. One replica alone; its clock jumps an hour back for 5 s, then is set
// right (a forward step of an hour, as NTP makes after a VM resumes).
func TestScenario08cClockJumpBackAndForward(t *testing.T) {
	t.Parallel()
	bound(t, 40*time.Second)
	row := report(t, "8c", "one replica alone: clock −1 h for 5 s, then back")
	jumpAlone(t, row, -time.Hour)
}
