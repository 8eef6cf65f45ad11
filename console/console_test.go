package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

const hostile = `<script>alert("pwned")</script><img src=x onerror=alert(1)>`

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// cluster is replicas on one miniredis, with a table whose "evil" job
// prints markup and fails.
type cluster struct {
	srv   *miniredis.Miniredis
	ctl   *scheduler.Control
	sched []*scheduler.Scheduler
	table []scheduler.Job
}

func table() []scheduler.Job {
	return []scheduler.Job{
		{Name: "evil", Schedule: "@every 1h", Handler: jobs.Func(func(ctx context.Context) error {
			fmt.Fprint(jobs.Output(ctx), "OUT"+hostile)
			return errors.New(hostile)
		})},
		{Name: "nightly-report", Schedule: "30 2 * * 1-5", Timezone: "Europe/Paris", Handler: jobs.Func(func(context.Context) error { return nil })},
		{Name: "sweep", Schedule: "@every 1h", Handler: jobs.Func(func(context.Context) error { return nil })},
	}
}

func newCluster(t *testing.T, replicas int) *cluster {
	t.Helper()
	return newClusterOf(t, replicas, table())
}

// newClusterOf is newCluster with another table.
func newClusterOf(t *testing.T, replicas int, tab []scheduler.Job) *cluster {
	t.Helper()
	c := &cluster{srv: miniredis.RunT(t), table: tab}
	c.ctl = schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})).Control()
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range replicas {
		s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})), c.table,
			scheduler.WithReplicaID(fmt.Sprintf("replica-%d", i+1)), scheduler.WithLogger(quiet),
			scheduler.WithSyncInterval(100*time.Millisecond), scheduler.WithVersion("test"),
			// A test's cleanup stops the replicas: jobs that block until
			// cancelled are cancelled after a second, not the default 30 s.
			scheduler.WithShutdownGrace(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		c.sched = append(c.sched, s)
		wg.Go(func() { _ = s.Run(ctx) })
	}
	return c
}

// runOnce triggers job and waits for its record.
func (c *cluster) runOnce(t *testing.T, job string) string {
	t.Helper()
	id, err := c.ctl.Trigger(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "run "+id+" to finish", func() bool {
		r, _ := c.ctl.Get(t.Context(), id)
		return r != nil && r.Outcome != "" && r.Outcome != scheduler.Running
	})
	return id
}

func (c *cluster) console(t *testing.T, cfg console.Config) http.Handler {
	t.Helper()
	cfg.Control, cfg.Jobs, cfg.Logger = c.ctl, func() []scheduler.Job { return c.table }, quiet
	h, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string, mod ...func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for _, m := range mod {
		m(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestPagesEscapeHostileOutput(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	id := c.runOnce(t, "evil")
	h := c.console(t, console.Config{Replica: "replica-1"})
	for _, path := range []string{"/", "/jobs/evil", "/runs/" + url.PathEscape(id), "/replicas",
		"/jobs/" + url.PathEscape(hostile), "/runs/" + url.PathEscape(hostile), "/?q=" + url.QueryEscape(hostile)} {
		w := get(t, h, path)
		body := w.Body.String()
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: markup from a job or a URL reached the page unescaped", path)
		}
		if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no CSP", path)
		}
	}
	w := get(t, h, "/runs/"+url.PathEscape(id))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `<pre class="output" id="output">OUT&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;`) {
		t.Errorf("run page: %d, the output is not shown as text:\n%s", w.Code, w.Body)
	}
	if w := get(t, h, "/jobs/"+url.PathEscape(hostile)); w.Code != 404 {
		t.Errorf("unknown job: %d", w.Code)
	}
}

func TestJobsPage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	c.runOnce(t, "evil")
	c.runOnce(t, "sweep")
	h := c.console(t, console.Config{})
	body := get(t, h, "/").Body.String()
	for _, want := range []string{
		`href="/jobs/nightly-report"`, "at 02:30 on Mon–Fri", "Europe/Paris", // schedule in words, zone
		"✗</span> failed", "✓</span> succeeded", "never ran", // outcome by symbol and words, not colour alone
		"100% of 1", "0% of 1", "3 of 3 jobs",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("jobs page lacks %q", want)
		}
	}
	if body := get(t, h, "/?outcome=failed").Body.String(); !strings.Contains(body, "1 of 3 jobs") || !strings.Contains(body, `/jobs/evil"`) {
		t.Errorf("outcome filter: %s", regexp.MustCompile(`\d+ of \d+ jobs`).FindString(body))
	}
	if body := get(t, h, "/?q=REPORT").Body.String(); !strings.Contains(body, "1 of 3 jobs") {
		t.Error("name filter is not case-insensitive")
	}
}

