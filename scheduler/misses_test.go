package scheduler_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// runsCounted sums solocron.runs{outcome} as reader collects it.
func runsCounted(t *testing.T, reader *sdkmetric.ManualReader, outcome scheduler.Outcome) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			d, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != "solocron.runs" {
				continue
			}
			for _, p := range d.DataPoints {
				if v, _ := p.Attributes.Value("outcome"); v.AsString() == string(outcome) {
					n += p.Value
				}
			}
		}
	}
	return n
}

// A brand-new cluster of three replicas on a store that holds nothing of
// its job (a real Redis, not one that began with the process) reports no
// miss: the instants before the job's state existed were never its to run.
// No missed record (console, history), no missed run counted (metrics), no
// last-missed time (the alert rules' gauge), no notification. The same when
// a manual trigger creates the job's state before any replica's first
// heartbeat (the admin API right after start).
func TestNewClusterReportsNoMiss(t *testing.T) {
	for _, trigger := range []bool{false, true} {
		name := "replicas first"
		if trigger {
			name = "trigger first"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			rcv := newReceiver(t)
			f := newFleet(t)
			f.ctl = schedtest.RedisStore(t, srv.Client(t, nil)).Control()
			table := []scheduler.Job{{Name: "tick", Schedule: "@every 1s", Handler: f.ledger.Job(nil), Notify: []string{"ops"}}}
			if trigger {
				if _, err := f.ctl.Trigger(t.Context(), "tick"); err != nil {
					t.Fatal(err)
				}
			}
			var readers []*sdkmetric.ManualReader
			for _, id := range []string{"a", "b", "c"} {
				reader := sdkmetric.NewManualReader()
				readers = append(readers, reader)
				s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithReplicaID(id),
					scheduler.WithLogger(quiet), scheduler.WithSyncInterval(200*time.Millisecond),
					scheduler.WithNotifications(rcv.target(notify.Missed)),
					scheduler.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
				if err != nil {
					t.Fatal(err)
				}
				f.run(s)
			}
			// Past the floor (max skew + claim ahead, 2.5 s) and a few runs.
			testkit.WaitFor(t, 30*time.Second, "three scheduled runs", func() bool {
				n := 0
				for _, r := range f.history("tick") {
					if r.Kind == scheduler.KindScheduled && r.Decision == scheduler.Started {
						n++
					}
				}
				return n >= 3
			})
			// Several notification polls for a miss to be delivered.
			time.Sleep(time.Second)
			f.stop()
			for _, r := range f.history("tick") {
				if r.Outcome == scheduler.Missed || r.Decision == scheduler.Missed {
					t.Errorf("run %s recorded missed on a new cluster: %s", r.ID, r.Error)
				}
			}
			if ok, err := srv.Client(t, nil).HExists(t.Context(), "solocron:{tick}:meta", "at:missed").Result(); err != nil || ok {
				t.Errorf("the job's last-missed time (solocron_job_last_run_timestamp_seconds{outcome=\"missed\"}) is set: %v, %v", ok, err)
			}
			for i, reader := range readers {
				if n := runsCounted(t, reader, scheduler.Missed); n != 0 {
					t.Errorf("replica %d counted %d missed runs", i, n)
				}
			}
			for _, p := range rcv.posts() {
				t.Errorf("notification %s on a new cluster", p.delivery)
			}
		})
	}
}
