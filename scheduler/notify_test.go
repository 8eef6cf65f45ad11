package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

const hookSecret = "hook-secret-4711"

// post is one notification a receiver got.
type post struct {
	delivery, event string
	sigOK           bool
	body            scheduler.Notification
	at              time.Time
}

// receiver is a webhook endpoint that records what it gets; it answers 500
// to the first fail requests, and to every request while down is set.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []post
	fail atomic.Int32
	down atomic.Bool
	hits atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		body, _ := io.ReadAll(req.Body)
		if r.down.Load() || r.fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var n scheduler.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, post{delivery: req.Header.Get(notify.HeaderDelivery), event: req.Header.Get(notify.HeaderEvent),
			sigOK: notify.Verify(hookSecret, body, req.Header.Get(notify.HeaderSignature)), body: n, at: time.Now()})
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) posts() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.got...)
}

// byDelivery counts the posts per Solocron-Delivery key.
func (r *receiver) byDelivery() map[string]int {
	n := map[string]int{}
	for _, p := range r.posts() {
		n[p.delivery]++
	}
	return n
}

// target posts to the receiver. Its timeout is long for a loopback POST:
// the tests count deliveries exactly, and a POST the receiver took but
// answered after the timeout (a test binary starved of CPU, its tests run
// in parallel) is posted again, as the product promises (at least once).
func (r *receiver) target(on ...notify.Event) notify.Target {
	return notify.Target{Name: "ops", URL: r.srv.URL + "/hook", On: on, Secret: hookSecret,
		Headers: map[string]string{"X-Team": "payments"}, Timeout: 5 * time.Second}
}

// flaky fails its first n runs (across replicas), then succeeds.
func flaky(n int32) jobs.Func {
	var runs atomic.Int32
	return func(context.Context) error {
		if runs.Add(1) <= n {
			return errors.New("boom")
		}
		return nil
	}
}

// Three replicas share a real Redis; a job fails three times, then
// succeeds: the receiver gets exactly one POST per failed run and one
// recovered, each signed, whichever replica closed the run.
func TestNotifyOncePerEventThreeReplicas(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "flaky", Schedule: "@every 1s", Handler: flaky(3), Notify: []string{"ops"}}}
	tg := rcv.target(notify.Failed, notify.Recovered)
	for _, id := range []string{"a", "b", "c"} {
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithReplicaID(id), scheduler.WithLogger(quiet),
			scheduler.WithSyncInterval(200*time.Millisecond), scheduler.WithNotifications(tg))
		if err != nil {
			t.Fatal(err)
		}
		f.run(s)
	}
	testkit.WaitFor(t, 60*time.Second, "3 failed and 1 recovered notification", func() bool { return len(rcv.posts()) >= 4 })
	// Time for any duplicate to arrive: several polls and a lease.
	time.Sleep(3 * time.Second)
	f.stop()
	got := rcv.posts()
	failed, recovered := 0, 0
	for _, p := range got {
		if !p.sigOK {
			t.Errorf("%s: signature does not verify", p.delivery)
		}
		if p.body.Run == nil || p.delivery != p.body.Run.ID+":"+p.event || p.body.Delivery != p.delivery {
			t.Errorf("delivery %q, event %q, body %+v", p.delivery, p.event, p.body)
			continue
		}
		if p.body.Job.Name != "flaky" || p.body.Job.Schedule != "@every 1s" {
			t.Errorf("job in the body: %+v", p.body.Job)
		}
		switch p.event {
		case "failed":
			failed++
			if p.body.Run.Outcome != scheduler.Failed || p.body.Run.Error == "" {
				t.Errorf("failed run record: %+v", p.body.Run)
			}
		case "recovered":
			recovered++
			if p.body.Run.Outcome != scheduler.Succeeded {
				t.Errorf("recovered run record: %+v", p.body.Run)
			}
		default:
			t.Errorf("unexpected event %q", p.event)
		}
	}
	for k, n := range rcv.byDelivery() {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
	if failed != 3 || recovered != 1 {
		t.Errorf("got %d failed and %d recovered notifications, want 3 and 1", failed, recovered)
	}
}

