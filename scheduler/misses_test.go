package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
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
	t.Parallel() // real time, little CPU (main_test.go)
	for _, trigger := range []bool{false, true} {
		name := "replicas first"
		if trigger {
			name = "trigger first"
		}
		t.Run(name, func(t *testing.T) {
			if trigger {
				testkit.Long(t) // ~7 s of real time; "replicas first" runs by default
			}
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

// Every replica down for a minute (Redis keeps its data): the first replica
// back records each instant due meanwhile missed, saying no replica was up,
// and runs none of them (catch-up is opt-in); the instant due as it starts
// runs. With a catch-up window, the instant catch-up runs is not also
// recorded missed.
func TestOutageRecordedMissed(t *testing.T) {
	t.Parallel()
	for _, window := range []time.Duration{0, 30 * time.Second} {
		t.Run(fmt.Sprintf("catchup_window=%v", window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t)
				table := []scheduler.Job{{Name: "tick", Schedule: "@every 5s", Handler: c.ledger.Job(nil),
					CatchupWindow: window, Catchup: scheduler.CatchupLatest}}
				_, stop := c.replica("a", table)
				time.Sleep(12 * time.Second) // runs at 5s and 10s
				stop()
				time.Sleep(60 * time.Second) // nobody up from 12s to 72s
				c.replica("b", table)
				time.Sleep(5 * time.Second)
				c.stop()
				if d := c.ledger.Duplicates(); len(d) > 0 {
					t.Errorf("runs started twice: %v", d)
				}
				recs := map[string]scheduler.Run{}
				for _, r := range c.history("tick") {
					recs[r.ID] = r
				}
				starts := c.ledger.Starts()
				at := func(s int64) string { return id("tick", time.Unix(946684800+s, 0)) }
				// 15s..65s were due while nobody was up; 70s is the
				// instant due when b starts (within its deadline): it runs.
				var missed, ran int
				for s := int64(15); s <= 65; s += 5 {
					r, ok := recs[at(s)]
					switch {
					case starts[at(s)] > 0:
						ran++
						if window == 0 {
							t.Errorf("%s ran after the outage without a catch-up window", at(s))
						}
					case !ok || r.Outcome != scheduler.Missed:
						t.Errorf("%s: record %+v, want missed", at(s), r)
					case !strings.Contains(r.Error, "no replica was up"):
						t.Errorf("%s missed with %q, want it to say no replica was up", at(s), r.Error)
					default:
						missed++
					}
				}
				wantRan := 0
				if window > 0 {
					wantRan = 1 // the latest instant inside the window
				}
				if ran != wantRan || missed != 11-wantRan {
					t.Errorf("of the 11 instants due while nobody was up: %d ran, %d recorded missed; want %d and %d", ran, missed, wantRan, 11-wantRan)
				}
				if starts[at(70)] != 1 {
					t.Errorf("the instant due as the replica started did not run: %v", starts)
				}
			})
		})
	}
}
