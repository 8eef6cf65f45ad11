package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// Notifications: exactly one POST per event across the cluster.
//
// The script that closes a run (or pauses a job) queues the event in the
// job's own keys, in the same round trip: no replica can die between the
// close and the queue. Each replica polls the queues of the jobs of its
// table that have notifications, one pipelined round trip per heartbeat
// interval, and takes what is due with a lease: a taken delivery is due
// again a lease later, so when its taker dies another replica takes it
// then. A failed POST is due again after a backoff, for whichever replica
// looks first; a delivery older than the retry window is given up. A taker
// whose POST succeeded but whose report was lost (it died in between, or
// its lease ran out first) may cause a second POST with the same
// Solocron-Delivery key: receivers de-duplicate on it.
//
// Deliveries run in their own goroutines, bounded (notifyWorkers), and
// never in the claim, renewal or close paths: a slow receiver delays
// nothing else.

// Defaults of WithNotifications and WithNotifyRetry.
const (
	DefaultNotifyBackoff    = time.Second
	DefaultNotifyMaxBackoff = 5 * time.Minute
	DefaultNotifyMaxAge     = time.Hour
	DefaultNotifyQueueLimit = 1000
	// notifyWorkers bounds the POSTs in flight per replica.
	notifyWorkers = 8
	// notifyResubscribe is how often a replica writes its table's
	// subscriptions again (besides at start and on reload): it keeps them
	// alive and restores them after Redis lost data.
	notifyResubscribe = 10 * time.Minute
	// notifySubTTL is how long a subscription outlives the last replica
	// that wrote it: META_TTL, as the job's other long-lived keys.
	notifySubTTL = 30 * 24 * time.Hour
)

type notifyConfig struct {
	targets    map[string]notify.Target
	backoff    time.Duration
	maxBackoff time.Duration
	maxAge     time.Duration
	queueLimit int
	client     *http.Client
	errs       []error
}

// WithNotifications sets the targets jobs may name in Job.Notify. Each is
// validated (notify.Target.Validate); names are unique. Default none.
// Notifications need one Redis deployment (NewRedisStore): a Redlock store refuses them,
// as its masters would each queue the event.
func WithNotifications(targets ...notify.Target) Option {
	return func(c *config) {
		if c.notify.targets == nil {
			c.notify.targets = map[string]notify.Target{}
		}
		for _, t := range targets {
			if err := t.Validate(); err != nil {
				c.notify.errs = append(c.notify.errs, fmt.Errorf("scheduler: notification %q: %w", t.Name, err))
				continue
			}
			if _, dup := c.notify.targets[t.Name]; dup {
				c.notify.errs = append(c.notify.errs, fmt.Errorf("scheduler: notification %q named twice", t.Name))
				continue
			}
			t.On = slices.Clone(t.On)
			c.notify.targets[t.Name] = t
		}
	}
}

// WithNotifyRetry sets how failed notification POSTs are retried: after
// backoff, doubling (with jitter) up to 5 minutes, until maxAge after the
// event, when the delivery is given up (counted and logged). Defaults 1s
// and 1h.
func WithNotifyRetry(backoff, maxAge time.Duration) Option {
	return func(c *config) { c.notify.backoff, c.notify.maxAge = backoff, maxAge }
}

// WithNotifyQueueLimit bounds each job's queue of undelivered
// notifications in Redis; events beyond it are dropped and counted
// (solocron.notifications, result queue_full). Default 1000.
func WithNotifyQueueLimit(n int) Option { return func(c *config) { c.notify.queueLimit = n } }

// WithNotifyClient sets the HTTP client notifications are posted with.
// Default: one that follows no redirects.
func WithNotifyClient(hc *http.Client) Option {
	return func(c *config) {
		if hc != nil {
			c.notify.client = hc
		}
	}
}

