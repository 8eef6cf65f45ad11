package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// gauges collects a reader's gauges as "name{attrs}" -> value.
func gauges(t testing.TB, r *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = float64(p.Value)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = float64(p.Value)
				}
			}
		}
	}
	return out
}

// counter counts what a replica sends Redis: round trips, calls of the
// sync script, and commands outside scripts that read a job's keys.
type counter struct {
	trips, syncs, direct atomic.Int64
	changedReads         atomic.Int64
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) note(cmds []redis.Cmder) {
	c.trips.Add(1)
	for _, cmd := range cmds {
		a := cmd.Args()
		name := strings.ToLower(fmt.Sprint(a[0]))
		switch name {
		case "evalsha", "eval":
			if len(a) > 1 && (a[1] == store.SyncScript.Hash()) {
				c.syncs.Add(1)
			}
			if len(a) > 1 && (a[1] == store.ChangedScript.Hash()) {
				c.changedReads.Add(1)
			}
		case "hget", "hmget", "hgetall", "lrange", "zrange":
			// A job's keys carry its hash tag; the store-wide list of
			// jobs with a backfill (read in the heartbeat's round trip)
			// is no job's.
			if len(a) > 1 && strings.Contains(fmt.Sprint(a[1]), "{") {
				c.direct.Add(1)
			}
		}
	}
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.note([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.note(cmds)
		return next(ctx, cmds)
	}
}

// agreeingReplicas runs three replicas of a table with a job that always
// fails every second, a job that succeeds and a paused job, and checks
// that each replica's cluster-wide gauges follow the store within two
// heartbeats (and so agree with each other), although a job that runs
// every second is never synced for being idle, and the full sweep comes
// only every fullSweepEvery beats. It also counts what the replicas send:
// one sync call per heartbeat, no command per job outside the scripts.
//
// newClients returns the clients of one replica: one, or a Redlock
// replica's masters; the values are checked against the store's, read
// directly (and merged as a Redlock replica merges them).
func agreeingReplicas(t *testing.T, newClients func() []*redis.Client, beat, slack, window time.Duration) {
	ctx := context.Background()
	probes := newClients()
	table := []Job{
		{Name: "bad", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return errors.New("boom") })},
		{Name: "good", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil })},
		{Name: "idle", Schedule: "@every 1h", StartingDeadline: 7 * time.Second, Handler: jobs.Func(func(context.Context) error { return nil })},
	}
	for _, p := range probes {
		for _, j := range table {
			if err := p.HSetNX(ctx, "solocron:{"+j.Name+"}:meta", "epoch", "established").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.HSet(ctx, "solocron:{idle}:meta", "paused", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	type replica struct {
		reader *sdkmetric.ManualReader
		count  *counter
		s      *Scheduler
	}
	var reps []replica
	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	for i := range 3 {
		reader := sdkmetric.NewManualReader()
		cs := newClients()
		cnt := &counter{}
		opts := []Option{WithReplicaID(fmt.Sprintf("r%d", i)), WithVersion("v-test"),
			WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithSyncInterval(beat),
			WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}
		var s *Scheduler
		var err error
		if len(cs) == 1 {
			cs[0].AddHook(cnt)
			s, err = New(redisStore(t, cs[0]), table, opts...)
		} else {
			// Each master: its own counter; the first master's is checked.
			cs[0].AddHook(cnt)
			us := make([]redis.UniversalClient, len(cs))
			for k, c := range cs {
				us[k] = c
			}
			s, err = New(redlockStore(t, us), table, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, replica{reader, cnt, s})
		wg.Go(func() { _ = s.Run(runCtx) })
	}

	// view is what the store holds about a job, as a replica reads it: from
	// every master, merged, in Redlock mode.
	view := func(job string) store.JobStats {
		var per []store.JobStats
		for _, p := range probes {
			m, err := p.HGetAll(ctx, "solocron:{"+job+"}:meta").Result()
			if err != nil {
				t.Fatal(err)
			}
			var runs []string
			for _, o := range store.StatOutcomes {
				if v, ok := m["at:"+string(o)]; ok {
					runs = append(runs, string(o)+"="+v)
				}
			}
			per = append(per, store.ParseStats(m["ok"]+"|"+cmp.Or(m["fails"], "0")+"|"+strings.Join(runs, ",")))
		}
		return store.MergeStats(per)
	}
	// The store's failure streak of "bad", sampled over time.
	type sample struct {
		at    time.Time
		fails int64
	}
	var held []sample
	lag := 2*beat + slack // two heartbeats, and slack for the reading and a slow machine
	start := time.Now()
	var checked int
	for time.Since(start) < window {
		n := view("bad").Fails
		now := time.Now()
		held = append(held, sample{now, n})
		// What the store held lag ago, every replica shows by now.
		var want int64 = -1
		for _, s := range held {
			if !s.at.After(now.Add(-lag)) {
				want = s.fails
			}
		}
		for i, r := range reps {
			got := gauges(t, r.reader)["solocron.job.consecutive_failures{job=bad}"]
			if want >= 0 && int64(got) < want {
				t.Fatalf("after %v: replica r%d shows %v consecutive failures of bad; the store had %d %v ago", now.Sub(start), i, got, want, lag)
			}
			checked++
		}
		time.Sleep(beat / 4)
	}
	// Quiet now (no job fires within the hour): within a few heartbeats
	// every replica shows what the store holds.
	quiet := make([]Job, len(table))
	for i, j := range table {
		j.Schedule = "@every 1h"
		quiet[i] = j
	}
	for _, r := range reps {
		if err := r.s.Reload(quiet); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(4*beat + time.Second)
	if held[len(held)-1].fails < 3 {
		t.Fatalf("bad failed only %d times in a row: the test did not exercise the gauges", held[len(held)-1].fails)
	}

	bad, good := view("bad"), view("good")
	at := func(st store.JobStats, o Outcome) float64 {
		return unixSeconds(st.LastRun[slices.Index(store.StatOutcomes[:], o)])
	}
	first := gauges(t, reps[0].reader)
	want := map[string]float64{
		"solocron.job.consecutive_failures{job=bad}":                  float64(bad.Fails),
		"solocron.job.consecutive_failures{job=good}":                 0,
		"solocron.job.last_run_timestamp{job=bad,outcome=failed}":     at(bad, Failed),
		"solocron.job.last_success_timestamp{job=good}":               unixSeconds(good.LastSuccess),
		"solocron.job.last_run_timestamp{job=good,outcome=succeeded}": at(good, Succeeded),
		"solocron.job.paused{job=idle}":                               1,
		"solocron.job.paused{job=bad}":                                0,
		"solocron.job.interval{job=bad}":                              3600,
		"solocron.job.interval{job=idle}":                             3600,
		"solocron.job.starting_deadline{job=idle}":                    7,
		"solocron.max_clock_skew{}":                                   2,
	}
	for k, v := range want {
		if got, ok := first[k]; !ok || got != v {
			t.Errorf("r0: %s = %v (present %v), want %v (the store's)", k, got, ok, v)
		}
	}
	if _, ok := first["solocron.job.last_success_timestamp{job=bad}"]; ok {
		t.Error("r0 exports a last success for bad, which never succeeded")
	}
	if v, ok := first["solocron.job.next_run_timestamp{job=idle}"]; !ok || v <= float64(time.Now().Unix()) || v > float64(time.Now().Add(time.Hour).Unix()) {
		t.Errorf("r0: next run of idle at %v, want within the coming hour", v)
	}
	for _, o := range []string{"missed", "lease_lost"} {
		if _, ok := first["solocron.runs{job=idle,outcome="+o+"}"]; !ok {
			t.Errorf("r0: solocron.runs{job=idle,outcome=%s} not initialised at 0", o)
		}
	}
	for i, r := range reps {
		g := gauges(t, r.reader)
		for k, v := range first {
			if !strings.HasPrefix(k, "solocron.job.") || strings.HasPrefix(k, "solocron.job.next_run") {
				continue
			}
			if g[k] != v {
				t.Errorf("r%d: %s = %v, r0 shows %v", i, k, g[k], v)
			}
		}
		info := fmt.Sprintf("solocron.replica.info{replica=r%d,table=%s,version=v-test}", i, TableFingerprint(quiet))
		if g[info] != 1 {
			t.Errorf("r%d: no %s", i, info)
		}
	}

	cancel()
	wg.Wait()

	// What they sent: one sync call per heartbeat at most (the table is
	// one batch), one read of the changed jobs per heartbeat, in the
	// heartbeat's existing round trip, and no job's key read outside a
	// script.
	beats := int64(time.Since(start)/beat) + 2
	for i, r := range reps {
		if n := r.count.syncs.Load(); n > beats {
			t.Errorf("r%d: %d sync calls in %d heartbeats", i, n, beats)
		}
		if n := r.count.changedReads.Load(); n > beats || n < beats/2 {
			t.Errorf("r%d: %d reads of the changed jobs in %d heartbeats", i, n, beats)
		}
		if n := r.count.direct.Load(); n != 0 {
			t.Errorf("r%d: %d commands read a job's keys outside a script", i, n)
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

func TestJobGaugesAgreeMiniredis(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m, _ := redistest.MiniPipe(t)
		agreeingReplicas(t, func() []*redis.Client { return []*redis.Client{redistest.PipeClient(t, m)} }, time.Second, 500*time.Millisecond, 20*time.Second)
	})
}

func TestJobGaugesAgreeRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real redis-server: not in -short")
	}
	testkit.Long(t) // 15 s of real time; TestJobGaugesAgreeMiniredis runs by default
	srv := redistest.Start(t)
	agreeingReplicas(t, func() []*redis.Client { return []*redis.Client{srv.Client(t, nil)} }, 500*time.Millisecond, 2*time.Second, 15*time.Second)
}

// The same with three Redlock replicas on three masters.
func TestJobGaugesAgreeRedlock(t *testing.T) {
	t.Parallel()
	testkit.Long(t) // TestJobGaugesAgreeMiniredis runs by default
	synctest.Test(t, func(t *testing.T) {
		var ms []*miniredis.Miniredis
		for range 3 {
			m, _ := redistest.MiniPipe(t)
			ms = append(ms, m)
		}
		agreeingReplicas(t, func() []*redis.Client {
			var cs []*redis.Client
			for _, m := range ms {
				cs = append(cs, redistest.PipeClient(t, m))
			}
			return cs
		}, time.Second, 500*time.Millisecond, 20*time.Second)
	})
}

// The store keeps a job's last success, last run per outcome and failure
// streak, written by the calls that close or decide runs (a close is still
// one round trip) and returned by the heartbeat's sync.
func TestStoreKeepsJobStats(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	s, c := benchStore(t)
	cnt := &counter{}
	c.AddHook(cnt)
	ctx := context.Background()
	j := testJob(t, s, "streak", "@every 1s", func(j *Job) { j.Lease = time.Second })
	seed(t, c, j)
	base := time.Now().Truncate(time.Second).Add(-6 * time.Second)
	n := 0
	claim := func(kind store.RunKind) claimReq {
		t.Helper()
		n++
		r := claimOf(j, base.Add(time.Duration(n)*time.Second), kind, fmt.Sprintf("o%d", n))
		res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(r))
		if err != nil || (kind != 'x' && res[0].Status != "started") {
			t.Fatalf("claim %d: %+v, %v", n, res, err)
		}
		return r
	}
	end := func(r claimReq, o Outcome) {
		t.Helper()
		before := cnt.trips.Load()
		res, err := s.Complete(ctx, []store.CompleteReq{{R: &r.StoreClaim, Replica: "r1", Outcome: o, Attempts: 1}})
		if err != nil || res[0] != "ok" {
			t.Fatalf("complete %s: %v, %v", o, res, err)
		}
		if trips := cnt.trips.Load() - before; trips != 1 {
			t.Errorf("closing a run took %d round trips, want 1", trips)
		}
	}
	stats := func() store.JobStats {
		t.Helper()
		res, err := s.Sync(ctx, "r1", 2*time.Second, time.Minute, []store.SyncReq{{Job: j.spec, Known: "e0"}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Stats
	}
	at := func(st store.JobStats, o Outcome) time.Time {
		for i, so := range store.StatOutcomes {
			if so == o {
				return st.LastRun[i]
			}
		}
		return time.Time{}
	}

	end(claim('s'), Failed)
	st := stats()
	if st.Fails != 1 || at(st, Failed).IsZero() || !st.LastSuccess.IsZero() {
		t.Fatalf("after a failure: %+v", st)
	}
	claim('s') // never closed by its holder: reaped lease_lost
	time.Sleep(1500 * time.Millisecond)
	if st = stats(); st.Fails != 2 || at(st, LeaseLost).IsZero() {
		t.Fatalf("after a lost lease: %+v", st)
	}
	end(claim('s'), TimedOut)
	// A run past its deadline recorded missed: the streak stays.
	miss := claimOf(j, time.Now().Truncate(time.Second).Add(-12*time.Second), 'x', "ox")
	if res, err := s.Claim(ctx, "r1", 2*time.Second, 3*time.Second, storeClaims(miss)); err != nil || res[0].Status != store.Answer(Missed) {
		t.Fatalf("missed claim: %+v, %v", res, err)
	}
	if st = stats(); st.Fails != 3 || at(st, TimedOut).IsZero() || at(st, Missed).IsZero() {
		t.Fatalf("after a timeout and a miss: %+v", st)
	}
	end(claim('s'), Succeeded)
	st = stats()
	if st.Fails != 0 || st.LastSuccess.IsZero() || !st.LastSuccess.Equal(at(st, Succeeded)) {
		t.Fatalf("after a success: %+v", st)
	}
	if d := time.Since(st.LastSuccess); d < 0 || d > 5*time.Second {
		t.Errorf("last success %v ago", d)
	}

	// A run the cluster closed lease_lost whose holder never started it
	// (its claim answered after its lease): missed, not a failure.
	late := claim('s')
	time.Sleep(1500 * time.Millisecond)
	if st = stats(); st.Fails != 1 || at(st, LeaseLost).IsZero() {
		t.Fatalf("after a lost lease: %+v", st)
	}
	missedAt := at(st, Missed)
	res, err := s.Complete(ctx, []store.CompleteReq{{R: &late.StoreClaim, Replica: "r1", Outcome: Missed, ErrText: "never started"}})
	if err != nil || res[0] != "closed" {
		t.Fatalf("holder's close: %v, %v", res, err)
	}
	if st = stats(); st.Fails != 0 || !at(st, LeaseLost).IsZero() || !at(st, Missed).After(missedAt) {
		t.Errorf("after the holder said it never started: %+v", st)
	}
	// A run an operator cancelled: its time is the last cancelled run's.
	end(claim('s'), Cancelled)
	if st = stats(); at(st, Cancelled).IsZero() {
		t.Errorf("after a cancelled run: %+v", st)
	}
}

// nominalPeriod: @every is its period; a cron spec's longest gap.
func TestNominalPeriod(t *testing.T) {
	s, _ := redistest.Mini(t)
	st, err := store.NewRedis(redis.NewClient(&redis.Options{Addr: s.Addr()}), store.BackendConfig{Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) // a Wednesday
	for spec, want := range map[string]time.Duration{
		"@every 90s":     90 * time.Second,
		"*/5 * * * *":    5 * time.Minute,
		"0 9 * * 1-5":    72 * time.Hour, // Friday to Monday
		"0 0 1 * *":      31 * 24 * time.Hour,
		"30 2 29 2 *":    0, // once in the coming year: no gap
		"0 9-17 * * 1-5": 64 * time.Hour,
	} {
		j := testJob(t, st, "p", spec, nil)
		if got := nominalPeriod(j, from); got != want {
			t.Errorf("%s: %v, want %v", spec, got, want)
		}
	}
}

// ParseStats never panics on a malformed answer and reads only what it
// can.
func TestParseStats(t *testing.T) {
	for _, s := range []string{"", "|", "||", "x|y|z", "-5|-1|succeeded=-1", "1|2|missed", "1|2|=,=3,failed=abc"} {
		st := store.ParseStats(s)
		if st.Latest() != (time.Time{}) {
			t.Errorf("%q: %+v", s, st)
		}
	}
	if st := store.ParseStats("x|y|z"); !st.LastSuccess.IsZero() || st.Fails != 0 {
		t.Errorf("x|y|z: %+v", st)
	}
	st := store.ParseStats("1000|4|failed=2000,succeeded=1000,bogus=5")
	if st.Fails != 4 || !st.LastSuccess.Equal(time.UnixMilli(1000)) || !st.Latest().Equal(time.UnixMilli(2000)) {
		t.Errorf("%+v", st)
	}
	// Every end of a run has its last time, cancelled (by an operator)
	// included: solocron_job_last_run_timestamp_seconds{outcome="cancelled"}.
	for _, o := range []Outcome{Succeeded, Failed, TimedOut, LeaseLost, Interrupted, Replaced, Cancelled} {
		st := store.ParseStats("0|0|" + string(o) + "=3000")
		i := slices.Index(store.StatOutcomes[:], o)
		if i < 0 || !st.LastRun[i].Equal(time.UnixMilli(3000)) {
			t.Errorf("%s=3000: not kept as the last %s run: %+v", o, o, st)
		}
	}
}

// A stopped replica exports no job gauges and no replica_info.
func TestJobGaugesEndWithRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		reader, stop := meteredReplica(t, c, Job{Name: "j", Schedule: "@every 1h"})
		time.Sleep(3 * time.Second)
		if g := gauges(t, reader); g["solocron.job.paused{job=j}"] != 0 || len(g) < 5 {
			t.Fatalf("running: %v", g)
		} else if _, ok := g["solocron.job.paused{job=j}"]; !ok {
			t.Fatalf("running: no paused gauge: %v", g)
		}
		stop()
		for k := range gauges(t, reader) {
			if strings.HasPrefix(k, "solocron.job.") || strings.HasPrefix(k, "solocron.replica.") {
				t.Errorf("after Run returned: %s", k)
			}
		}
	})
}

// Redlock: the latest time of each kind, the median failure streak.
func TestMergeStats(t *testing.T) {
	ms := func(n int64) time.Time { return time.UnixMilli(n) }
	a := store.JobStats{LastSuccess: ms(10), Fails: 5}
	a.LastRun[1] = ms(50)
	b := store.JobStats{LastSuccess: ms(30), Fails: 2}
	b.LastRun[1] = ms(40)
	c := store.JobStats{Fails: 4}
	got := store.MergeStats([]store.JobStats{a, b, c})
	if !got.LastSuccess.Equal(ms(30)) || !got.LastRun[1].Equal(ms(50)) || got.Fails != 4 {
		t.Errorf("%+v", got)
	}
	if got := store.MergeStats([]store.JobStats{a, b}); got.Fails != 5 {
		t.Errorf("two masters: fails %d, want the higher (5)", got.Fails)
	}
	if got := store.MergeStats(nil); got != (store.JobStats{}) {
		t.Errorf("none: %+v", got)
	}
}

// The per-job gauges follow the replica's table: a job paused: true in the
// table reads paused 1 (the alert rules leave it alone, as they do a job
// paused cluster-wide), and a job a reload removes leaves the gauges (and
// so the dashboard's job list) at the next collection.
func TestJobGaugesFollowTable(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		reader := sdkmetric.NewManualReader()
		ok := jobs.Func(func(context.Context) error { return nil })
		table := []Job{
			{Name: "held", Schedule: "@every 1h", Handler: ok, Paused: true},
			{Name: "gone", Schedule: "@every 1h", Handler: ok},
		}
		s, err := New(redisStore(t, c), table, WithReplicaID("r"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(3 * time.Second)
		g := gauges(t, reader)
		if v, ok := g["solocron.job.paused{job=held}"]; !ok || v != 1 {
			t.Errorf("a job paused: true in the table: paused gauge %v (present %v), want 1", v, ok)
		}
		if v := g["solocron.job.paused{job=gone}"]; v != 0 {
			t.Errorf("a running job: paused gauge %v, want 0", v)
		}
		if err := s.Reload(table[:1]); err != nil {
			t.Fatal(err)
		}
		for k := range gauges(t, reader) {
			if strings.HasPrefix(k, "solocron.job.") && strings.Contains(k, "job=gone") {
				t.Errorf("after the reload that removed job gone: %s", k)
			}
		}
	})
}

// The interval gauge's first collection walks each schedule once, not each
// job: a table of jobs every second cost that collection a walk of
// periodCap instants per job (~12 s of CPU for 10,000 jobs).
func TestIntervalGaugeWalksEachScheduleOnce(t *testing.T) {
	_, c := redistest.Mini(t)
	run := jobs.Func(func(context.Context) error { return nil })
	var table []Job
	for i := range 200 {
		table = append(table, Job{Name: fmt.Sprintf("sec%d", i), Schedule: "* * * * * *", Handler: run})
	}
	table = append(table, Job{Name: "weekdays", Schedule: "0 0 9 * * 1-5", Handler: run},
		Job{Name: "weekdays-ny", Schedule: "0 0 9 * * 1-5", Timezone: "America/New_York", Handler: run},
		Job{Name: "every", Schedule: "@every 90s", Handler: run})
	reader := sdkmetric.NewManualReader()
	_, err := New(redisStore(t, c), table, WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	before := periodWalks.Load()
	g := gauges(t, reader)
	// One walk per cron schedule and zone: "* * * * * *", and the weekdays
	// spec in two zones.
	if n := periodWalks.Load() - before; n != 3 {
		t.Errorf("the first collection walked %d schedules, want 3", n)
	}
	// weekdays-ny: 73 h, a Friday to Monday across the coming fall back.
	for job, want := range map[string]float64{"sec0": 1, "sec199": 1, "weekdays": 3 * 86400, "weekdays-ny": 73 * 3600, "every": 90} {
		if got := g["solocron.job.interval{job="+job+"}"]; got != want {
			t.Errorf("interval of %s: %v, want %v", job, got, want)
		}
	}
	// Later collections walk nothing.
	before = periodWalks.Load()
	gauges(t, reader)
	if n := periodWalks.Load() - before; n != 0 {
		t.Errorf("a later collection walked %d schedules", n)
	}
}

// solocron.store.up says whether the replica reaches Redis while an outage
// lasts (the alert SolocronStoreUnreachable reads it), and comes back to 1
// once Redis answers again: no alert stays firing after the recovery.
func TestStoreUpGaugeFollowsTheStore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m, c := redistest.MiniPipe(t)
		reader, stop := meteredReplica(t, c, Job{Name: "j", Schedule: "@every 1h"})
		defer stop()
		const key = "solocron.store.up{replica=r}"
		time.Sleep(3 * time.Second)
		if v, ok := gauges(t, reader)[key]; !ok || v != 1 {
			t.Fatalf("Redis answering: %s = %v (present %v), want 1", key, v, ok)
		}
		m.SetError("LOADING the store is down")
		time.Sleep(30 * time.Second)
		if v, ok := gauges(t, reader)[key]; !ok || v != 0 {
			t.Errorf("Redis refusing every command for 30s: %s = %v (present %v), want 0", key, v, ok)
		}
		m.SetError("")
		time.Sleep(10 * time.Second)
		if v := gauges(t, reader)[key]; v != 1 {
			t.Errorf("Redis answering again: %s = %v, want 1", key, v)
		}
	})
}

