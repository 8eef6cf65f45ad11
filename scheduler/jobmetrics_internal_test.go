package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
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
			if len(a) > 1 && (a[1] == syncScript.Hash()) {
				c.syncs.Add(1)
			}
		case "zrangebyscore":
			if len(a) > 1 && strings.HasSuffix(fmt.Sprint(a[1]), ":{changed}") {
				c.changedReads.Add(1)
			}
		case "hget", "hmget", "hgetall", "lrange", "zrange":
			c.direct.Add(1)
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
func agreeingReplicas(t *testing.T, newClient func() *redis.Client, beat time.Duration, window time.Duration) {
	ctx := context.Background()
	probe := newClient()
	table := []Job{
		{Name: "bad", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return errors.New("boom") })},
		{Name: "good", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil })},
		{Name: "idle", Schedule: "@every 1h", StartingDeadline: 7 * time.Second, Handler: jobs.Func(func(context.Context) error { return nil })},
	}
	for _, j := range table {
		if err := probe.HSetNX(ctx, "solocron:{"+j.Name+"}:meta", "epoch", "established").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := probe.HSet(ctx, "solocron:{idle}:meta", "paused", "1").Err(); err != nil {
		t.Fatal(err)
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
		c := newClient()
		cnt := &counter{}
		c.AddHook(cnt)
		s, err := New(c, table, WithReplicaID(fmt.Sprintf("r%d", i)), WithVersion("v-test"),
			WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithSyncInterval(beat),
			WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, replica{reader, cnt, s})
		wg.Go(func() { _ = s.Run(runCtx) })
	}

	// The store's failure streak of "bad", sampled over time.
	type sample struct {
		at    time.Time
		fails int64
	}
	var store []sample
	lag := 2*beat + beat/2 // two heartbeats, and half of one for the reading
	start := time.Now()
	var checked int
	for time.Since(start) < window {
		n, err := probe.HGet(ctx, "solocron:{bad}:meta", "fails").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		now := time.Now()
		store = append(store, sample{now, n})
		// What the store held lag ago, every replica shows by now.
		var want int64 = -1
		for _, s := range store {
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
	if store[len(store)-1].fails < 3 {
		t.Fatalf("bad failed only %d times in a row: the test did not exercise the gauges", store[len(store)-1].fails)
	}

	meta := func(job string) map[string]string {
		m, err := probe.HGetAll(ctx, "solocron:{"+job+"}:meta").Result()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	secs := func(ms string) float64 {
		n, _ := strconv.ParseInt(ms, 10, 64)
		return float64(n) / 1000
	}
	num := func(s string) float64 {
		n, _ := strconv.ParseFloat(s, 64)
		return n
	}
	bad, good := meta("bad"), meta("good")
	first := gauges(t, reps[0].reader)
	want := map[string]float64{
		"solocron.job.consecutive_failures{job=bad}":                  num(bad["fails"]),
		"solocron.job.consecutive_failures{job=good}":                 0,
		"solocron.job.last_run_timestamp{job=bad,outcome=failed}":     secs(bad["at:failed"]),
		"solocron.job.last_success_timestamp{job=good}":               secs(good["ok"]),
		"solocron.job.last_run_timestamp{job=good,outcome=succeeded}": secs(good["at:succeeded"]),
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
		info := fmt.Sprintf("solocron.replica.info{replica=r%d,table=%s,version=v-test}", i, tableFingerprint(quiet))
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
	synctest.Test(t, func(t *testing.T) {
		m, _ := redistest.MiniPipe(t)
		agreeingReplicas(t, func() *redis.Client { return redistest.PipeClient(t, m) }, time.Second, 20*time.Second)
	})
}

func TestJobGaugesAgreeRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("real redis-server: not in -short")
	}
	srv := redistest.Start(t)
	agreeingReplicas(t, func() *redis.Client {
		return srv.Client(t, nil)
	}, 500*time.Millisecond, 12*time.Second)
}