// A receiver that answers 500 gets the same delivery again, with backoff,
// until it takes it; the WARN names the URL without its credentials and
// never the secret.
func TestNotifyRetriesAfter500(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	rcv.fail.Store(2)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	tg := rcv.target(notify.Failed)
	tg.URL = strings.Replace(rcv.srv.URL, "http://", "http://hookuser:hookpass@", 1) + "/hook?token=qs-secret"
	f := newFleet(t)
	table := []scheduler.Job{{Name: "once", Schedule: "@every 1s", Handler: flaky(1), Notify: []string{"ops"}}}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(log), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(tg), scheduler.WithNotifyRetry(100*time.Millisecond, time.Hour), scheduler.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	testkit.WaitFor(t, 30*time.Second, "the delivery after two 500s", func() bool { return len(rcv.posts()) == 1 })
	f.stop()
	if h := rcv.hits.Load(); h != 3 {
		t.Errorf("receiver hit %d times, want 3 (two 500s, then 200)", h)
	}
	p := rcv.posts()[0]
	if p.event != "failed" || !p.sigOK || !strings.HasPrefix(p.delivery, "once@") {
		t.Errorf("post: %+v", p)
	}
	out := logs.String()
	if strings.Count(out, "notification not delivered; will retry") != 2 {
		t.Errorf("want 2 retry warnings, log:\n%s", out)
	}
	for _, secret := range []string{"hookpass", hookSecret, "qs-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "http://127.0.0.1") {
		t.Errorf("warning does not name the URL:\n%s", out)
	}
	counts := notifyCounts(t, reader)
	if counts["delivered"] != 1 || counts["failed"] != 2 {
		t.Errorf("solocron.notifications by result: %v, want delivered 1, failed 2", counts)
	}
}

// notifyCounts sums solocron.notifications by result.
func notifyCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "solocron.notifications" {
				for _, p := range d.DataPoints {
					r, _ := p.Attributes.Value("result")
					out[r.AsString()] += p.Value
				}
			}
		}
	}
	return out
}

// A receiver down for longer than the retry window: the delivery is given
// up, counted, and leaves the queue.
func TestNotifyGivesUp(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	rcv := newReceiver(t)
	rcv.down.Store(true)
	var logs testkit.SyncBuffer
	reader := sdkmetric.NewManualReader()
	f := newFleet(t)
	table := []scheduler.Job{{Name: "gone", Schedule: "@every 1s", Handler: flaky(1), Notify: []string{"ops"}}}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		scheduler.WithSyncInterval(100*time.Millisecond), scheduler.WithNotifications(rcv.target(notify.Failed)),
		scheduler.WithNotifyRetry(50*time.Millisecond, 500*time.Millisecond),
		scheduler.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	testkit.WaitFor(t, 30*time.Second, "the delivery given up", func() bool {
		return strings.Contains(logs.String(), "notification not delivered; giving up")
	})
	ctx := context.Background()
	testkit.WaitFor(t, 10*time.Second, "an empty queue", func() bool { return rdb.ZCard(ctx, "solocron:{gone}:notify:q").Val() == 0 })
	f.stop()
	if c := notifyCounts(t, reader); c["gave_up"] != 1 || c["failed"] < 2 || c["delivered"] != 0 {
		t.Errorf("solocron.notifications by result: %v", c)
	}
}

// stuck is a transport that never answers: the replica holding a delivery
// is as good as dead (its report never comes). It lets go when released.
type stuck struct {
	took    chan struct{}
	once    sync.Once
	release chan struct{}
	calls   atomic.Int32
}

func (s *stuck) RoundTrip(*http.Request) (*http.Response, error) {
	s.calls.Add(1)
	s.once.Do(func() { close(s.took) })
	<-s.release
	return nil, errors.New("released")
}

// The replica that took a delivery hangs mid-POST and polls no more (as if
// killed); once its lease ends another replica delivers it, once.
//
// Replica a is stopped, not left polling. A live a took the delivery again
// each time its lease ended: the lease (2 s) is 20 of a's polls (100 ms and
// the poll's few ms), so a's poll came a few ms after the due time every
// round, and b, polling at the same pace, won only if its phase fell in that
// window. In most runs b delivered only once all eight of a's workers hung,
// eight leases (16 s) later; in the others, after one lease.
func TestNotifyDeadTakerHandsOn(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	st := &stuck{took: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(st.release) }) // before the fleet stops (LIFO)
	tg := rcv.target(notify.Failed)
	tg.Timeout = 500 * time.Millisecond // a lease of 2 s
	table := []scheduler.Job{{Name: "dead", Schedule: "@every 1s", Handler: flaky(1), Notify: []string{"ops"}}}
	opts := []scheduler.Option{scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100 * time.Millisecond),
		scheduler.WithNotifications(tg)}
	a, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, append(opts, scheduler.WithReplicaID("a"),
		scheduler.WithNotifyClient(&http.Client{Transport: st}))...)
	if err != nil {
		t.Fatal(err)
	}
	stopA := f.run(a)
	select {
	case <-st.took:
	case <-time.After(30 * time.Second):
		t.Fatal("replica a never took the delivery")
	}
	took := time.Now()
	go stopA() // returns once st is released, at cleanup
	b, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, append(opts, scheduler.WithReplicaID("b"))...)
	if err != nil {
		t.Fatal(err)
	}
	f.run(b)
	testkit.WaitFor(t, 30*time.Second, "replica b to deliver", func() bool { return len(rcv.posts()) == 1 })
	// The lease: twice the target's timeout and a second.
	if d := rcv.posts()[0].at.Sub(took); d < 1500*time.Millisecond {
		t.Errorf("delivered %s after a took it: before its lease ended", d)
	} else if d > 8*time.Second {
		t.Errorf("delivered %s after a took it: not once its lease ended", d)
	}
	time.Sleep(2 * time.Second)
	if n := len(rcv.posts()); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("replica a posted %d times, want 1 (it stopped polling once it took the delivery)", n)
	}
}

