package console_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/redact"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A console given AllowedHosts answers 421 to any other name (a DNS
// rebinding page sends its own), on every path, sign-in included; loopback
// names and IP addresses stay allowed. Without it, the Host is the
// embedding server's business.
func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	h := c.console(t, console.Config{AllowedHosts: []string{"ops.example.com"}, Token: "s3cret-token"})
	host := func(name string) func(*http.Request) { return func(r *http.Request) { r.Host = name } }
	for _, path := range []string{"/", "/signin", "/jobs/sweep", "/replicas", "/assets/style.css"} {
		for _, name := range []string{"rebind.evil.example", "rebind.evil.example:8080", "ops.example.com.evil.example"} {
			if w := get(t, h, path, host(name)); w.Code != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s: %d, want 421", path, name, w.Code)
			}
		}
	}
	r := httptest.NewRequest("POST", "/jobs/sweep/trigger", strings.NewReader("csrf=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Host = "rebind.evil.example"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMisdirectedRequest {
		t.Errorf("POST with a foreign Host: %d, want 421", w.Code)
	}
	for _, name := range []string{"ops.example.com", "OPS.example.com:443", "localhost:8080", "app.localhost", "127.0.0.1:8080", "[::1]:8080", "10.1.2.3"} {
		if w := get(t, h, "/signin", host(name)); w.Code != http.StatusOK {
			t.Errorf("GET /signin with Host %s: %d, want 200", name, w.Code)
		}
	}
	open := c.console(t, console.Config{})
	if w := get(t, open, "/", host("rebind.evil.example")); w.Code != http.StatusOK {
		t.Errorf("without AllowedHosts the console checks no Host: %d", w.Code)
	}
}

// The assets are files only, served to anyone (the sign-in page needs
// them): their folder is not listed, and /favicon.ico, which a browser asks
// for by itself on a page that names no icon (the JSON API's), is the
// console's icon, so that no such page logs a failed load.
func TestAssetsServeFilesOnly(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	h := c.console(t, consoleConfig("s3cret-token"))
	for _, path := range []string{"/assets/", "/assets/style.css/"} {
		if w := get(t, h, path); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "console.js") {
			t.Errorf("GET %s: %d %q, want 404 and no listing", path, w.Code, w.Body.String())
		}
	}
	for path, typ := range map[string]string{"/assets/style.css": "text/css", "/assets/console.js": "javascript", "/favicon.ico": "image/svg+xml"} {
		if w := get(t, h, path); w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), typ) {
			t.Errorf("GET %s: %d %s, want 200 %s", path, w.Code, w.Header().Get("Content-Type"), typ)
		}
	}
}