func (n *notifyConfig) check() error {
	if n.backoff == 0 {
		n.backoff = DefaultNotifyBackoff
	}
	if n.maxAge == 0 {
		n.maxAge = DefaultNotifyMaxAge
	}
	if n.maxBackoff == 0 {
		n.maxBackoff = DefaultNotifyMaxBackoff
	}
	if n.queueLimit == 0 {
		n.queueLimit = DefaultNotifyQueueLimit
	}
	if n.client == nil {
		n.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	errs := n.errs
	if n.backoff < 0 || n.maxAge < 0 {
		errs = append(errs, errors.New("scheduler: negative notification backoff or max age"))
	}
	if n.queueLimit < 0 {
		errs = append(errs, fmt.Errorf("scheduler: negative notification queue limit %d", n.queueLimit))
	}
	return errors.Join(errs...)
}

// checkNotify checks the jobs' Notify names against the targets; Redlock
// refuses notifications.
func (c *config) checkNotify(jobs []Job, redlock bool) error {
	var errs []error
	for i, j := range jobs {
		if len(j.Notify) == 0 {
			continue
		}
		if redlock {
			errs = append(errs, &FieldError{Job: i, Field: "Notify", Err: errors.New("notifications need one Redis deployment, not redlock (each master would queue the event)")})
			continue
		}
		for _, name := range j.Notify {
			if _, ok := c.notify.targets[name]; !ok {
				errs = append(errs, &FieldError{Job: i, Field: "Notify", Err: fmt.Errorf("no notification named %q", name)})
			}
		}
	}
	return errors.Join(errs...)
}

// Notification is the JSON body of every notification POST.
type Notification struct {
	// Event is what happened.
	Event notify.Event `json:"event"`
	// Delivery is the idempotency key, as in the Solocron-Delivery header:
	// "<run id>:<event>" (for paused, "<job>@paused-<unix µs>:paused").
	Delivery string `json:"delivery"`
	// Job is the job the event is about.
	Job NotificationJob `json:"job"`
	// Run is the run's record as it was closed; nil for paused.
	Run *Run `json:"run,omitempty"`
	// Reason is, for paused, why: the reason the operator gave and who
	// asked (Control.PauseWithReason), or why the cluster paused the job
	// (pause_after_failures); "" when none was given.
	Reason string `json:"reason,omitempty"`
	// At is when the event happened (Redis' clock).
	At time.Time `json:"at"`
}

// NotificationJob describes the job in a Notification.
type NotificationJob struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// Delivery results, the "result" attribute of solocron.notifications.
const (
	notifyDelivered = "delivered" // the receiver answered 2xx
	notifyFailed    = "failed"    // one attempt failed; retried
	notifyGaveUp    = "gave_up"   // retried past the max age, or its target is gone
	notifyQueueFull = "queue_full"
)

// notifier is one replica's delivery loop.
type notifier struct {
	s      *Scheduler
	st     *store.Redis
	owner  string
	sem    chan struct{}
	wg     sync.WaitGroup
	counts metric.Int64Counter

	gen   int // table generation last subscribed
	subAt time.Time
}

// newNotifier returns the replica's delivery loop, its table's
// subscriptions written; nil when there is nothing to deliver.
func (s *Scheduler) newNotifier(ctx context.Context) *notifier {
	st := s.store.Caps().Notify
	if st == nil || len(s.cfg.notify.targets) == 0 {
		// Without targets a replica leaves the queues alone. (A table that
		// drops every notification leaves its subscriptions to expire;
		// their queues stay bounded.)
		return nil
	}
	m := s.cfg.meter.Meter(ScopeName)
	counts, err := m.Int64Counter("solocron.notifications",
		metric.WithDescription("Notification deliveries, by notification, event and result (delivered, failed, gave_up, queue_full)."),
		metric.WithUnit("{delivery}"))
	if err != nil {
		s.log.Warn("notifications: no metric", "error", err)
	}
	n := &notifier{s: s, st: st, owner: s.cfg.replicaID + "/" + store.NewEpoch(), sem: make(chan struct{}, notifyWorkers), counts: counts, gen: -1}
	if counts != nil {
		// Each target's series start at 0: a counter that first shows up
		// at 1 hides its first event from increase(), and the alert on a
		// target that takes nothing (SolocronNotificationsFailing) would
		// miss a receiver down from the replica's start until its next
		// retry, minutes later.
		for _, t := range s.cfg.notify.targets {
			for _, e := range t.On {
				for _, r := range []string{notifyDelivered, notifyFailed, notifyGaveUp} {
					counts.Add(ctx, 0, metric.WithAttributes(attribute.String("notification", t.Name),
						attribute.String("event", string(e)), attribute.String("result", r)))
				}
			}
		}
		// And the one series of events dropped at the queue's bound,
		// which SolocronNotificationsFailing reads with increase() too.
		counts.Add(ctx, 0, metric.WithAttributes(attribute.String("notification", ""),
			attribute.String("event", ""), attribute.String("result", notifyQueueFull)))
	}
	n.resubscribe(ctx)
	return n
}

// run delivers until ctx is done, then waits for the POSTs in flight (each
// bounded by its target's timeout).
func (n *notifier) run(ctx context.Context) {
	defer n.wg.Wait()
	for {
		n.poll(ctx)
		if !sleep(ctx, n.s.cfg.syncInterval) {
			return
		}
	}
}

// resubscribe writes the subscriptions when the table changed, and every
// notifyResubscribe; it reports whether they are up to date.
func (n *notifier) resubscribe(ctx context.Context) bool {
	tab, gen := n.s.table()
	// After Redis lost a job's state its subscription is gone too: without
	// it the runs closed meanwhile queue no event. Written again now, not
	// at the next notifyResubscribe.
	if n.s.lostState.Swap(false) {
		n.gen = -1
	}
	if gen == n.gen && time.Since(n.subAt) < notifyResubscribe {
		return true
	}
	if err := n.subscribe(ctx, tab); err != nil {
		if ctx.Err() == nil {
			n.s.log.Warn("notifications: could not write the subscriptions; retrying", "error", err)
		}
		return false
	}
	n.gen, n.subAt = gen, time.Now()
	return true
}

func (n *notifier) count(ctx context.Context, target, event, result string) {
	if n.counts == nil {
		return
	}
	n.counts.Add(ctx, 1, metric.WithAttributes(attribute.String("notification", target),
		attribute.String("event", event), attribute.String("result", result)))
}

// subscription is what notify:on holds for job j: which targets want which
// event, and the queue's bound. Every replica with the same table writes
// the same value.
func (n *notifier) subscription(j *jobState) string {
	if len(j.Notify) == 0 {
		return ""
	}
	on := map[string][]string{}
	for _, name := range j.Notify {
		t, ok := n.s.cfg.notify.targets[name]
		if !ok {
			continue
		}
		for _, e := range t.On {
			if !slices.Contains(on[string(e)], name) {
				on[string(e)] = append(on[string(e)], name)
			}
		}
	}
	for e := range on {
		slices.Sort(on[e])
	}
	b, _ := json.Marshal(struct {
		On  map[string][]string `json:"on"`
		Max int                 `json:"max"`
	}{on, n.s.cfg.notify.queueLimit})
	return string(b)
}

// subscribe writes the table's subscriptions, one pipeline: set for the
// jobs with notifications, deleted for the others, and the flag in each
// job's meta (lua/parts/notify.lua) that says which.
func (n *notifier) subscribe(ctx context.Context, tab []*jobState) error {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	subs := make([]store.NotifySub, len(tab))
	for i, j := range tab {
		subs[i] = store.NotifySub{Job: j.Name, Sub: n.subscription(j)}
	}
	return n.st.NotifySubscribe(ctx, subs, notifySubTTL)
}

// poll subscribes when the table changed, then takes what is due.
func (n *notifier) poll(ctx context.Context) {
	if !n.resubscribe(ctx) {
		return
	}
	tab, _ := n.s.table()
	free := cap(n.sem) - len(n.sem)
	if free <= 0 {
		return
	}
	var jobs []*jobState
	var reqs []store.NotifyTakeReq
	for _, j := range tab {
		if len(j.Notify) == 0 {
			continue
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return
	}
	// Each job's share of the free workers (at least one): what is taken
	// beyond them goes back at once, so keep that small.
	share := max(1, free/len(jobs))
	for _, j := range jobs {
		reqs = append(reqs, store.NotifyTakeReq{MetaKey: j.metaKey, Lease: n.lease(j), Share: share})
	}
	tctx, cancel := context.WithTimeout(ctx, claimTimeout)
	taken, err := n.st.NotifyTake(tctx, n.owner, reqs)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			n.s.log.Warn("notifications: could not poll the queue", "error", err)
		}
		return
	}
	for i, t := range taken {
		items, dropped := t.Items, t.Dropped
		if dropped > 0 && n.counts != nil {
			n.counts.Add(ctx, dropped, metric.WithAttributes(attribute.String("notification", ""),
				attribute.String("event", ""), attribute.String("result", notifyQueueFull)))
			n.s.log.Warn("notifications: queue full; events dropped", "job", jobs[i].Name, "dropped", dropped)
		}
		for _, it := range items {
			select {
			case n.sem <- struct{}{}:
				n.wg.Go(func() {
					defer func() { <-n.sem }()
					n.send(context.WithoutCancel(ctx), jobs[i], it)
				})
			default:
				// More due than free workers: back in the queue, due now.
				n.done(context.WithoutCancel(ctx), jobs[i], it.Key, 0)
			}
		}
	}
}

