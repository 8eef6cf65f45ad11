package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

const token = "s3cret-admin-token"

// bearer is the Authorization header with the token.
const bearer = "Bearer " + token

// secrets are values of the table that no answer may carry.
var secrets = []string{token, "env-secret-value", "argv-secret", "url-secret", "header-secret"}

var quiet = slog.New(slog.DiscardHandler)

type fixture struct {
	t     *testing.T
	h     http.Handler
	sched *scheduler.Scheduler
	ready error
	stop  func()
}

func table() []scheduler.Job {
	return []scheduler.Job{
		{Name: "tick", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil })},
		{Name: "cmd", Schedule: "0 0 12 * * *", Timezone: "Asia/Shanghai", Paused: true,
			Handler: &jobs.Command{Args: []string{"echo", "argv-secret"}, Env: map[string]string{"PASSWORD": "env-secret-value"}}},
		{Name: "hook", Schedule: "@every 1h", Offset: 15 * time.Minute, Timeout: time.Minute,
			Handler: &jobs.HTTP{URL: "https://user:url-secret@example.invalid/", Headers: map[string]string{"Authorization": "Bearer header-secret"}}},
	}
}

// newFixture runs one replica of table() on an in-memory store inside the
// caller's synctest bubble, for 3.5 s of fake time, and serves the API over it.
func newFixture(t *testing.T, tok string) *fixture {
	t.Helper()
	m, c := redistest.MiniPipe(t)
	s, err := scheduler.New(schedtest.RedisStore(t, c), table(), scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	f := &fixture{t: t, sched: s}
	f.stop = func() { cancel(); <-done }
	t.Cleanup(f.stop)
	f.h = admin.NewHandler(admin.Config{
		Jobs: s.Jobs, Control: s.Control(), ReplicaID: s.ReplicaID(), Token: tok, Logger: quiet, Listen: "127.0.0.1:9090",
		Ready:   func() error { return f.ready },
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "solocron_runs_total 1\n") }),
	})
	// tick's state is new: its instants under the data-loss floor (max
	// skew + claim ahead, 2.5 s) are not its; 3s and 4s run.
	time.Sleep(4500 * time.Millisecond)
	_ = m
	return f
}

type answer struct {
	code int
	hdr  http.Header
	body string
}

func (f *fixture) do(method, path, auth string, hdr ...string) answer {
	f.t.Helper()
	r := httptest.NewRequest(method, path, nil)
	r.Host = "127.0.0.1:9090" // the listen address; httptest's example.com is refused
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	a := answer{code: w.Code, hdr: w.Header(), body: w.Body.String()}
	for _, s := range secrets {
		if strings.Contains(a.body, s) {
			f.t.Errorf("%s %s: answer carries the secret %q: %s", method, path, s, a.body)
		}
	}
	return a
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if ct := a.hdr.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("answer is not the JSON expected: %v\n%s", err, a.body)
	}
}

func (a answer) wantError(t *testing.T, code int, contains string) {
	t.Helper()
	if a.code != code {
		t.Errorf("status %d, want %d: %s", a.code, code, a.body)
	}
	var e struct{ Error string }
	a.decode(t, &e)
	if !strings.Contains(e.Error, contains) {
		t.Errorf("error %q does not mention %q", e.Error, contains)
	}
}

func TestProbesAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		var st map[string]string
		a := f.do("GET", "/healthz", "")
		if a.code != 200 {
			t.Errorf("/healthz: %d %s", a.code, a.body)
		}
		a.decode(t, &st)
		if st["status"] != "ok" {
			t.Errorf("/healthz: %v", st)
		}
		if a = f.do("GET", "/readyz", ""); a.code != 200 {
			t.Errorf("/readyz while ready: %d %s", a.code, a.body)
		}
		f.ready = errors.New("store has not answered for 5s")
		a = f.do("GET", "/readyz", "")
		if a.code != 503 {
			t.Errorf("/readyz while not ready: %d, want 503", a.code)
		}
		a.decode(t, &st)
		if st["error"] != "store has not answered for 5s" {
			t.Errorf("/readyz does not give the reason: %v", st)
		}
		if a = f.do("GET", "/metrics", ""); a.code != 200 || a.body != "solocron_runs_total 1\n" {
			t.Errorf("/metrics: %d %q", a.code, a.body)
		}
		if a = f.do("HEAD", "/healthz", ""); a.code != 200 {
			t.Errorf("HEAD /healthz: %d", a.code)
		}
		a = f.do("POST", "/healthz", "")
		a.wantError(t, 405, "not allowed")
		if got := a.hdr.Get("Allow"); got != "GET, HEAD" {
			t.Errorf("Allow %q", got)
		}
		f.do("GET", "/nothing/here", "").wantError(t, 404, "no such endpoint")
		f.do("GET", "/api/v1/jobs/", bearer).wantError(t, 404, "no such endpoint")
	})
}

func TestReadEndpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)

		var list admin.JobList
		a := f.do("GET", "/api/v1/jobs", bearer)
		if a.code != 200 {
			t.Fatalf("/api/v1/jobs: %d %s", a.code, a.body)
		}
		a.decode(t, &list)
		if list.Replica != "r1" || len(list.Jobs) != 3 {
			t.Fatalf("list: %+v", list)
		}
		byName := map[string]admin.JobInfo{}
		for _, j := range list.Jobs {
			byName[j.Name] = j
		}
		tick, cmd, hook := byName["tick"], byName["cmd"], byName["hook"]
		if tick.Kind != "func" || cmd.Kind != "command" || hook.Kind != "http" {
			t.Errorf("kinds %q %q %q", tick.Kind, cmd.Kind, hook.Kind)
		}
		if tick.Paused == nil || *tick.Paused || tick.Running == nil || tick.LastRun == nil || tick.LastRun.Outcome != scheduler.Succeeded {
			t.Errorf("tick: %+v", tick)
		}
		if !cmd.PausedInTable || cmd.Timezone != "Asia/Shanghai" || cmd.Schedule != "0 0 12 * * *" || cmd.Concurrency != 1 || cmd.Overlap != "skip" || cmd.Lease != "30s" {
			t.Errorf("cmd: %+v", cmd)
		}
		if h := cmd.Next.In(time.FixedZone("CST", 8*3600)); h.Hour() != 12 || h.Minute() != 0 || !cmd.Next.After(time.Now()) {
			t.Errorf("cmd next %v is not the coming noon in Shanghai", cmd.Next)
		}
		if hook.Offset != "15m0s" || hook.Timeout != "1m0s" || hook.Next.Minute() != 15 {
			t.Errorf("hook: %+v", hook)
		}
		for _, leak := range []string{"args", "env", "url", "headers", "command", "body"} {
			if strings.Contains(a.body, `"`+leak+`":`) {
				t.Errorf("the listing has a %q field: %s", leak, a.body)
			}
		}

		var js admin.JobStatus
		a = f.do("GET", "/api/v1/jobs/tick?limit=2", bearer)
		a.decode(t, &js)
		if a.code != 200 || js.Job.Name != "tick" || js.Status.Job != "tick" || len(js.Status.History) != 2 || js.Status.Running == nil {
			t.Errorf("job status: %d %s", a.code, a.body)
		}
		f.do("GET", "/api/v1/jobs/nope", bearer).wantError(t, 404, `no job "nope"`)
		f.do("GET", "/api/v1/jobs/nope/runs", bearer).wantError(t, 404, `no job "nope"`)

		var runs admin.RunList
		a = f.do("GET", "/api/v1/jobs/tick/runs?limit=2", bearer)
		a.decode(t, &runs)
		if a.code != 200 || runs.Job != "tick" || len(runs.Runs) != 2 {
			t.Fatalf("runs: %d %s", a.code, a.body)
		}
		if r0, r1 := runs.Runs[0], runs.Runs[1]; !r0.ScheduledAt.After(r1.ScheduledAt) || r0.Replica != "r1" || r0.FencingToken <= r1.FencingToken {
			t.Errorf("runs not newest first with rising tokens: %+v", runs.Runs)
		}
		a = f.do("GET", "/api/v1/jobs/cmd/runs", bearer)
		a.decode(t, &runs)
		if a.code != 200 || runs.Runs == nil || len(runs.Runs) != 0 {
			t.Errorf("runs of a job that never ran: %d %s (want an empty list)", a.code, a.body)
		}
		for _, q := range []string{"0", "-1", "x", "1001"} {
			f.do("GET", "/api/v1/jobs/tick/runs?limit="+q, bearer).wantError(t, 400, "limit")
		}
		a = f.do("DELETE", "/api/v1/jobs/tick", bearer)
		a.wantError(t, 405, "not allowed")
	})
}

func TestMutationsNeedTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		for _, ep := range []string{"trigger", "pause", "resume"} {
			path := "/api/v1/jobs/tick/" + ep
			a := f.do("POST", path, "")
			a.wantError(t, 401, "Bearer")
			if a.hdr.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", ep)
			}
			f.do("POST", path, "Basic "+token).wantError(t, 401, "Bearer")
			f.do("POST", path, "Bearer").wantError(t, 401, "Bearer")
			f.do("POST", path, "Bearer wrong").wantError(t, 403, "wrong token")
			f.do("POST", path, "Bearer "+token+"x").wantError(t, 403, "wrong token")
			// A browser page on another origin is refused even with the token.
			f.do("POST", path, "Bearer "+token, "Sec-Fetch-Site", "cross-site").wantError(t, 403, "cross-origin")
			a = f.do("GET", path, "Bearer "+token)
			a.wantError(t, 405, "not allowed")
			if a.hdr.Get("Allow") != "POST" {
				t.Errorf("Allow %q", a.hdr.Get("Allow"))
			}
			f.do("POST", "/api/v1/jobs/nope/"+ep, "Bearer "+token).wantError(t, 404, "no job")
		}
		ctl := f.sched.Control()
		if st, _ := ctl.Status(context.Background(), "tick", 1); st.Paused {
			t.Fatal("a refused pause paused the job")
		}

		var p admin.Paused
		f.send("POST", "/api/v1/jobs/tick/pause", bearer, `{"reason": 7}`).wantError(t, 400, "the body must be")
		a := f.send("POST", "/api/v1/jobs/tick/pause", "Bearer "+token, `{"reason": "disk full on db2"}`)
		a.decode(t, &p)
		if want := (admin.Paused{Job: "tick", Paused: true, Why: "disk full on db2 (paused by api from 192.0.2.1)"}); a.code != 200 || p != want {
			t.Errorf("pause: %d %s, want %+v", a.code, a.body, want)
		}
		var list admin.JobList
		f.do("GET", "/api/v1/jobs", bearer).decode(t, &list)
		if list.Jobs[2].Name != "tick" || !*list.Jobs[2].Paused || list.Jobs[2].PausedWhy != p.Why {
			t.Errorf("after pause the listing says %s", f.do("GET", "/api/v1/jobs", bearer).body)
		}
		a = f.do("POST", "/api/v1/jobs/tick/resume", "bearer "+token) // the scheme is case-insensitive
		a.decode(t, &p)
		if a.code != 200 || p.Paused {
			t.Errorf("resume: %d %s", a.code, a.body)
		}
		if st, _ := ctl.Status(context.Background(), "tick", 1); st.Paused {
			t.Error("still paused after resume")
		}

		var tr admin.Triggered
		a = f.do("POST", "/api/v1/jobs/cmd/trigger", "Bearer "+token)
		a.decode(t, &tr)
		if a.code != 202 || tr.Job != "cmd" || !strings.HasPrefix(tr.RunID, "cmd@manual-") {
			t.Fatalf("trigger: %d %s", a.code, a.body)
		}
	})
}

func TestNoTokenLeavesMutationsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "")
		if a := f.do("POST", "/api/v1/jobs/tick/pause", ""); a.code != 200 {
			t.Errorf("pause without a configured token: %d %s", a.code, a.body)
		}
		f.do("POST", "/api/v1/jobs/tick/pause", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site").
			wantError(t, 403, "cross-origin")
	})
}

func TestStoreDownIs503(t *testing.T) {
	port, err := redistest.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	s, err := scheduler.New(schedtest.RedisStore(t, c), table(), scheduler.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	h := admin.NewHandler(admin.Config{Jobs: s.Jobs, Control: s.Control(), Ready: s.Ready, Logger: quiet, StoreTimeout: 2 * time.Second})
	f := &fixture{t: t, h: h}
	f.do("GET", "/api/v1/jobs", bearer).wantError(t, 503, "store unavailable")
	f.do("GET", "/api/v1/jobs/tick", bearer).wantError(t, 503, "store unavailable")
	f.do("GET", "/api/v1/jobs/tick/runs", bearer).wantError(t, 503, "store unavailable")
	// An action the store failed to answer may have been applied (Redis
	// runs what it had read): the answer says so, a read's does not.
	f.do("POST", "/api/v1/jobs/tick/trigger", "").wantError(t, 503, "whether the action was applied is unknown")
	if a := f.do("GET", "/api/v1/jobs/tick", bearer); strings.Contains(a.body, "applied") {
		t.Errorf("a read's 503 speaks of an action: %s", a.body)
	}
	f.do("GET", "/readyz", "").wantError(t, 503, "store not reached")
	if a := f.do("GET", "/healthz", ""); a.code != 200 {
		t.Errorf("/healthz with the store down: %d, want 200", a.code)
	}
}

func TestServerTimeouts(t *testing.T) {
	srv := admin.NewServer(http.NotFoundHandler(), quiet)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("server without timeouts: %+v", srv)
	}
}

// A job's pending manual runs are bounded: beyond the bound a trigger is
// answered 429 with a clear message.
func TestTriggerQueueFullIs429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		for i := range scheduler.MaxPendingManual {
			if a := f.do("POST", "/api/v1/jobs/cmd/trigger", "Bearer "+token); a.code != 202 {
				t.Fatalf("trigger %d: %d %s", i, a.code, a.body)
			}
		}
		f.do("POST", "/api/v1/jobs/cmd/trigger", "Bearer "+token).wantError(t, 429, "manual runs waiting")
	})
}