func TestJobPageTimelineAndPaging(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2)
	for range 27 {
		c.runOnce(t, "sweep")
	}
	h := c.console(t, console.Config{})
	body := get(t, h, "/jobs/sweep").Body.String()
	// Twice: the wide timeline and the phone's; runs too close to draw
	// apart share a bar that counts them.
	n := 0
	for _, m := range regexp.MustCompile(`<g class="bar ok[^"]*" data-runs="(\d+)"`).FindAllStringSubmatch(body, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	if n != 2*27 {
		t.Errorf("the timelines' bars stand for %d succeeded runs, want 27 each", n)
	}
	if !strings.Contains(body, "<svg") || !strings.Contains(body, `rel="next"`) || strings.Contains(body, `rel="prev"`) {
		t.Error("job page: no timeline or wrong pager on page 1")
	}
	if n := strings.Count(body, "<tr><td class=\"run\"><a href=\"/runs/"); n != 25 {
		t.Errorf("page 1 lists %d runs, want 25", n)
	}
	body = get(t, h, "/jobs/sweep?page=2").Body.String()
	if n := strings.Count(body, "<tr><td class=\"run\"><a href=\"/runs/"); n != 2 || !strings.Contains(body, `rel="prev"`) || strings.Contains(body, `rel="next"`) {
		t.Errorf("page 2 lists %d runs, want 2 (and a link back only)", n)
	}
	if w := get(t, h, "/jobs/sweep?page=-1"); w.Code != 400 {
		t.Errorf("page=-1: %d", w.Code)
	}
	if n := strings.Count(body, "<li>"); n < 10 {
		t.Errorf("next instants: %d items", n)
	}
}

func TestReplicasPageFlagsDifferentTables(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2)
	other, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})), c.table[:2],
		scheduler.WithReplicaID("stale"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = other.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	h := c.console(t, console.Config{})
	testkit.WaitFor(t, 10*time.Second, "three replicas", func() bool {
		return strings.Contains(get(t, h, "/replicas").Body.String(), "3 live replicas")
	})
	if body := get(t, h, "/").Body.String(); !strings.Contains(body, "1 of 3 replicas run a different job table") {
		t.Error("the jobs page does not warn that a replica's table differs")
	}
	body := get(t, h, "/replicas").Body.String()
	if !strings.Contains(body, "1 replica runs a different job table") || strings.Count(body, `class="differs"`) != 1 ||
		!strings.Contains(body, "⚠ differs") {
		t.Errorf("the stale replica is not flagged:\n%s", body)
	}
}

// signIn posts the token through a real server and returns a client
// holding the session.
func signIn(t *testing.T, srv *httptest.Server, token string) (*http.Client, *http.Response) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", srv.URL+"/signin", strings.NewReader(url.Values{"token": {token}, "next": {"/jobs/sweep"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return cl, resp
}