// A replica that cannot reach the store stops exporting the job state it
// read from it (paused, the failure streak, the last runs): those values
// grow stale while the others' move on, and the rules take the max over
// the replicas, so a partitioned replica's old streak kept
// SolocronJobFailing firing for a job that had succeeded since. The
// table's own gauges stay; the job state is back at the first heartbeat
// Redis answers.
func TestJobStateGaugesHiddenWhileStoreDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m, c := redistest.MiniPipe(t)
		reader, stop := meteredReplica(t, c, Job{Name: "j", Schedule: "@every 1s"})
		defer stop()
		fromStore := []string{"solocron.job.paused{job=j}", "solocron.job.consecutive_failures{job=j}",
			"solocron.job.last_success_timestamp{job=j}", "solocron.job.last_run_timestamp{job=j,outcome=succeeded}"}
		fromTable := []string{"solocron.job.interval{job=j}", "solocron.job.starting_deadline{job=j}",
			"solocron.job.pause_after_failures{job=j}", "solocron.job.next_run_timestamp{job=j}"}
		time.Sleep(5 * time.Second)
		g := gauges(t, reader)
		for _, k := range append(fromStore, fromTable...) {
			if _, ok := g[k]; !ok {
				t.Fatalf("Redis answering: no %s in %v", k, g)
			}
		}
		m.SetError("LOADING the store is down")
		time.Sleep(30 * time.Second)
		g = gauges(t, reader)
		if g["solocron.store.up{replica=r}"] != 0 {
			t.Fatalf("Redis refusing every command for 30s: store.up %v, want 0", g["solocron.store.up{replica=r}"])
		}
		for _, k := range fromStore {
			if v, ok := g[k]; ok {
				t.Errorf("Redis down for 30s: %s = %v exported, from a store the replica cannot read", k, v)
			}
		}
		for _, k := range fromTable {
			if _, ok := g[k]; !ok {
				t.Errorf("Redis down for 30s: no %s (from the table, not the store)", k)
			}
		}
		m.SetError("")
		time.Sleep(10 * time.Second)
		g = gauges(t, reader)
		for _, k := range fromStore {
			if _, ok := g[k]; !ok {
				t.Errorf("Redis answering again: no %s", k)
			}
		}
	})
}

