package admin_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The console's summary strip, runs page and pools page are in the JSON
// API too, behind the token: GET /api/v1/summary, /api/v1/runs (by outcome
// and time, across jobs) and /api/v1/pools.
func TestSummaryRunsPoolsAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		long := jobs.Func(func(ctx context.Context) error {
			select {
			case <-time.After(time.Hour):
			case <-ctx.Done():
			}
			return nil
		})
		tab := []scheduler.Job{
			{Name: "a", Schedule: "@every 1s", Handler: long, Pool: "exports", PoolSize: 1},
			{Name: "b", Schedule: "@every 1s", Handler: long, Pool: "exports", PoolSize: 1},
			{Name: "broken", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return errors.New("exit status 3") })},
			{Name: "fine", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil })},
			{Name: "off", Schedule: "@every 1s", Paused: true, Handler: jobs.Func(func(context.Context) error { return nil })},
		}
		s, err := scheduler.New(schedtest.RedisStore(t, c), tab, scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		// Between two instants: the instant jobs' runs of 5 s have ended
		// (read on the instant, they could still be running, counted in
		// Running as CI once saw under load: Running 3).
		time.Sleep(5*time.Second + 500*time.Millisecond)
		h := admin.NewHandler(admin.Config{Jobs: s.Jobs, Control: s.Control(), ReplicaID: "r1", Logger: quiet, Listen: "127.0.0.1:9090", Token: "tok", ReadOnly: true})
		get := func(path, auth string) answer {
			r := httptest.NewRequest("GET", path, nil)
			r.Host = "127.0.0.1:9090"
			if auth != "" {
				r.Header.Set("Authorization", auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return answer{code: w.Code, hdr: w.Header(), body: w.Body.String()}
		}
		for _, path := range []string{"/api/v1/summary", "/api/v1/runs", "/api/v1/pools"} {
			if a := get(path, ""); a.code != 401 {
				t.Errorf("%s without the token: %d", path, a.code)
			}
		}

		var sum admin.Summary
		get("/api/v1/summary", "Bearer tok").decode(t, &sum)
		if sum != (admin.Summary{Jobs: 5, Running: 1, BadHour: 1, BadDay: 1, Paused: 1}) {
			t.Errorf("summary %+v", sum)
		}

		var bad admin.AcrossRuns
		get("/api/v1/runs?outcome=bad&since=1h", "Bearer tok").decode(t, &bad)
		if len(bad.Runs) == 0 {
			t.Fatal("no bad run in the last hour")
		}
		for _, r := range bad.Runs {
			if r.Job != "broken" || r.Outcome != scheduler.Failed {
				t.Errorf("?outcome=bad lists %s %s", r.ID, r.Outcome)
			}
		}
		var all admin.AcrossRuns
		get("/api/v1/runs?limit=1000", "Bearer tok").decode(t, &all)
		seen := map[string]bool{}
		for i, r := range all.Runs {
			seen[r.Job] = true
			if i > 0 && r.ScheduledAt.After(all.Runs[i-1].ScheduledAt) {
				t.Errorf("runs out of order: %s after %s", r.ID, all.Runs[i-1].ID)
			}
		}
		for _, j := range []string{"a", "broken", "fine", "off"} {
			if !seen[j] {
				t.Errorf("no run of %s across jobs: %v", j, seen)
			}
		}
		var running admin.AcrossRuns
		get("/api/v1/runs?outcome=running", "Bearer tok").decode(t, &running)
		if len(running.Runs) != 1 || running.Runs[0].Outcome != scheduler.Running {
			t.Errorf("running runs: %+v", running.Runs)
		}
		get("/api/v1/runs?outcome=nope", "Bearer tok").wantError(t, 400, "outcome must be one of")
		get("/api/v1/runs?since=yesterday", "Bearer tok").wantError(t, 400, "since must be")

		var pools admin.PoolList
		a := get("/api/v1/pools", "Bearer tok")
		a.decode(t, &pools)
		if len(pools.Pools) != 1 {
			t.Fatalf("pools: %s", a.body)
		}
		if p := pools.Pools[0]; p.Name != "exports" || p.Size != 1 || p.Used != 1 || len(p.Holders) != 1 || strings.Join(p.Jobs, ",") != "a,b" {
			t.Errorf("pool %+v", p)
		}
	})
}