func TestSignInSessionAndActions(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	h := c.console(t, console.Config{Token: "s3cret-token"})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// Without a session: every page sends to the sign-in form, which never
	// puts the token in a URL.
	w := get(t, h, "/jobs/sweep?page=1")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/signin?next=%2Fjobs%2Fsweep%3Fpage%3D1" {
		t.Fatalf("no session: %d %q", w.Code, w.Header().Get("Location"))
	}
	form := get(t, h, "/signin").Body.String()
	if !strings.Contains(form, `method="post"`) || !strings.Contains(form, `type="password"`) {
		t.Error("the sign-in form does not post a password field")
	}
	if _, resp := signIn(t, srv, "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}

	cl, resp := signIn(t, srv, "s3cret-token")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/sweep" {
		t.Fatalf("sign-in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.MaxAge <= 0 || strings.Contains(ck.Value, "s3cret") {
		t.Errorf("session cookie: %+v", ck)
	}
	page, err := cl.Get(srv.URL + "/jobs/sweep")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 {
		t.Fatalf("with a session: %d", page.StatusCode)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(body)
	if csrf == nil {
		t.Fatal("no anti-forgery field in the action forms")
	}

	post := func(path, origin, token string) int {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/jobs/sweep/pause", "https://evil.example", string(csrf[1])); code != http.StatusForbidden {
		t.Errorf("cross-origin pause: %d", code)
	}
	if code := post("/jobs/sweep/pause", srv.URL, "forged"); code != http.StatusForbidden {
		t.Errorf("pause with a forged form field: %d", code)
	}
	if st, _ := c.ctl.Status(t.Context(), "sweep", 1); st.Paused {
		t.Fatal("a refused request paused the job")
	}
	if code := post("/jobs/sweep/pause", srv.URL, string(csrf[1])); code != http.StatusSeeOther {
		t.Errorf("same-origin pause: %d", code)
	}
	if st, _ := c.ctl.Status(t.Context(), "sweep", 1); !st.Paused {
		t.Error("pause did not pause")
	}

	// A session cookie signed with another token, or expired, is refused.
	other, _ := console.New(console.Config{Control: c.ctl, Jobs: func() []scheduler.Job { return c.table }, Token: "other"})
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(ck)
	if other.Authenticate(r) {
		t.Error("a session of another token is accepted")
	}
	late, _ := console.New(console.Config{Control: c.ctl, Jobs: func() []scheduler.Job { return c.table }, Token: "s3cret-token",
		Now: func() time.Time { return time.Now().Add(13 * time.Hour) }})
	if late.Authenticate(r) {
		t.Error("an expired session is accepted")
	}
	// The bearer token works for scripts.
	if w := get(t, h, "/", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token") }); w.Code != 200 {
		t.Errorf("bearer: %d", w.Code)
	}
	// An open redirect through next= is refused.
	if w := get(t, h, "/signin?next=//evil.example/", func(r *http.Request) { r.AddCookie(ck) }); w.Header().Get("Location") != "/" {
		t.Errorf("next=//evil.example redirects to %q", w.Header().Get("Location"))
	}
}

func TestReadOnlyHidesAndRefusesActions(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	h := c.console(t, console.Config{ReadOnly: true})
	body := get(t, h, "/jobs/sweep").Body.String()
	if strings.Contains(body, "Run now") || strings.Contains(body, "/pause") {
		t.Error("a read-only console shows actions")
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	tok := ""
	if csrf != nil {
		tok = csrf[1]
	}
	r := httptest.NewRequest("POST", "/jobs/sweep/trigger", strings.NewReader("csrf="+tok))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "This console is read-only") {
		t.Errorf("trigger on a read-only console: %d %s", w.Code, w.Body)
	}
	if st, _ := c.ctl.Status(t.Context(), "sweep", 1); st.PendingManual != 0 {
		t.Error("a read-only console triggered a run")
	}
}

// Mounted under a prefix, every link and form stays under it.
func TestPrefix(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	c.runOnce(t, "sweep")
	h := c.console(t, console.Config{Prefix: "/ops/solocron/"})
	mux := http.NewServeMux()
	mux.Handle("/ops/solocron/", h)
	mux.Handle("/ops/solocron", h)
	for _, path := range []string{"/ops/solocron/", "/ops/solocron/jobs/sweep", "/ops/solocron/replicas", "/ops/solocron/assets/style.css"} {
		w := get(t, mux, path)
		if w.Code != 200 {
			t.Fatalf("%s: %d", path, w.Code)
		}
		for _, m := range regexp.MustCompile(`(?:href|action|src)="(/[^"]*)"`).FindAllStringSubmatch(w.Body.String(), -1) {
			if !strings.HasPrefix(m[1], "/ops/solocron/") {
				t.Errorf("%s links to %s, outside the prefix", path, m[1])
			}
		}
	}
	if w := get(t, mux, "/ops/solocron"); w.Code != http.StatusMovedPermanently {
		t.Errorf("prefix without a slash: %d", w.Code)
	}
}

// The jobs page of a thousand jobs answers quickly, and refreshes within
// the cache's TTL cost the store nothing.
func TestJobsPageCostIsBounded(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	var n testkit.CommandCounter
	rdb.AddHook(&n)
	ctl := schedtest.RedisStore(t, rdb).Control()
	var tab []scheduler.Job
	for i := range 1000 {
		tab = append(tab, scheduler.Job{Name: fmt.Sprintf("job-%04d", i), Schedule: "*/5 * * * *", Handler: jobs.Func(func(context.Context) error { return nil })})
	}
	h, _ := console.New(console.Config{Control: ctl, Jobs: func() []scheduler.Job { return tab }, CacheTTL: time.Minute, Logger: quiet})
	start := time.Now()
	if w := get(t, h, "/"); w.Code != 200 || !strings.Contains(w.Body.String(), "1–200 of 1000 jobs") {
		t.Fatalf("jobs page: %d", w.Code)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the jobs page of 1,000 jobs took %s", d)
	}
	t.Logf("the jobs page of 1,000 jobs answered in %s", time.Since(start).Round(time.Millisecond))
	before := n.Load()
	for range 5 {
		get(t, h, "/")
	}
	if got := n.Load() - before; got != 0 {
		t.Errorf("5 refreshes within the cache's TTL sent %d commands", got)
	}
	// The runs page reads 5 runs of each of the 1,000 jobs: the tabs open
	// on it share one read within the TTL too.
	get(t, h, "/runs")
	before = n.Load()
	for range 5 {
		if w := get(t, h, "/runs?outcome=failed"); w.Code != 200 {
			t.Fatalf("runs page: %d", w.Code)
		}
	}
	if got := n.Load() - before; got != 0 {
		t.Errorf("5 refreshes of the runs page within the cache's TTL sent %d commands", got)
	}
}

// Ten wrong tokens in a minute close the sign-in for the rest of it, even
// to the right token.
func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	srv := httptest.NewServer(c.console(t, console.Config{Token: "right"}))
	t.Cleanup(srv.Close)
	for range 10 {
		if _, resp := signIn(t, srv, "wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token: %d", resp.StatusCode)
		}
	}
	if _, resp := signIn(t, srv, "right"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after 10 failures: %d", resp.StatusCode)
	}
}

