package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// The console of a live cluster of three daemons on a real redis-server,
// with a token: the replicas command and API list the three, and a real
// browser signs in, reads every page, runs a job now, pauses and resumes
// it (with JavaScript and without), at desktop and phone width, in light
// and dark, with no console error.
func TestConsoleCluster(t *testing.T) {
	t.Parallel()
	tr := &transcript{}
	token := "tok" + randomHex(t)
	srv := redistest.Start(t)
	sink := newOTLPSink(t) // runs are traced: their records keep trace ids
	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://%s/0
  key_prefix: console
admin:
  token: ${TEST_ADMIN_TOKEN}
  trace_url: https://tempo.example/trace/{trace_id}?org=ops
jobs:
  - name: heartbeat
    schedule: "@every 2s"
    command: ["sh", "-c", "sleep 0.3"]
  - name: flaky-export
    schedule: "@every 3s"
    command: ["sh", "-c", "echo '<script>alert(1)</script> exporting'; sleep 0.5; exit 3"]
  - name: nightly-report
    schedule: "30 2 * * 1-5"
    timezone: Europe/Paris
    command: ["sh", "-c", "echo report done; sleep 0.5"]
`, srv.Addr()))
	cenv := env("TEST_ADMIN_TOKEN="+token, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_BSP_SCHEDULE_DELAY=100")
	reps := startReplicas(t, tr, cenv, table, "r1", "r2", "r3")
	testkit.WaitFor(t, 20*time.Second, "three registered replicas", func() bool {
		code, body := httpDo(t, tr, "GET", reps[0].url("/api/v1/replicas"), token)
		return code == 200 && strings.Count(body, `"id":"r`) == 3
	})

	t.Run("replicas_command", func(t *testing.T) {
		r := runCLI(t, tr, cenv, "replicas", "--config", table)
		r.want(t, 0, "replicas")
		for _, want := range []string{"REPLICA", "r1", "r2", "r3", testVersion, "this file's table:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("scheduler replicas lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "differs") {
			t.Errorf("replicas sharing one file are flagged:\n%s", r.stdout)
		}
		r = runCLI(t, tr, cenv, "replicas", "--json", "--config", table)
		var a struct {
			FileTable string `json:"file_table"`
			Replicas  []struct {
				ID, Table string
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || len(a.Replicas) != 3 {
			t.Fatalf("replicas --json: %v\n%s", err, r.stdout)
		}
		for _, x := range a.Replicas {
			if x.Table != a.FileTable {
				t.Errorf("replica %s runs table %s, the file is %s", x.ID, x.Table, a.FileTable)
			}
		}
		// Like every /api/v1 read, the list needs the token.
		if code, _, body := consoleDo(t, tr, "GET", reps[0].url("/api/v1/replicas"), nil); code != 401 {
			t.Errorf("GET /api/v1/replicas without the token: %d %s, want 401", code, body)
		}
	})

	// The console's session opens /api/v1 as the token does (on every
	// replica sharing the token); a forged one opens nothing; a foreign
	// Host gets 421 from the console as from the API.
	t.Run("session_and_host", func(t *testing.T) {
		session := signInHTTP(t, tr, reps[0], token)
		forged := session[:strings.LastIndexByte(session, '.')+1] + strings.Repeat("0", 64)
		for _, r := range reps[:2] {
			for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/heartbeat/runs", "/api/v1/replicas"} {
				if code, _, body := consoleDo(t, tr, "GET", r.url(path), map[string]string{"Cookie": session}); code != 200 {
					t.Errorf("%s GET %s with the console's session: %d %s", r.id, path, code, body)
				}
				if code, _, _ := consoleDo(t, tr, "GET", r.url(path), map[string]string{"Cookie": forged}); code != 401 {
					t.Errorf("%s GET %s with a forged session: %d, want 401", r.id, path, code)
				}
			}
			if code, _, _ := consoleDo(t, tr, "GET", r.url("/replicas"), map[string]string{"Cookie": session}); code != 200 {
				t.Errorf("%s console with the session: %d", r.id, code)
			}
			if code, hdr, _ := consoleDo(t, tr, "GET", r.url("/replicas"), map[string]string{"Cookie": forged}); code != 303 || !strings.HasPrefix(hdr.Get("Location"), "/signin?next=") {
				t.Errorf("%s console with a forged session: %d %s, want the sign-in form", r.id, code, hdr.Get("Location"))
			}
		}
		evil := map[string]string{"Host": "rebind.evil.example:" + strings.Split(reps[0].addr, ":")[1], "Cookie": session}
		for _, path := range []string{"/", "/signin", "/runs/heartbeat@1", "/api/v1/replicas"} {
			if code, _, _ := consoleDo(t, tr, "GET", reps[0].url(path), evil); code != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host rebind.evil.example: %d, want 421", path, code)
			}
		}
	})

	// The console reads the store through the admin API's own client
	// (solocron-admin), never the one that claims and renews: every command
	// of its jobs page (HMGET ... paused last) and of its replica list (the
	// registry script in "list" mode) comes from a connection of that name.
	t.Run("admin_client", func(t *testing.T) {
		session := signInHTTP(t, tr, reps[0], token)
		mon := monitor(t, srv.Addr())
		var lines []string
		testkit.WaitFor(t, 30*time.Second, "the console's reads in MONITOR", func() bool {
			for _, path := range []string{"/", "/replicas"} {
				if code, _, _ := consoleDo(t, tr, "GET", reps[0].url(path), map[string]string{"Cookie": session}); code != 200 {
					return false
				}
			}
			lines = mon.matching(`"hmget" "console:`, `"paused" "last"`)
			list := mon.matching(`"list"`, `{replicas}`)
			lines = append(lines, list...)
			return len(lines) > len(list) && len(list) > 0
		})
		names := clientNames(t, srv.Addr())
		wrong := 0
		for _, l := range lines {
			if addr := monitorAddr(l); names[addr] != "solocron-admin" {
				if wrong++; wrong == 1 {
					t.Errorf("console read from connection %s named %q, want solocron-admin: %.200s", addr, names[addr], l)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%d of %d console reads were not on the admin client", wrong, len(lines))
		}
	})

	t.Run("browser", func(t *testing.T) {
		started := time.Now()
		b := browsertest.New(t)
		base := reps[0].url("")
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
		text := func(sel string) string { return browsertest.Get(t, b, "text of "+sel, chromedp.Text(css(sel))) }
		location := func() string { return browsertest.Get(t, b, "location", chromedp.Location()) }

		// Every page sends to the sign-in form first.
		b.Do(t, "open the console", chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(chromedp.ID("token")))
		if url := location(); !strings.Contains(url, "/signin?next=") || strings.Contains(url, token) {
			t.Errorf("sign-in URL %q", url)
		}
		b.Do(t, "sign in", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(css("figure.timeline svg")))
		if url := location(); url != base+"/jobs/heartbeat" {
			t.Errorf("after sign-in: %q", url)
		}
		if browsertest.Get(t, b, "cookie", chromedp.Evaluate[bool](`document.cookie.includes("solocron_session")`)) {
			t.Error("the session cookie is readable from JavaScript")
		}

		// The jobs page: every job; the hostile output never runs.
		b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("table.jobs")),
			browsertest.WaitJS(`document.querySelector("table.jobs").innerText.includes("failed")`))
		main := text("main")
		for _, want := range []string{"heartbeat", "flaky-export", "nightly-report", "at 02:30 on Mon–Fri", "3 of 3 jobs", "✗ failed"} {
			if !strings.Contains(main, want) {
				t.Errorf("jobs page lacks %q", want)
			}
		}
		b.Shot(t, "console-jobs")

		// A job's timeline: bars for runs, one lane per replica that ran one.
		b.Do(t, "timeline", chromedp.Navigate(base+"/jobs/flaky-export"), chromedp.WaitVisible(css("figure.timeline svg")),
			browsertest.WaitJS(`document.querySelectorAll("svg .bar").length >= 2`))

		// A run's page shows the output as text: a run that ran (failed), not
		// the history's first row, which may be an instant skipped for
		// overlap (no output) or one still running.
		// (Followed by address: the live refresh may swap the table between
		// finding a link and clicking it.)
		href := browsertest.Get(t, b, "a failed run's link", chromedp.Evaluate[string](`(() => {
			for (const tr of document.querySelectorAll("table.history tbody tr")) {
				const a = tr.querySelector('a[href*="/runs/"]');
				if (a && tr.innerText.includes("failed")) { return a.href; }
			}
			return "";
		})()`))
		if href == "" {
			t.Fatalf("flaky-export's history shows no failed run:\n%s", text("table.history"))
		}
		b.Do(t, "run page", chromedp.Navigate(href), chromedp.WaitVisible(chromedp.ID("output")))
		if out := text("#output"); !strings.Contains(out, "<script>alert(1)</script> exporting") {
			t.Errorf("run output shown as %q", out)
		}
		// admin.trace_url: the run's trace id links to the trace viewer.
		trace := browsertest.Get(t, b, "the trace link", chromedp.Evaluate[string](`(document.querySelector("a.trace") || {href: ""}).href`))
		if !regexp.MustCompile(`^https://tempo\.example/trace/[0-9a-f]{32}\?org=ops$`).MatchString(trace) {
			t.Errorf("run page's trace link %q", trace)
		}
		// The session reads the JSON API from the page's own origin.
		if code := browsertest.Get(t, b, "the API with the session", chromedp.Evaluate[int](`fetch("/api/v1/jobs", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise)); code != 200 {
			t.Errorf("GET /api/v1/jobs from the signed-in page: %d", code)
		}

		// Run now: the request shows at once, the run in the history soon.
		b.Do(t, "run now", chromedp.Navigate(base+"/jobs/nightly-report"), chromedp.WaitVisible(css(`form[action$="/trigger"] button`)),
			browsertest.Click(`form[action$="/trigger"] button`),
			browsertest.WaitJS(`document.getElementById("flash").innerText.includes("Run requested")`),
			browsertest.WaitJS(`document.querySelector("table.history").innerText.includes("nightly-report@manual-")`))

		// Pause and resume, reflected without a reload.
		b.Do(t, "pause", browsertest.Click(`form[action$="/pause"] button`),
			browsertest.WaitJS(`document.getElementById("state").innerText.includes("paused")`),
			chromedp.WaitVisible(css(`form[action$="/resume"] button`)))
		code, body := httpDo(t, tr, "GET", reps[1].url("/api/v1/jobs/nightly-report"), token)
		if code != 200 || !strings.Contains(body, `"paused":true`) {
			t.Errorf("after Pause the API says %d %s", code, body)
		}
		b.Do(t, "resume", browsertest.Click(`form[action$="/resume"] button`),
			browsertest.WaitJS(`document.getElementById("state").innerText.includes("active")`))

		// Replicas: the three, none flagged.
		b.Do(t, "replicas page", chromedp.Navigate(base+"/replicas"), chromedp.WaitVisible(css("table.replicas")))
		if main := text("main"); !strings.Contains(main, "3 live replicas") || !strings.Contains(main, "1 job table") || strings.Contains(main, "differs") {
			t.Errorf("replicas page:\n%s", main)
		}
		b.Shot(t, "console-replicas")

		// Phone width and dark mode: no sideways scrolling, a dark page.
		b.Phone(t, true)
		b.Do(t, "phone", chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("table.jobs")))
		if browsertest.Get(t, b, "overflow", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
			t.Error("the jobs page scrolls sideways at phone width")
		}
		// Each filter's label sits on its control's row, just before it.
		if apart := browsertest.Get(t, b, "filter labels", chromedp.Evaluate[string](`[["q", "Name"], ["outcome", "Show"]].filter(([id]) => {
			const l = document.querySelector('label[for="' + id + '"]').getBoundingClientRect(), c = document.getElementById(id).getBoundingClientRect();
			const mid = (l.top + l.bottom) / 2;
			return mid < c.top || mid > c.bottom || l.right > c.left || c.left - l.right > 24;
		}).map(([, name]) => name).join(", ")`)); apart != "" {
			t.Errorf("at phone width these filter labels sit apart from their controls: %s", apart)
		}
		if bg := browsertest.Get(t, b, "background", chromedp.Evaluate[string](`getComputedStyle(document.documentElement).backgroundColor`)); bg != "rgb(18, 20, 23)" {
			t.Errorf("dark mode background %q", bg)
		}
		b.Shot(t, "console-phone-dark")
		// A job's page on the phone: its timeline's runs (three replicas'
		// lanes) in view, without scrolling the timeline.
		b.Do(t, "phone timeline", chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(css("figure.timeline figcaption")))
		// The phone's timeline is counted against itself, in one reading
		// (the page redraws as it polls): it may merge into one bar runs
		// that the wide one, with more room, draws apart.
		if n := browsertest.JS[[]int](t, b, `(() => {
			const bars = [...document.querySelectorAll("svg.narrow .bar rect")];
			return [bars.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; }).length, bars.length]; })()`); n[1] == 0 || n[0] != n[1] {
			t.Errorf("at phone width %d of the timeline's %d bars are in view", n[0], n[1])
		}
		b.Shot(t, "console-timeline-phone-dark")
		b.Desktop(t, false)

		// JavaScript off: the forms still work, by a page load.
		b.Do(t, "no script", browsertest.Send(emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}),
			chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(css(`form[action$="/pause"] button`)),
			browsertest.Click(`form[action$="/pause"] button`), chromedp.WaitVisible(css(`form[action$="/resume"] button`)))
		if flash, url := text("#flash"), location(); !strings.Contains(flash, "Paused cluster-wide") || !strings.HasSuffix(url, "/jobs/heartbeat?done=pause") {
			t.Errorf("pause without JavaScript: flash %q at %q", flash, url)
		}
		b.Do(t, "resume, no script", browsertest.Click(`form[action$="/resume"] button`),
			chromedp.WaitVisible(css(`form[action$="/pause"] button`)),
			browsertest.Send(emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false}))

		// By now the heartbeat job has run a few times on the replicas.
		b.Do(t, "heartbeat timeline", chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(css("figure.timeline svg")))
		b.Shot(t, "console-timeline")

		// Sign out ends the session.
		b.Do(t, "sign out", browsertest.Click(`form.signout button`), chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.Navigate(base+"/replicas"), chromedp.WaitVisible(chromedp.ID("token")))

		t.Logf("browser test took %s", time.Since(started).Round(time.Millisecond))
	})
}

// The console works on the embedded store: the only way to see that
// replica's state, its registry entry included.
func TestConsoleEmbedded(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	start(t, nil, "embedded", env("STATE_DIRECTORY="+t.TempDir()), "run", "--config", "../../config.example.yaml", "--admin-listen", addr, "--log-format", "json")
	base := "http://" + addr
	testkit.WaitFor(t, 60*time.Second, "ready", func() bool { return testkit.HTTPStatus(base+"/readyz") == 200 })
	testkit.WaitFor(t, 20*time.Second, "the replica registered", func() bool {
		code, body := httpDo(t, &transcript{}, "GET", base+"/replicas", "")
		return code == 200 && strings.Contains(body, "1 live replica")
	})
	code, body := httpDo(t, &transcript{}, "GET", base+"/", "")
	if code != 200 || !strings.Contains(body, `href="/jobs/heartbeat"`) {
		t.Errorf("jobs page on the embedded store: %d\n%s", code, body)
	}
	code, body = httpDo(t, &transcript{}, "GET", base+"/api/v1/replicas", "")
	if code != 200 || !strings.Contains(body, `"version":"`+testVersion+`"`) {
		t.Errorf("GET /api/v1/replicas: %d %s", code, body)
	}
}

// consoleDo sends a request with headers ("Host" sets the Host) and follows
// no redirect; a 429 of the default rate limit is waited out.
func consoleDo(t *testing.T, tr *transcript, method, url string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	c := http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for try := 0; ; try++ {
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.addText(string(b))
		if resp.StatusCode == http.StatusTooManyRequests && try < 20 {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		return resp.StatusCode, resp.Header, string(b)
	}
}

// signInHTTP posts the token to r's sign-in form and returns the session
// cookie ("solocron_session=...").
func signInHTTP(t *testing.T, tr *transcript, r replica, token string) string {
	t.Helper()
	c := http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for try := 0; ; try++ {
		resp, err := c.PostForm(r.url("/signin"), url.Values{"token": {token}, "next": {"/"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && try < 20 {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		for _, ck := range resp.Cookies() {
			if ck.Name == "solocron_session" && resp.StatusCode == http.StatusSeeOther {
				tr.addText("signed in on " + r.id)
				return ck.Name + "=" + ck.Value
			}
		}
		t.Fatalf("sign-in on %s: %d, no session cookie", r.id, resp.StatusCode)
	}
}

// monitorLog is what MONITOR showed on one connection, read until cleanup.
type monitorLog struct {
	mu    sync.Mutex
	lines []string
}

// monitor opens a MONITOR connection to the Redis at addr.
func monitor(t *testing.T, addr string) *monitorLog {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	m := &monitorLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(conn)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return m
}

// matching returns the lines that contain every one of subs.
func (m *monitorLog) matching(subs ...string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
next:
	for _, l := range m.lines {
		for _, s := range subs {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// monitorAddr is the client address of a MONITOR line
// ("+1732540000.123456 [0 127.0.0.1:54321] ...").
func monitorAddr(line string) string {
	_, rest, _ := strings.Cut(line, "[")
	f := strings.Fields(rest)
	if len(f) < 2 {
		return ""
	}
	return strings.TrimSuffix(f[1], "]")
}

// clientNames maps each connection's address to its CLIENT SETNAME name.
func clientNames(t *testing.T, addr string) map[string]string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	list, err := rdb.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(list, "\n") {
		var a, n string
		for _, kv := range strings.Fields(l) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "addr":
				a = v
			case "name":
				n = v
			}
		}
		if a != "" {
			out[a] = n
		}
	}
	return out
}