// solocron.notifications starts at 0 for each target, event and result
// from the replica's start: increase() cannot see a counter's first
// event, so a receiver down from the start would page only after its
// next retry, minutes later (SolocronNotificationsFailing).
func TestNotificationCountersStartAtZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		tg := notify.Target{Name: "ops", URL: "http://127.0.0.1:1/hook", On: []notify.Event{notify.Failed, notify.Missed}}
		reader, stop := meteredReplica(t, c, Job{Name: "j", Schedule: "@every 1h", Notify: []string{"ops"}}, WithNotifications(tg))
		defer stop()
		time.Sleep(3 * time.Second)
		g := gauges(t, reader)
		for _, ev := range []string{"failed", "missed"} {
			for _, res := range []string{"delivered", "failed", "gave_up"} {
				k := "solocron.notifications{event=" + ev + ",notification=ops,result=" + res + "}"
				if v, ok := g[k]; !ok || v != 0 {
					t.Errorf("%s = %v (present %v), want 0 before any event", k, v, ok)
				}
			}
		}
		k := "solocron.notifications{event=,notification=,result=queue_full}"
		if v, ok := g[k]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0 before any event", k, v, ok)
		}
	})
}

// meteredReplica runs replica "r" with job j (a handler that does nothing)
// on c, its metrics read by the returned reader, until stop (which waits
// for Run to return).
func meteredReplica(t *testing.T, c redis.UniversalClient, j Job, opts ...Option) (reader *sdkmetric.ManualReader, stop func()) {
	t.Helper()
	reader = sdkmetric.NewManualReader()
	j.Handler = jobs.Func(func(context.Context) error { return nil })
	opts = append([]Option{WithReplicaID("r"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}, opts...)
	s, err := New(redisStore(t, c), []Job{j}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	return reader, func() { cancel(); <-done }
}

// The replica's counters start at 0 for every series they can have, from
// the replica's start (every outcome and claim result of each job of the
// table, every renewal result), as the notification counters do: a user's
// increase(solocron_runs_total{outcome="failed"}[5m]) > 0 would not see a
// job's first failure, nor a rate() alert on renewals the first error.
func TestCountersStartAtZero(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		reader, stop := meteredReplica(t, c, Job{Name: "j", Schedule: "@every 1h", Offset: 30 * time.Minute})
		defer stop()
		time.Sleep(3 * time.Second)
		g := gauges(t, reader)
		var want []string
		for _, o := range []Outcome{Started, Succeeded, Failed, TimedOut, LeaseLost, Missed, Interrupted} {
			want = append(want, "solocron.runs{job=j,outcome="+string(o)+"}")
		}
		for _, r := range []string{claimWon, claimRefused, claimError} {
			want = append(want, "solocron.claims{job=j,result="+r+"}")
		}
		for _, r := range []string{renewOK, renewFailed, renewLostCode, renewReplaced, renewCancel} {
			want = append(want, "solocron.lease.renewals{result="+r+"}")
		}
		want = append(want, "solocron.lease.lost{job=j}")
		for _, k := range want {
			if v, ok := g[k]; !ok || v != 0 {
				t.Errorf("%s = %v (present %v), want 0 before any event", k, v, ok)
			}
		}
	})
}