// The queue is bounded: events beyond the limit are dropped (and counted);
// what was queued is delivered once the receiver is back. Pausing sends
// paused.
func TestNotifyQueueBoundAndPaused(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	rcv := newReceiver(t)
	rcv.down.Store(true)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "bounded", Schedule: "@every 1h", Handler: flaky(0), Notify: []string{"ops"}}}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(rcv.target(notify.Paused)), scheduler.WithNotifyQueueLimit(3),
		scheduler.WithNotifyRetry(200*time.Millisecond, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	ctx := context.Background()
	testkit.WaitFor(t, 10*time.Second, "the subscription", func() bool {
		return rdb.Exists(ctx, "solocron:{bounded}:notify:on").Val() == 1
	})
	ctl := s.Control()
	for range 5 {
		if err := ctl.Pause(ctx, "bounded"); err != nil {
			t.Fatal(err)
		}
		if err := ctl.Pause(ctx, "bounded"); err != nil { // already paused: no event
			t.Fatal(err)
		}
		if err := ctl.Resume(ctx, "bounded"); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.ZCard(ctx, "solocron:{bounded}:notify:q").Val(); n != 3 {
		t.Errorf("queue holds %d, want the bound 3", n)
	}
	rcv.down.Store(false)
	testkit.WaitFor(t, 30*time.Second, "3 paused notifications", func() bool { return len(rcv.posts()) >= 3 })
	time.Sleep(time.Second)
	f.stop()
	got := rcv.byDelivery()
	if len(got) != 3 {
		t.Errorf("deliveries: %v, want 3", got)
	}
	for k, n := range got {
		if n != 1 || !strings.HasPrefix(k, "bounded@paused-") || !strings.HasSuffix(k, ":paused") {
			t.Errorf("delivery %q x%d", k, n)
		}
	}
	for _, p := range rcv.posts() {
		if p.body.Run != nil || p.event != "paused" {
			t.Errorf("paused post: %+v", p)
		}
	}
	if n := rdb.ZCard(ctx, "solocron:{bounded}:notify:q").Val(); n != 0 {
		t.Errorf("queue holds %d after delivery", n)
	}
}

// The embedded store (miniredis) delivers too: missed and timed_out.
func TestNotifyMiniredis(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	_, rdb := redistest.Mini(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "slow", Schedule: "@every 1s", Timeout: 100 * time.Millisecond, Notify: []string{"ops"},
		Handler: jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })}}
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(rcv.target(notify.TimedOut)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	testkit.WaitFor(t, 30*time.Second, "a timed_out notification", func() bool { return len(rcv.posts()) >= 1 })
	f.stop()
	p := rcv.posts()[0]
	if p.event != "timed_out" || p.body.Run == nil || p.body.Run.Outcome != scheduler.TimedOut || !p.sigOK {
		t.Errorf("post: %+v", p)
	}
}

// A job naming an unknown target is refused; so is a bad target; Redlock
// refuses notifications.
func TestNotifyValidation(t *testing.T) {
	_, rdb := redistest.Mini(t)
	good := notify.Target{Name: "ops", URL: "https://hooks.example.com/x", On: []notify.Event{notify.Failed}}
	table := []scheduler.Job{{Name: "j", Schedule: "@every 1s", Handler: flaky(0), Notify: []string{"pager"}}}
	if _, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithNotifications(good)); err == nil || !strings.Contains(err.Error(), `no notification named "pager"`) {
		t.Errorf("unknown target: %v", err)
	}
	bad := notify.Target{Name: "ops", URL: "ftp://x", On: []notify.Event{"exploded"}}
	if _, err := scheduler.New(schedtest.RedisStore(t, rdb), nil, scheduler.WithNotifications(bad)); err == nil ||
		!strings.Contains(err.Error(), "http:// or https://") || !strings.Contains(err.Error(), `unknown event "exploded"`) {
		t.Errorf("bad target: %v", err)
	}
	table[0].Notify = []string{"ops"}
	_, r1 := redistest.Mini(t)
	_, r2 := redistest.Mini(t)
	if _, err := scheduler.New(schedtest.RedlockStore(t, []redis.UniversalClient{rdb, r1, r2}), table, scheduler.WithNotifications(good)); err == nil || !strings.Contains(err.Error(), "redlock") {
		t.Errorf("redlock: %v", err)
	}
}

