package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// POST /api/v1/runs/{id}/cancel and retry: the token and read_only are
// honoured; a running run ends cancelled with who asked; an ended run is
// retried as a manual run linked to it; each wrong state has its code.
func TestRunActionsAPI(t *testing.T) {
	srv := miniredis.RunT(t)
	tab := []scheduler.Job{{Name: "block", Schedule: "@every 1h", Lease: 3 * time.Second,
		Handler: jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })}}
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), tab,
		scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(50*time.Millisecond),
		scheduler.WithShutdownGrace(time.Second)) // block ends only when cancelled: not the default 30 s at cleanup
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	cfg := admin.Config{Jobs: s.Jobs, Control: s.Control(), ReplicaID: "r1", Token: token, Logger: quiet, Listen: "127.0.0.1:9090"}
	f := &fixture{t: t, sched: s, h: admin.NewHandler(cfg)}
	ro := cfg
	ro.ReadOnly = true
	fro := &fixture{t: t, sched: s, h: admin.NewHandler(ro)}

	id, err := s.Control().Trigger(t.Context(), "block")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the run to start", func() bool {
		r, _ := s.Control().Get(t.Context(), id)
		return r != nil && r.Outcome == scheduler.Running
	})
	path := func(id, action string) string { return "/api/v1/runs/" + url.PathEscape(id) + "/" + action }
	for _, action := range []string{"cancel", "retry"} {
		f.send("POST", path(id, action), "", "").wantError(t, http.StatusUnauthorized, "")
		if a := f.send("POST", path(id, action), "Bearer wrong", ""); a.code != http.StatusForbidden {
			t.Errorf("%s with a wrong token: %d", action, a.code)
		}
		fro.send("POST", path(id, action), bearer, "").wantError(t, http.StatusForbidden, "read-only: admin.read_only refuses every action")
		f.send("GET", path(id, action), bearer, "").wantError(t, http.StatusMethodNotAllowed, "not allowed")
		f.send("POST", path("block@manual-nosuch", action), bearer, "").wantError(t, http.StatusNotFound, "no such run")
		f.send("POST", path("no id", action), bearer, "").wantError(t, http.StatusBadRequest, "not a run id")
	}
	f.send("POST", path(id, "retry"), bearer, "").wantError(t, http.StatusConflict, "has not ended")
	f.send("POST", path(id, "cancel"), bearer, `{"by": 1}`).wantError(t, http.StatusBadRequest, `{"by": "..."}`)

	var got admin.RunAction
	a := f.send("POST", path(id, "cancel"), bearer, "")
	a.decode(t, &got)
	if a.code != http.StatusAccepted || got.RunID != id || got.CancelledBy != "api from 192.0.2.1" {
		t.Fatalf("cancel: %d %s", a.code, a.body)
	}
	var run *scheduler.Run
	testkit.WaitFor(t, 10*time.Second, "the run to end", func() bool {
		run, _ = s.Control().Get(t.Context(), id)
		return run != nil && run.Outcome != scheduler.Running
	})
	if run.Outcome != scheduler.Cancelled || run.CancelledBy != "api from 192.0.2.1" {
		t.Errorf("after cancel: %s by %q", run.Outcome, run.CancelledBy)
	}
	f.send("POST", path(id, "cancel"), bearer, "").wantError(t, http.StatusConflict, "is cancelled")

	// A client acting for someone names them: "<by> via api from <address>".
	a = f.send("POST", path(id, "retry"), bearer, `{"by": "cli ops@host"}`)
	a.decode(t, &got)
	if a.code != http.StatusAccepted || got.RetryOf != id || got.RunID == id {
		t.Fatalf("retry: %d %s", a.code, a.body)
	}
	testkit.WaitFor(t, 10*time.Second, "the retry to run", func() bool {
		r, _ := s.Control().Get(t.Context(), got.RunID)
		return r != nil && r.Outcome == scheduler.Running && r.RetryOf == id && r.RetriedBy == "cli ops@host via api from 192.0.2.1"
	})
}
