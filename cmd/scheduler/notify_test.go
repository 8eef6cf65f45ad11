package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// Three daemons, one job that fails, then recovers, and a local receiver
// that holds the first POST it gets open while the replica that sent it is
// killed: every failed run is posted exactly once (signed), the held one
// by another replica, and recovered once.
func TestNotifyDaemons(t *testing.T) {
	testkit.Long(t) // ~40 s; TestNotifyDeadTakerHandsOn and TestNotifyOncePerEventThreeReplicas (package scheduler) run by default
	tr := &transcript{}
	secret := "hook" + randomHex(t)
	srv := redistest.Start(t)
	rdb := srv.Client(t, nil)
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")

	var mu sync.Mutex
	got := map[string]int{} // delivery -> POSTs recorded
	var events []string
	badSig := 0
	held := make(chan string, 1)
	release := make(chan struct{})
	var first sync.Once
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		holding := false
		first.Do(func() { holding = true })
		if holding {
			held <- r.Header.Get(notify.HeaderDelivery)
			<-release
			w.WriteHeader(http.StatusServiceUnavailable) // its sender is dead by now anyway
			return
		}
		var n scheduler.Notification
		_ = json.Unmarshal(body, &n)
		mu.Lock()
		defer mu.Unlock()
		if !notify.Verify(secret, body, r.Header.Get(notify.HeaderSignature)) {
			badSig++
		}
		got[r.Header.Get(notify.HeaderDelivery)]++
		events = append(events, n.Event.String())
	}))
	defer rcv.Close()
	defer close(release)

	table := writeTable(t, dir, srv.Addr(), fmt.Sprintf(`
notifications:
  - name: ops
    url: %s/hook
    on: [failed, recovered]
    secret: ${HOOK_SECRET}
    timeout: 1s
jobs:
  - name: flaky
    schedule: "@every 1s"
    command: ["sh", "-c", "test -e %s"]
    notify: [ops]
`, rcv.URL, ok))
	cenv := env("HOOK_SECRET=" + secret)
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s", tr)
		}
	}()
	reps := map[string]replica{}
	for _, id := range []string{"r1", "r2", "r3"} {
		reps[id] = launchReplica(t, tr, cenv, table, id)
	}

	// The first POST is held open; the replica that sent it (the holder of
	// its lease, as the queue says) is killed.
	var heldKey string
	select {
	case heldKey = <-held:
	case <-time.After(90 * time.Second):
		t.Fatal("no notification within 90s")
	}
	ctx := context.Background()
	var sender string
	for f, v := range rdb.HGetAll(ctx, "solocron:{flaky}:notify:d").Val() {
		if strings.HasSuffix(f, "\no") && strings.HasSuffix(strings.TrimSuffix(f, "\no"), heldKey) {
			sender, _, _ = strings.Cut(v, "/")
		}
	}
	if _, ok := reps[sender]; !ok {
		t.Fatalf("cannot tell which replica holds %s (%q)", heldKey, sender)
	}
	reps[sender].signal(syscall.SIGKILL)
	reps[sender].wait(30 * time.Second)
	t.Logf("killed %s holding %s", sender, heldKey)

	// A few more failures, then the job recovers.
	failedRuns := func() map[string]bool {
		out := map[string]bool{}
		for _, s := range rdb.LRange(ctx, "solocron:{flaky}:history", 0, -1).Val() {
			var rec struct{ ID, Outcome string }
			_ = json.Unmarshal([]byte(s), &rec)
			if rec.Outcome == "failed" {
				out[rec.ID+":failed"] = true
			}
		}
		return out
	}
	testkit.WaitFor(t, 60*time.Second, "3 failed runs", func() bool { return len(failedRuns()) >= 3 })
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 90*time.Second, "every failed run and the recovery notified", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k := range failedRuns() {
			if got[k] == 0 {
				return false
			}
		}
		return strings.Contains(strings.Join(events, " "), "recovered")
	})
	time.Sleep(5 * time.Second) // a duplicate would show by now (the lease is 3s)
	mu.Lock()
	defer mu.Unlock()
	if got[heldKey] != 1 {
		t.Errorf("the held delivery %s was posted %d times after its sender died, want 1", heldKey, got[heldKey])
	}
	failed := failedRuns()
	for k, n := range got {
		if n != 1 {
			t.Errorf("%s posted %d times", k, n)
		}
		if strings.HasSuffix(k, ":failed") && !failed[k] {
			t.Errorf("%s posted, but the history has no such failed run", k)
		}
	}
	if recovered := strings.Count(strings.Join(events, " "), "recovered"); recovered != 1 {
		t.Errorf("recovered posted %d times, want 1", recovered)
	}
	if badSig > 0 {
		t.Errorf("%d posts with a bad signature", badSig)
	}
	if strings.Contains(tr.String(), secret) {
		t.Errorf("the hook secret shows in the output")
	}
}