// A run recorded missed by the heartbeat (here a manual request no replica
// picked up within its time to live) is notified as missed.
func TestNotifyMissed(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	rcv := newReceiver(t)
	f := newFleet(t)
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	const id = "lonely@manual-abandoned"
	if err := rdb.ZAdd(ctx, "solocron:{lonely}:manual", redis.Z{Score: float64(now.Add(-2 * time.Hour).UnixMilli()), Member: id}).Err(); err != nil {
		t.Fatal(err)
	}
	table := []scheduler.Job{{Name: "lonely", Schedule: "@yearly", Handler: flaky(0), Notify: []string{"ops"}}}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(rcv.target(notify.Missed)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	testkit.WaitFor(t, 30*time.Second, "a missed notification", func() bool { return len(rcv.posts()) >= 1 })
	f.stop()
	p := rcv.posts()[0]
	if p.delivery != id+":missed" || p.event != "missed" || p.body.Run == nil || p.body.Run.Outcome != scheduler.Missed ||
		!strings.Contains(p.body.Run.Error, "no replica picked up") {
		t.Errorf("post: %+v", p)
	}
}

// pause_after_failures pausing a job queues the paused notification, as an
// operator's pause does: one POST, for the one pause, on a real Redis; the
// failures that led to it are posted too.
func TestNotifyPauseAfterFailures(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "tripping", Schedule: "@every 1s", PauseAfterFailures: 2, Notify: []string{"ops"},
		Handler: flaky(1 << 30)}}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(rcv.target(notify.Paused, notify.Failed)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	ctx := context.Background()
	testkit.WaitFor(t, 60*time.Second, "a paused notification", func() bool {
		for _, p := range rcv.posts() {
			if p.event == "paused" {
				return true
			}
		}
		return false
	})
	st, err := s.Control().Status(ctx, "tripping", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.PausedWhy == "" || st.ConsecutiveFailures != 2 {
		t.Errorf("status: paused %v, why %q, failures %d", st.Paused, st.PausedWhy, st.ConsecutiveFailures)
	}
	time.Sleep(2 * time.Second) // room for a wrong second paused or failed post
	f.stop()
	paused, failed := 0, 0
	for _, p := range rcv.posts() {
		switch p.event {
		case "paused":
			paused++
			if !strings.HasPrefix(p.delivery, "tripping@paused-") || !strings.HasSuffix(p.delivery, ":paused") ||
				p.body.Run != nil || !p.sigOK || p.body.Job.Name != "tripping" || !strings.Contains(p.body.Reason, "pause_after_failures: 2") {
				t.Errorf("paused post: %+v", p)
			}
		case "failed":
			failed++
		}
	}
	if paused != 1 || failed != 2 {
		t.Errorf("got %d paused and %d failed notifications, want 1 and 2", paused, failed)
	}
}

// Redis losing its data (here FLUSHALL) takes the notification
// subscriptions with it: the replica that notices the loss writes them
// again at once, so the failures after the loss are notified too — not
// only after the next periodic rewrite, ten minutes later.
func TestNotifyAfterRedisLostData(t *testing.T) {
	t.Parallel() // real time, little CPU (main_test.go)
	srv := redistest.Start(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "fails", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return errors.New("boom") }),
		Notify: []string{"ops"}}}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), table, scheduler.WithLogger(quiet),
		scheduler.WithSyncInterval(200*time.Millisecond), scheduler.WithNotifications(rcv.target(notify.Failed)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	testkit.WaitFor(t, 30*time.Second, "a failed notification", func() bool { return len(rcv.posts()) >= 1 })
	admin := srv.Client(t, nil)
	if err := admin.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	testkit.WaitFor(t, 15*time.Second, "a failed notification of a run closed after the flush", func() bool {
		for _, p := range rcv.posts() {
			if p.body.Run != nil && p.body.Run.FinishedAt.After(flushed) {
				return true
			}
		}
		return false
	})
	f.stop()
}