// The jobs page lists 200 jobs a page: at 2,000 jobs it was 1.3 MB of HTML
// that every open tab fetched, parsed and laid out again every 3 s. The
// filter applies before the paging, the summary counts every job, and the
// pages' links keep the filter.
func TestJobsPageIsPaged(t *testing.T) {
	t.Parallel()
	c := &cluster{srv: miniredis.RunT(t)}
	c.ctl = schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})).Control()
	for i := range 450 {
		c.table = append(c.table, scheduler.Job{Name: fmt.Sprintf("%c-%04d", "ab"[i%2], i), Schedule: "@every 1h", Handler: jobs.Func(func(context.Context) error { return nil })})
	}
	h := c.console(t, console.Config{})
	rows := regexp.MustCompile(`<th scope="row">`)
	for _, tc := range []struct {
		path       string
		rows       int
		want, lack []string
	}{
		{"/", 200, []string{"1–200 of 450 jobs", `href="/?page=2" rel="next"`, `/jobs/a-0000"`}, []string{`rel="prev"`, `/jobs/a-0200"`}},
		{"/?page=3", 50, []string{"401–450 of 450 jobs", `href="/?page=2" rel="prev"`, `/jobs/b-0449"`}, []string{`rel="next"`}},
		{"/?q=a-&page=2", 25, []string{"201–225 of 225 matching · 450 jobs", `href="/?page=1&amp;q=a-" rel="prev"`, `/jobs/a-0448"`}, []string{`rel="next"`, `/jobs/b-`}},
		{"/?q=a-00", 50, []string{"50 of 450 jobs"}, []string{`class="pager"`}},
		{"/?page=9", 0, []string{"No job matches", `href="/?page=3" rel="prev"`}, nil},
	} {
		w := get(t, h, tc.path)
		body := w.Body.String()
		if w.Code != 200 || len(rows.FindAllString(body, -1)) != tc.rows {
			t.Errorf("%s: %d, %d rows; want %d", tc.path, w.Code, len(rows.FindAllString(body, -1)), tc.rows)
		}
		for _, s := range tc.want {
			if !strings.Contains(body, s) {
				t.Errorf("%s lacks %q", tc.path, s)
			}
		}
		for _, s := range tc.lack {
			if strings.Contains(body, s) {
				t.Errorf("%s has %q", tc.path, s)
			}
		}
	}
	for _, p := range []string{"/?page=0", "/?page=x", "/?page=100000"} {
		if w := get(t, h, p); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", p, w.Code)
		}
	}
}
