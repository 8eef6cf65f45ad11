package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// send is fixture.do with a body.
func (f *fixture) send(method, path, auth, body string) answer {
	f.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = "127.0.0.1:9090"
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return answer{code: w.Code, hdr: w.Header(), body: w.Body.String()}
}

// POST/GET/DELETE /api/v1/jobs/{name}/backfill: the token, read-only and
// bad input are answered as for trigger; a backfill runs to its end and
// shows in the job's status.
func TestBackfillAPI(t *testing.T) {
	srv := miniredis.RunT(t)
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), table(),
		scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(50*time.Millisecond))
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

	from := time.Now().Add(-2 * time.Hour).Truncate(time.Minute).UTC()
	body := `{"from": "` + from.Format(time.RFC3339) + `", "to": "` + from.Add(29*time.Second).Format(time.RFC3339) + `", "parallel": 4}`
	const path = "/api/v1/jobs/tick/backfill"
	f.send("POST", path, "", body).wantError(t, http.StatusUnauthorized, "")
	if a := f.send("POST", path, "Bearer wrong", body); a.code != http.StatusForbidden {
		t.Errorf("wrong token: %d", a.code)
	}
	fro.send("POST", path, bearer, body).wantError(t, http.StatusForbidden, "read-only")
	fro.send("DELETE", path, bearer, "").wantError(t, http.StatusForbidden, "read-only")
	f.send("POST", "/api/v1/jobs/nope/backfill", bearer, body).wantError(t, http.StatusNotFound, `no job "nope"`)
	f.send("POST", path, bearer, `{"from": "yesterday"}`).wantError(t, http.StatusBadRequest, "the body must be")
	f.send("POST", path, bearer, `{"from": "`+from.Format(time.RFC3339)+`", "to": "`+from.Add(-time.Hour).Format(time.RFC3339)+`"}`).
		wantError(t, http.StatusBadRequest, "is after to")
	f.send("POST", path, bearer, `{"from": "2020-01-01T00:00:00Z", "to": "`+from.Format(time.RFC3339)+`"}`).
		wantError(t, http.StatusBadRequest, "more than 100000 instants")
	f.send("GET", path, bearer, "").wantError(t, http.StatusNotFound, "has no backfill")
	f.send("DELETE", path, bearer, "").wantError(t, http.StatusNotFound, "no backfill going on")
	f.send("PUT", path, bearer, "").wantError(t, http.StatusMethodNotAllowed, "not allowed")

	a := f.send("POST", path, bearer, body)
	var b scheduler.Backfill
	a.decode(t, &b)
	if a.code != http.StatusAccepted || b.Total != 30 || b.Parallel != 4 {
		t.Fatalf("start: %d %s", a.code, a.body)
	}
	f.send("POST", path, bearer, body).wantError(t, http.StatusConflict, "going on already")
	testkit.WaitFor(t, 30*time.Second, "backfill done", func() bool {
		a := f.send("GET", path, bearer, "")
		a.decode(t, &b)
		return a.code == 200 && b.Done()
	})
	if b.Started+b.Already != 30 || b.Decided != 30 {
		t.Errorf("backfill ended %+v", b)
	}
	var st struct {
		Status scheduler.Status `json:"status"`
	}
	a = f.send("GET", "/api/v1/jobs/tick", bearer, "")
	a.decode(t, &st)
	if st.Status.Backfill == nil || st.Status.Backfill.Total != 30 {
		t.Errorf("job status without its backfill: %s", a.body)
	}
}

// On Redlock, which cannot backfill, start, read and cancel all answer 501
// saying so (the scheduler's "scheduler: " prefix left out).
func TestBackfillAPIRedlock(t *testing.T) {
	var cs []redis.UniversalClient
	for range 3 {
		cs = append(cs, redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()}))
	}
	s, err := scheduler.New(schedtest.RedlockStore(t, cs), table(), scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, sched: s, h: admin.NewHandler(admin.Config{Jobs: s.Jobs, Control: s.Control(), ReplicaID: "r1",
		Token: token, Logger: quiet, Listen: "127.0.0.1:9090", StoreTimeout: time.Second})}
	const path = "/api/v1/jobs/tick/backfill"
	body := `{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:00:10Z"}`
	for _, a := range []answer{f.send("POST", path, bearer, body), f.send("GET", path, bearer, ""), f.send("DELETE", path, bearer, "")} {
		a.wantError(t, http.StatusNotImplemented, "this store cannot backfill (Redlock")
		if strings.Contains(a.body, "scheduler:") {
			t.Errorf("answer keeps the package prefix: %s", a.body)
		}
	}
}
