//go:build faults

package faults_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// slowHook is a notification receiver that takes 0–400 ms to answer each
// POST, so that a daemon killed now and then often dies with one in flight.
type slowHook struct {
	srv   *httptest.Server
	mu    sync.Mutex
	rng   *rand.Rand
	posts map[string][]time.Time // Solocron-Delivery -> when each POST came in
	evs   map[string]string      // Solocron-Delivery -> event
}

func newSlowHook(t *testing.T) *slowHook {
	h := &slowHook{rng: rand.New(rand.NewPCG(22, 22)), posts: map[string][]time.Time{}, evs: map[string]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var n scheduler.Notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notification body: %v: %s", err, body)
		}
		key := r.Header.Get("Solocron-Delivery")
		h.mu.Lock()
		h.posts[key] = append(h.posts[key], at)
		h.evs[key] = string(n.Event)
		d := time.Duration(h.rng.IntN(400)) * time.Millisecond
		h.mu.Unlock()
		time.Sleep(d)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *slowHook) got() (map[string][]time.Time, map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	posts := map[string][]time.Time{}
	for k, v := range h.posts {
		posts[k] = append([]time.Time(nil), v...)
	}
	evs := map[string]string{}
	for k, v := range h.evs {
		evs[k] = v
	}
	return posts, evs
}

// 22. Notifications while daemons are killed. A job fails every second
// (notified on failed, lease_lost and missed) on three daemons; a receiver
// takes up to 400 ms to answer each POST; for 20 s a live daemon is killed
// (kill -9) every 1–3 s and restarted 0.5–2 s later. Asserted: every event
// of a record in the window is delivered (at least once); one delivered
// twice only when a daemon was killed between the first POST and the
// second (its taker died before it could report the delivery, which SPEC
// allows: receivers de-duplicate on Solocron-Delivery); no POST for an event
// no record has.
func TestScenario22NotificationsUnderKills(t *testing.T) {
	t.Parallel()
	bound(t, 90*time.Second)
	row := report(t, "22", "notifications of a job failing every second while daemons are killed (kill -9) and restarted; a receiver answering in 0–400 ms")
	hook := newSlowHook(t)
	c := newCluster(t, clusterConfig{Replicas: 3, Job: jobSpec{Sleep: 200 * time.Millisecond,
		Extra: []string{"-exit", "1"}, YAML: "notify: [hook]"},
		Top: fmt.Sprintf("notifications:\n  - name: hook\n    url: %s/\n    on: [failed, lease_lost, missed]\n    timeout: 2s\n", hook.srv.URL)})
	rng := rand.New(rand.NewPCG(22, 2))
	c.firstRun()
	from := nextInstant(time.Now())
	var kills []time.Time
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
		live := c.live()
		if len(live) < 2 {
			continue
		}
		r := live[rng.IntN(len(live))]
		kills = append(kills, r.kill9())
		time.AfterFunc(time.Duration(500+rng.IntN(1500))*time.Millisecond, func() { c.restart(r) })
	}
	to := time.Now().Truncate(time.Second).Add(-time.Second)
	time.Sleep(2 * time.Second)
	for _, r := range c.Replicas() {
		r.waitReady()
	}
	want := map[string]string{} // delivery key -> event, from the records
	notified := func(r scheduler.Run) (string, bool) {
		switch {
		case r.Decision == scheduler.Missed:
			return "missed", true
		case r.Outcome == scheduler.Failed:
			return "failed", true
		case r.Outcome == scheduler.LeaseLost:
			return "lease_lost", true
		}
		return "", false
	}
	var missing []string
	// A delivery whose taker died is due again a lease (2 × 2 s + 1 s)
	// later, and a failed POST after a backoff.
	ok := waitUntil(30*time.Second, func() bool {
		clear(want)
		missing = missing[:0]
		posts, _ := hook.got()
		for _, r := range c.history() {
			if r.Kind != scheduler.KindScheduled || r.ScheduledAt.Before(from) || r.ScheduledAt.After(to) {
				continue
			}
			if e, ok := notified(r); ok {
				want[r.ID+":"+e] = e
				if len(posts[r.ID+":"+e]) == 0 {
					missing = append(missing, r.ID+":"+e)
				}
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Errorf("%d events never delivered: %v", len(missing), missing)
	}
	posts, evs := hook.got()
	dups, excused := 0, 0
	for key, ats := range posts {
		if len(ats) == 0 {
			continue
		}
		in := instantOf(strings.TrimSuffix(key, ":"+evs[key]))
		if in.Before(from) || in.After(to) {
			continue
		}
		if _, ok := want[key]; !ok {
			t.Errorf("notification %s (%d POSTs) for an event no record of the window has", key, len(ats))
		}
		for i := 1; i < len(ats); i++ {
			dups++
			died := false
			for _, k := range kills {
				died = died || (!k.Before(ats[0]) && !k.After(ats[i]))
			}
			if died {
				excused++
				continue
			}
			t.Errorf("notification %s POSTed %d times (%v), and no daemon was killed in between", key, len(ats), ats)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "every job process to end", func() bool {
		for _, r := range c.led.Runs() {
			if r.End.IsZero() {
				return false
			}
		}
		return true
	})
	row.Runs, row.Duplicates = len(starts(c.led.Runs())), len(duplicates(c.led.Runs()))
	row.figure("%d kills; %d events, every one delivered; %d second POSTs, each after its taker was killed", len(kills), len(want), excused)
	t.Logf("%d kills, %d events, %d duplicate POSTs (%d excused by a kill)", len(kills), len(want), dups, excused)
}
