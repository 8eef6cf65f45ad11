package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/notify"
)

// Notifications in the seeded fault search. Some jobs of the table
// (drawn from the seed, apart from the plan's own draws so that a seed's
// plan stays what it was) subscribe one target, "sim", to every run event.
// Each replica's notifier reaches the store through a go-redis hook that
// puts its calls through the same faults and the same sequencer as the
// engine's other calls (simCall); its POSTs reach an in-process receiver
// (an http.RoundTripper: no network), which answers 500 to a seeded share
// of the attempts made before the calm period (at most simNotifyFails per
// delivery, so a retry's backoff stays within the calm period). Every POST
// is in the replay trace. Half the seeds (notifyOn) send notifications;
// SOLOCRON_SIM_NOTIFY=0 turns them off.
//
// Invariants (checkNotify):
//   - notify-matches-record: every event POSTed names a run whose final
//     record has that outcome (recovered: succeeded) — unless the store
//     lost its data after the event was queued (the record read at the end
//     may be the loss's own).
//   - notify-once: no POST of a delivery after an earlier POST of it was
//     answered 2xx and reported done to the store (docs/monitoring.md: a
//     second POST, with the same key, only when the report was lost, or
//     when the store lost the run's record and the run was decided again).
//   - notify-delivered: every final record whose outcome the target wants
//     (failed, timed_out, lease_lost, missed), closed while its job's
//     subscription was in the store and at least simNotifyMargin before the
//     end, was POSTed and answered 2xx.

const (
	invNotifyMatches   = "notify-matches-record"
	invNotifyOnce      = "notify-once"
	invNotifyDelivered = "notify-delivered"

	simNotifyTarget = "sim"
	simNotifyFails  = 3
	// simNotifyMargin: a record closed this close to the end may still be
	// on its way (a lease_lost event is held back 15 s; then a poll).
	simNotifyMargin = 25 * time.Second
	// simNotifyStale: a taker frozen this recently may hold a delivery
	// taken before its lease (twice the 5 s timeout and a second) ran out.
	simNotifyStale = 30 * time.Second
	// simLeaseLostHold is LEASE_LOST_HOLD (store's lua/parts/notify.lua).
	simLeaseLostHold = 15 * time.Second
)

var simNotifyOff = os.Getenv("SOLOCRON_SIM_NOTIFY") == "0"

// simNotifyEvents are the events the sim's target wants: every run event.
var simNotifyEvents = []notify.Event{notify.Failed, notify.TimedOut, notify.LeaseLost, notify.Missed, notify.Recovered}

