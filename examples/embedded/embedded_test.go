package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/scheduler"
)

// The service runs in-process against a real redis-server, with the job
// table shipped in solocron.yaml. A reindex asked for through the cluster
// controls runs on it: the Go function sees its run in its context, and its
// index is served over HTTP. SIGTERM (here: the context) stops it cleanly.
func TestReindexRuns(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr()+"/0")
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(t.Output(), nil))) // shown with -v or on failure
	t.Cleanup(func() { slog.SetDefault(prev) })

	// Pause the schedule (every :00 and :30) so that the only run is the one
	// the test asks for; a manual trigger ignores the pause.
	ctl := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	if err := ctl.Pause(t.Context(), "reindex"); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, "solocron.yaml", "inventory-1", ln) }()

	// waitFor polls cond until it holds, for at most 10 seconds, and fails
	// at once if the service stopped (a bad job table, say).
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			select {
			case err := <-done:
				t.Fatalf("the service stopped while waiting for %s: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	waitFor("the replica to be ready", func() bool {
		code, _ := call(t, http.MethodGet, base+"/readyz")
		return code == http.StatusOK
	})
	waitFor("the scheduler to be healthy", func() bool {
		code, _ := call(t, http.MethodGet, base+"/healthz/scheduler")
		return code == http.StatusOK
	})
	for _, add := range []string{"/stock/widget?add=3", "/stock/gadget?add=12"} {
		if code, body := call(t, http.MethodPost, base+add); code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", add, code, body)
		}
	}

	id, err := ctl.Trigger(t.Context(), "reindex")
	if err != nil {
		t.Fatal(err)
	}
	var idx Index
	waitFor("the reindex of run "+id, func() bool {
		code, body := call(t, http.MethodGet, base+"/low-stock")
		return code == http.StatusOK && json.Unmarshal(body, &idx) == nil && idx.RunID == id
	})
	if !slices.Equal(idx.LowStock, []string{"widget"}) {
		t.Errorf("low stock = %q; want [widget]", idx.LowStock)
	}
	if idx.FencingToken <= 0 || idx.Attempt != 1 || idx.Replica != "inventory-1" {
		t.Errorf("the job saw token %d, attempt %d, replica %q; want a token, attempt 1, inventory-1",
			idx.FencingToken, idx.Attempt, idx.Replica)
	}
	waitFor("run "+id+" to be recorded succeeded", func() bool {
		r, err := ctl.Get(t.Context(), id)
		return err == nil && r != nil && r.Outcome == scheduler.Succeeded
	})

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after shutdown; want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the service did not stop within 15s of its shutdown signal")
	}
}

var client = &http.Client{Timeout: 2 * time.Second}

// call sends one request; a transport error gives status 0.
func call(t *testing.T, method, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// The scheduler's store down does not take the web service out of its load
// balancer: /readyz stays 200 while /healthz/scheduler says 503.
func TestSchedulerStoreDownKeepsTheServiceReady(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr()+"/0") // the app's own data: up
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there: the scheduler's store is down
	table := filepath.Join(t.TempDir(), "solocron.yaml")
	if err := os.WriteFile(table, []byte("store: {url: \"redis://"+deadAddr+"/0\"}\njobs:\n  - {name: reindex, schedule: \"@every 30s\", func: reindex}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, table, "inventory-1", ln) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := call(t, http.MethodGet, base+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d with the scheduler's store down; want 200: the web service can serve", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := call(t, http.MethodGet, base+"/healthz/scheduler"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz/scheduler = %d %s with its store down; want 503", code, body)
	}
}