// lease is how long a taken delivery stays with its taker: twice the
// longest timeout of the job's targets, and a second.
func (n *notifier) lease(j *jobState) time.Duration {
	var d time.Duration
	for _, name := range j.Notify {
		if t, ok := n.s.cfg.notify.targets[name]; ok {
			d = max(d, t.EffectiveTimeout())
		}
	}
	if d == 0 {
		d = notify.DefaultTimeout
	}
	return 2*d + time.Second
}

// send posts one delivery and reports the result to the queue.
func (n *notifier) send(ctx context.Context, j *jobState, it store.TakenItem) {
	targetName, delivery, _ := strings.Cut(it.Key, " ")
	var ev store.QueuedEvent
	if err := json.Unmarshal([]byte(it.Body), &ev); err != nil {
		n.s.log.Warn("notifications: unreadable queued event; dropped", "job", j.Name, "delivery", delivery, "error", err)
		n.done(ctx, j, it.Key, -1)
		return
	}
	queued := store.MsTime(ev.Queued)
	expired := !queued.IsZero() && time.Since(queued) > n.s.cfg.notify.maxAge
	t, ok := n.s.cfg.notify.targets[targetName]
	if !ok {
		// Replicas whose tables differ (a rolling change): one that knows
		// the target may take it before the retry window ends.
		if !expired {
			n.done(ctx, j, it.Key, n.backoff(it.Attempt))
			return
		}
		n.s.log.Warn("notifications: no replica that took it knows the target; delivery dropped", "notification", targetName, "delivery", delivery)
		n.count(ctx, targetName, ev.Event, notifyGaveUp)
		n.done(ctx, j, it.Key, -1)
		return
	}
	body := Notification{Event: notify.Event(ev.Event), Delivery: delivery,
		Job: NotificationJob{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone}, At: queued}
	if body.Event != notify.Paused {
		r := ev.Run.Run()
		body.Run = &r
	} else {
		body.Reason = ev.Run.Paused
	}
	raw, _ := json.Marshal(body)
	err := notify.Post(ctx, n.s.cfg.notify.client, t, body.Event, delivery, raw)
	if err == nil {
		n.count(ctx, t.Name, ev.Event, notifyDelivered)
		n.done(ctx, j, it.Key, -1)
		return
	}
	n.count(ctx, t.Name, ev.Event, notifyFailed)
	// The URL without credentials; the secret is never logged.
	args := []any{"notification", t.Name, "url", notify.Redact(t.URL), "job", j.Name, "delivery", delivery,
		"attempt", it.Attempt, "error", err}
	if expired {
		n.s.log.Warn("notification not delivered; giving up", args...)
		n.count(ctx, t.Name, ev.Event, notifyGaveUp)
		n.done(ctx, j, it.Key, -1)
		return
	}
	n.s.log.Warn("notification not delivered; will retry", args...)
	n.done(ctx, j, it.Key, n.backoff(it.Attempt))
}

// backoff is the delay before attempt+1: backoff × 2^(attempt-1), capped,
// with up to 20% jitter so that replicas do not retry in step.
func (n *notifier) backoff(attempt int64) time.Duration {
	c := n.s.cfg.notify
	d := c.backoff
	for i := int64(1); i < attempt && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	return d + n.s.cfg.jitter("notify", d/5+1)
}

// done reports a delivery: delay < 0 removes it from the queue, else it is
// due again after delay.
func (n *notifier) done(ctx context.Context, j *jobState, key string, delay time.Duration) {
	ms := int64(-1)
	if delay >= 0 {
		ms = delay.Milliseconds()
	}
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	if err := n.st.NotifyDone(ctx, j.metaKey, key, n.owner, ms); err != nil {
		// The lease runs out and another replica (or this one) takes it
		// again: at worst a second POST with the same key.
		n.s.log.Warn("notifications: could not report a delivery", "job", j.Name, "error", err)
	}
}