// tracedCluster is one replica whose runs are traced (sampled), so their
// records keep a trace id.
func tracedCluster(t *testing.T) *scheduler.Control {
	t.Helper()
	srv := miniredis.RunT(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), table(),
		scheduler.WithReplicaID("replica-1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s.Control()
}

// With TraceURL, a run's page links its trace id to the trace viewer;
// without, it shows the id alone. A TraceURL that is not an http(s) URL
// with {trace_id} is refused.
func TestTraceLink(t *testing.T) {
	t.Parallel()
	ctl := tracedCluster(t)
	id, err := ctl.Trigger(t.Context(), "sweep")
	if err != nil {
		t.Fatal(err)
	}
	// The trace id is in the run's history entry (its own record keeps
	// none): the page finds it there.
	var run scheduler.Run
	testkit.WaitFor(t, 10*time.Second, "run "+id+" in the history", func() bool {
		hist, _ := ctl.History(t.Context(), "sweep", 10)
		for _, h := range hist {
			if h.ID == id {
				run = h
				return true
			}
		}
		return false
	})
	if len(run.TraceID) != 32 {
		t.Fatalf("the run's history entry keeps trace id %q, want 32 hex digits", run.TraceID)
	}
	newConsole := func(traceURL string) http.Handler {
		h, err := console.New(console.Config{Control: ctl, Jobs: table, Logger: quiet, TraceURL: traceURL})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	page := "/runs/" + url.PathEscape(id)
	body := get(t, newConsole("https://tempo.example/trace/{trace_id}?org=ops"), page).Body.String()
	want := `<a href="https://tempo.example/trace/` + run.TraceID + `?org=ops" class="trace" rel="noopener noreferrer" target="_blank"><code>` + run.TraceID + `</code></a>`
	if !strings.Contains(body, want) {
		t.Errorf("run page with trace_url lacks the link %s:\n%s", want, regexp.MustCompile(`(?s)<dt>Trace</dt>.*?</dd>`).FindString(body))
	}
	body = get(t, newConsole(""), page).Body.String()
	if !strings.Contains(body, "<code>"+run.TraceID+"</code>") || strings.Contains(body, `class="trace"`) {
		t.Errorf("run page without trace_url: %s", regexp.MustCompile(`(?s)<dt>Trace</dt>.*?</dd>`).FindString(body))
	}
	for _, bad := range []string{"javascript:alert(1)//{trace_id}", "tempo.example/trace/{trace_id}", "https://tempo.example/trace/", "ftp://tempo.example/{trace_id}"} {
		if _, err := console.New(console.Config{Control: ctl, Jobs: table, TraceURL: bad}); err == nil {
			t.Errorf("TraceURL %q accepted", bad)
		}
	}
}

// The console shows no secret of the scheduler: a job that prints one, in
// its output or its error, shows it masked on every page, in its raw form
// and in the form HTML escaping would give it.
func TestRedactsSecrets(t *testing.T) {
	t.Parallel()
	const secret = `pa<ss&"word-1234`
	c := &cluster{srv: miniredis.RunT(t)}
	c.table = []scheduler.Job{{Name: "leaky", Schedule: "@every 1h", Handler: jobs.Func(func(ctx context.Context) error {
		fmt.Fprint(jobs.Output(ctx), "connecting with "+secret)
		return errors.New("auth failed for " + secret)
	})}}
	c.ctl = schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})).Control()
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: c.srv.Addr()})), c.table,
		scheduler.WithReplicaID("replica-1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	id := c.runOnce(t, "leaky")

	h := c.console(t, console.Config{Redact: redact.New(secret).String})
	for _, path := range []string{"/", "/jobs/leaky", "/runs/" + url.PathEscape(id)} {
		body := get(t, h, path).Body.String()
		for _, form := range []string{secret, html.EscapeString(secret), `pa&lt;ss&amp;&#34;word-1234`} {
			if strings.Contains(body, form) {
				t.Errorf("%s shows the secret as %q", path, form)
			}
		}
	}
	body := get(t, h, "/runs/"+url.PathEscape(id)).Body.String()
	if !strings.Contains(body, "connecting with [REDACTED]") || !strings.Contains(body, "auth failed for [REDACTED]") {
		t.Errorf("run page does not show the masked output and error:\n%s", body)
	}
	// Without a redactor the same page shows it (escaped): the test sees it.
	if body := get(t, c.console(t, console.Config{}), "/runs/"+url.PathEscape(id)).Body.String(); !strings.Contains(body, `pa&lt;ss&amp;&#34;word-1234`) {
		t.Error("the unmasked page does not show the secret either: the test proves nothing")
	}
}

// Wrong input of any size gets a short 4xx page: the jobs page's filter is
// bounded like the runs page's (it was lowered once per job, per request,
// whatever its size), and a 200 kB job name or run id in the address is not
// said back in full (the 404 page was 200 kB).
func TestHugeInputGetsAShortAnswer(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	h := c.console(t, console.Config{})
	big := strings.Repeat("x", 200_000)
	for path, code := range map[string]int{
		"/?q=" + strings.Repeat("j", 201): http.StatusBadRequest,
		"/jobs/" + big:                    http.StatusNotFound,
		"/runs/" + big:                    http.StatusNotFound,
		"/runs/evil@" + big:               http.StatusNotFound,
	} {
		w := get(t, h, path)
		if w.Code != code || w.Body.Len() > 8<<10 || !strings.Contains(w.Body.String(), `class="error"`) {
			t.Errorf("%.40s…: %d, %d bytes; want a short %d page saying why", path, w.Code, w.Body.Len(), code)
		}
	}
	// A refused action, or a wrong method, on a run's address: its page
	// links back to the run, but not to a made-up id of any size.
	for path, code := range map[string]int{
		"/runs/evil@" + big + "/cancel": http.StatusForbidden, // no form field
		"/runs/evil@" + big + "/retry":  http.StatusForbidden,
		"/runs/evil@" + big:             http.StatusMethodNotAllowed,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, nil))
		if w.Code != code || w.Body.Len() > 8<<10 || !strings.Contains(w.Body.String(), `class="error"`) {
			t.Errorf("POST %.40s…: %d, %d bytes; want a short %d page saying why", path, w.Code, w.Body.Len(), code)
		}
	}
	if w := get(t, h, "/?q="+strings.Repeat("j", 200)); w.Code != http.StatusOK {
		t.Errorf("a 200-character filter: %d", w.Code)
	}
}