// notifyOn reports whether the seed sends notifications: half the seeds
// (the notifier's poll, one call per replica per second, would otherwise
// add a third to every seed's cost).
func (p *simPlan) notifyOn() bool {
	if simNotifyOff {
		return false
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|notify", p.seed)
	return (h.Sum64()>>3)%2 == 0
}

// notifies reports whether job subscribes: about two jobs in three, on
// the seeds that send notifications.
func (p *simPlan) notifies(job string) bool {
	if !p.notifyOn() {
		return false
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|notify|%s", p.seed, job)
	return h.Sum64()%3 != 0
}

// simPost is one POST the receiver got.
type simPost struct {
	key     string // "<run id>:<event>"
	event   string
	run     string
	job     string
	in      *simInc
	at      time.Time
	queued  time.Time // the event's At: when the store queued it
	status  int
	outcome string // the run's outcome in the body
}

// simNotifyOptions are a replica's notification options: the target and
// the receiver's client.
func (w *simWorld) simNotifyOptions(in *simInc) []scheduler.Option {
	if !w.plan.notifyOn() {
		return nil
	}
	return []scheduler.Option{
		scheduler.WithNotifications(notify.Target{Name: simNotifyTarget, URL: "http://receiver.sim/hook", On: simNotifyEvents}),
		scheduler.WithNotifyClient(&http.Client{Transport: simReceiver{w: w, in: in}}),
	}
}

// simReceiver is the in-process receiver, as seen from one incarnation.
type simReceiver struct {
	w  *simWorld
	in *simInc
}

func (rc simReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	// A frozen process sends nothing until it resumes; a dead one never.
	if !rc.in.r.runnable(rc.in) {
		return nil, errSimDead
	}
	var n scheduler.Notification
	if err := json.Unmarshal(body, &n); err != nil {
		return nil, fmt.Errorf("sim receiver: %v", err)
	}
	status := rc.w.receive(rc.in, n)
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// receive notes one POST and says how the receiver answers it.
func (w *simWorld) receive(in *simInc, n scheduler.Notification) int {
	status := http.StatusOK
	w.mu.Lock()
	fails := 0
	for _, p := range w.obs.posts {
		if p.key == n.Delivery && p.status != http.StatusOK {
			fails++
		}
	}
	if time.Now().Before(w.start.Add(simFaultsUntil)) && fails < simNotifyFails {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d|post|%s|%d", w.plan.seed, n.Delivery, time.Now().UnixNano())
		if int(h.Sum64()%100) < w.plan.faultPct {
			status = http.StatusInternalServerError
		}
	}
	p := simPost{key: n.Delivery, event: string(n.Event), job: n.Job.Name, in: in, at: time.Now(), queued: n.At, status: status}
	if n.Run != nil {
		p.run, p.outcome = n.Run.ID, string(n.Run.Outcome)
	}
	w.obs.posts = append(w.obs.posts, p)
	w.mu.Unlock()
	w.noteCall("%s post %s -> %d", in, n.Delivery, status)
	return status
}

// simNotifyHook puts a notifier's store calls through the faults and the
// sequencer (simCall).
type simNotifyHook struct{ st *simStore }

func (h simNotifyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h simNotifyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.call(ctx, []redis.Cmder{cmd}, func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

func (h simNotifyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.call(ctx, cmds, func(ctx context.Context) error { return next(ctx, cmds) })
	}
}

// simNotifyInside marks the context of a call the sequencer runs: what
// go-redis sends on it (a new connection's HELLO) is part of that call.
type simNotifyInside struct{}

func (h simNotifyHook) call(ctx context.Context, cmds []redis.Cmder, exec func(context.Context) error) error {
	if ctx.Value(simNotifyInside{}) != nil {
		return exec(ctx)
	}
	name := h.name(cmds)
	// A call the store runs after its caller gave up (a stall) would write
	// into commands the caller reads: it is dropped instead (the notifier
	// takes or reports again).
	var returned atomic.Bool
	_, err := simCall(h.st, ctx, "notify", name, func(ctx context.Context) (struct{}, error) {
		if returned.Load() {
			return struct{}{}, nil
		}
		err := exec(context.WithValue(ctx, simNotifyInside{}, true))
		h.st.in.r.w.noteNotifyCalls(h.st.in, name, cmds, err)
		return struct{}{}, err
	})
	returned.Store(true)
	if err != nil {
		for _, c := range cmds {
			c.SetErr(err)
		}
	}
	return err
}

// name describes a call without its taker's token (random: it would make
// the sequencer's order vary between replays) or a script's hash.
func (h simNotifyHook) name(cmds []redis.Cmder) string {
	var b strings.Builder
	owner := h.st.in.r.id + "/"
	for i, c := range cmds {
		if i > 0 {
			b.WriteString("; ")
		}
		for k, a := range c.Args() {
			s := fmt.Sprint(a)
			if strings.HasPrefix(s, owner) || (k == 1 && strings.EqualFold(c.Name(), "evalsha")) || strings.HasPrefix(s, "{") {
				continue
			}
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// noteNotifyCalls notes what a notifier's call did at the store: the
// subscriptions it wrote, the deliveries it reported done.
func (w *simWorld) noteNotifyCalls(in *simInc, name string, cmds []redis.Cmder, err error) {
	w.noteCall("%s notify %s err=%v", in, name, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cmds {
		if c.Err() != nil {
			continue
		}
		args := c.Args()
		switch strings.ToLower(c.Name()) {
		case "set":
			if k := fmt.Sprint(args[1]); strings.HasSuffix(k, ":notify:on") {
				if _, after, ok := strings.Cut(k, "{"); ok {
					job, _, _ := strings.Cut(after, "}")
					w.obs.notifySubs[job] = append(w.obs.notifySubs[job], time.Now())
				}
			}
		case "evalsha", "eval":
			// notify_done: KEYS meta; ARGV delivery, taker, -1 (done).
			sc, ok := c.(*redis.Cmd)
			if !ok || len(args) != 7 || fmt.Sprint(args[6]) != "-1" {
				continue
			}
			if v, _ := sc.Val().(string); v == "ok" {
				target, key, _ := strings.Cut(fmt.Sprint(args[4]), " ")
				if target == simNotifyTarget {
					if _, seen := w.obs.notifyDone[key]; !seen {
						w.obs.notifyDone[key] = time.Now()
					}
				}
			}
		}
	}
}

// subscribedAt reports whether job's subscription was in the store at t:
// written before t, and no loss of the store's data in between.
func (w *simWorld) subscribedAt(job string, t time.Time) bool {
	var last time.Time
	for _, s := range w.obs.notifySubs[job] {
		if s.Before(t) {
			last = s
		}
	}
	return !last.IsZero() && !w.obs.lossBetween(last, t, false)
}

// checkNotify checks the notifications (w.mu held).
func (w *simWorld) checkNotify() []simViolation {
	if !w.plan.notifyOn() {
		return nil
	}
	o := &w.obs
	var vs []simViolation
	add := func(inv, run, format string, args ...any) {
		vs = append(vs, simViolation{invariant: inv, run: run, detail: fmt.Sprintf(format, args...)})
	}
	end := w.start.Add(simLength)
	final := func(id string) (scheduler.Run, bool) {
		rs := o.records[id]
		if len(rs) == 0 {
			return scheduler.Run{}, false
		}
		return rs[len(rs)-1], true
	}
	acked := map[string]bool{}
	posted := map[string]bool{}
	firstQueued := map[string]time.Time{}
	for _, p := range o.posts {
		if p.run == "" {
			continue
		}
		// The event says what the record says.
		if !posted[p.key] {
			posted[p.key] = true
			firstQueued[p.key] = p.queued
			want := p.event
			if want == string(notify.Recovered) {
				want = string(scheduler.Succeeded)
			}
			r, ok := final(p.run)
			lost := w.lossesBetween(p.queued.Add(-w.plan.skew), end)
			switch {
			case lost != "":
			case !ok:
				add(invNotifyMatches, p.run, "event %s POSTed by %s at t=%s for run %s, which has no record", p.key, p.in, w.rel(p.at), p.run)
			case string(r.Outcome) != want:
				add(invNotifyMatches, p.run, "event %s POSTed by %s at t=%s (queued t=%s, the body's outcome %s) for run %s, whose final record is %s -> %s by %s (error %q)",
					p.key, p.in, w.rel(p.at), w.rel(p.queued), p.outcome, p.run, r.Decision, r.Outcome, r.Replica, r.Error)
			}
		}
		// Once: not again after a 2xx its taker reported done — unless the
		// replica that POSTs again was frozen (or killed) in the last
		// simNotifyStale: it took the delivery before its lease ran out and
		// POSTs it on waking (docs/monitoring.md: a taker stalled past its
		// lease may POST again, with the same key).
		// (A failover to a copy taken before the report brings the delivery
		// back: a second POST with the same key, which receivers drop.)
		// (Nor a delivery queued twice: the store lost the run's record and
		// its queue after one was queued, a second decision of the run —
		// one-decision-per-run accepts it after a loss — queued its event
		// anew, and each was POSTed; in either order, as a taker of the
		// first may POST it late, seed 92067.)
		q1, q2 := firstQueued[p.key], p.queued
		if q2.Before(q1) {
			q1, q2 = q2, q1
		}
		requeued := !q1.Equal(q2) && o.lossBetween(q1.Add(-w.plan.skew), q2.Add(w.plan.skew), false)
		if d, ok := o.notifyDone[p.key]; ok && p.at.After(d) && acked[p.key] && !o.lossBetween(d, p.at, false) && !requeued &&
			!o.impaired(p.in, p.at.Add(-simNotifyStale), p.at) {
			add(invNotifyOnce, p.run, "event %s POSTed again by %s at t=%s after it was answered 2xx and reported done at t=%s", p.key, p.in, w.rel(p.at), w.rel(d))
		}
		if p.status == http.StatusOK {
			acked[p.key] = true
		}
	}
	// Every final record the target wants, delivered.
	finalJobs := map[string]bool{}
	for _, sj := range w.plan.table(w.plan.final) {
		finalJobs[sj.Name] = true
	}
	wants := map[scheduler.Outcome]bool{scheduler.Failed: true, scheduler.TimedOut: true, scheduler.LeaseLost: true, scheduler.Missed: true}
	for _, id := range slices.Sorted(maps.Keys(o.records)) {
		r, _ := final(id)
		// A job the final table no longer has: no replica polls its queue.
		if !wants[r.Outcome] || !w.plan.notifies(r.Job) || !finalJobs[r.Job] {
			continue
		}
		closed := r.FinishedAt // the store's clock: when the close queued the event
		if closed.IsZero() {
			closed = w.lastNoted(id, o.records[id])
		}
		if closed.After(end.Add(-simNotifyMargin)) {
			continue
		}
		if !w.subscribedAt(r.Job, closed) {
			// Redis lost the subscription with its data, and no replica had
			// written it again yet: the close queued nothing (the runs the
			// claim that notices the loss records missed are such).
			continue
		}
		if w.lossesBetween(closed.Add(-w.plan.skew), end) != "" {
			continue // the queue was lost with the store's data
		}
		if key := id + ":" + string(r.Outcome); !acked[key] {
			add(invNotifyDelivered, id, "run %s closed %s -> %s by %s at t=%s (error %q): event %s never delivered (POSTed %v)",
				id, r.Decision, r.Outcome, r.Replica, w.rel(closed), r.Error, key, posted[key])
		}
	}
	return vs
}
