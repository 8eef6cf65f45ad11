package scheduler_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func registryTable(schedule string) []scheduler.Job {
	noop := jobs.Func(func(context.Context) error { return nil })
	return []scheduler.Job{
		{Name: "report", Schedule: schedule, Handler: noop},
		{Name: "sweep", Schedule: "@every 1h", Handler: noop},
	}
}

// Three replicas register in the embedded-store default (miniredis); the
// one with a different table is flagged, says so in its log, and a replica
// that stops leaves the registry.
func TestReplicaRegistry(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	ctl := schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})).Control()
	f := newFleet(t)
	var logs testkit.SyncBuffer
	reader := sdkmetric.NewManualReader()
	stops := map[string]func(){}
	for _, r := range []struct{ id, sched string }{{"a", "@every 1m"}, {"b", "@every 1m"}, {"c", "@every 2m"}} {
		logger := quiet
		if r.id == "c" {
			logger = slog.New(slog.NewTextHandler(&logs, nil))
		}
		opts := []scheduler.Option{scheduler.WithReplicaID(r.id), scheduler.WithLogger(logger), scheduler.WithVersion("v1.2.3-" + r.id),
			scheduler.WithSyncInterval(100 * time.Millisecond)}
		if r.id == "c" {
			opts = append(opts, scheduler.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
		}
		s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), registryTable(r.sched), opts...)
		if err != nil {
			t.Fatal(err)
		}
		stops[r.id] = f.run(s)
	}
	var live []scheduler.Replica
	var err error
	testkit.WaitFor(t, 10*time.Second, "three replicas registered", func() bool {
		live, err = ctl.Replicas(t.Context())
		return err == nil && len(live) == 3
	})
	for i, r := range live {
		if want := string(rune('a' + i)); r.ID != want {
			t.Fatalf("replica %d is %q, want %q (sorted by id)", i, r.ID, want)
		}
		if r.Version != "v1.2.3-"+r.ID || r.Jobs != 2 || len(r.Table) != 12 || r.Started.IsZero() {
			t.Errorf("replica %s: %+v", r.ID, r)
		}
		if r.HeartbeatAge < 0 || r.HeartbeatAge > 5*time.Second {
			t.Errorf("replica %s: heartbeat age %s", r.ID, r.HeartbeatAge)
		}
		if r.ClockOffset > time.Second || r.ClockOffset < -time.Second {
			t.Errorf("replica %s: clock offset %s against a local Redis", r.ID, r.ClockOffset)
		}
		if want := r.ID == "c"; r.TableDiffers != want {
			t.Errorf("replica %s: table_differs %v, want %v", r.ID, r.TableDiffers, want)
		}
	}
	if live[0].Table != live[1].Table || live[0].Table == live[2].Table {
		t.Errorf("fingerprints: %s %s %s", live[0].Table, live[1].Table, live[2].Table)
	}
	testkit.WaitFor(t, 10*time.Second, "replica c's warning", func() bool {
		return strings.Contains(logs.String(), "level=WARN msg=\"live replicas run a different job table")
	})
	if got := mismatchGauge(t, reader); got != 1 {
		t.Errorf("solocron.replica.table_mismatch on c = %d, want 1", got)
	}
	stops["c"]()
	live, err = ctl.Replicas(t.Context())
	if err != nil || len(live) != 2 || live[0].TableDiffers || live[1].TableDiffers {
		t.Fatalf("after c left: %+v, %v", live, err)
	}
}

func mismatchGauge(t *testing.T, r *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "solocron.replica.table_mismatch" && len(g.DataPoints) == 1 {
				return g.DataPoints[0].Value
			}
		}
	}
	t.Fatal("no solocron.replica.table_mismatch gauge")
	return -1
}

// A replica that dies without leaving drops out after its TTL, and the
// registry's keys expire with the last replica: bounded memory.
func TestReplicaRegistryExpires(t *testing.T) {
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	ctl := schedtest.RedisStore(t, rdb).Control()
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), registryTable("@every 1m"), scheduler.WithReplicaID("gone"),
		scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	stop := newFleet(t).run(s)
	testkit.WaitFor(t, 10*time.Second, "registered", func() bool {
		live, _ := ctl.Replicas(t.Context())
		return len(live) == 1
	})
	srv.SetError("LOADING") // the replica cannot leave: as if it died
	stop()
	srv.SetError("")
	if n := len(srv.Keys()); n == 0 {
		t.Fatal("no keys before the TTL")
	}
	// The TTL is max(5 sync intervals, 10s): on Redis' clock (TIME) and
	// for its keys.
	srv.SetTime(time.Now().Add(11 * time.Second))
	srv.FastForward(11 * time.Second)
	live, err := ctl.Replicas(t.Context())
	if err != nil || len(live) != 0 {
		t.Fatalf("after the TTL: %+v, %v", live, err)
	}
	for _, k := range srv.Keys() {
		if strings.Contains(k, "{replicas}") {
			t.Errorf("key %s outlived the last replica", k)
		}
	}
}

// The fingerprint does not depend on the order of the jobs, and does on
// what a job runs, but not on values that may hold secrets.
func TestTableFingerprint(t *testing.T) {
	cmd := func(env string) scheduler.Job {
		return scheduler.Job{Name: "c", Schedule: "@hourly", Handler: &jobs.Command{Args: []string{"backup"}, Env: map[string]string{"TOKEN": env}}}
	}
	a := append(registryTable("@every 1m"), cmd("one"))
	b := []scheduler.Job{a[2], a[1], a[0]}
	if scheduler.TableFingerprint(a) != scheduler.TableFingerprint(b) {
		t.Error("order changes the fingerprint")
	}
	c := append(registryTable("@every 1m"), cmd("two"))
	if scheduler.TableFingerprint(a) != scheduler.TableFingerprint(c) {
		t.Error("an environment value changes the fingerprint")
	}
	d := append(registryTable("@every 1m"), scheduler.Job{Name: "c", Schedule: "@hourly", Handler: &jobs.Command{Args: []string{"restore"}}})
	if scheduler.TableFingerprint(a) == scheduler.TableFingerprint(d) {
		t.Error("the command does not change the fingerprint")
	}
	if scheduler.TableFingerprint(registryTable("@every 1m")) == scheduler.TableFingerprint(registryTable("@every 2m")) {
		t.Error("the schedule does not change the fingerprint")
	}
}

// Reading (and writing) the registry is one round trip once the script is
// loaded: the replica's heartbeat sends the same script call.
func TestReplicaRegistryOneRoundTrip(t *testing.T) {
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	var n testkit.CommandCounter
	rdb.AddHook(&n)
	ctl := schedtest.RedisStore(t, rdb).Control()
	if _, err := ctl.Replicas(t.Context()); err != nil { // EVALSHA, NOSCRIPT, EVAL
		t.Fatal(err)
	}
	before := n.Load()
	if _, err := ctl.Replicas(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := n.Load() - before; got != 1 {
		t.Errorf("listing the registry sent %d commands, want 1", got)
	}
}
