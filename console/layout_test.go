package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// An operator's table: nine jobs, two with a run in flight (a 16-digit
// token), one of them two at once on one replica.
func cockpitTable() []scheduler.Job {
	quick := jobs.Func(func(context.Context) error { return nil })
	block := jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return nil })
	var tab []scheduler.Job
	for _, n := range []string{"heartbeat", "flaky-sync", "nightly-report", "sweep", "reindex", "export-orders", "billing.close", "cache_warm", "audit"} {
		tab = append(tab, scheduler.Job{Name: n, Schedule: "@every 1h", Handler: quick})
	}
	tab[0].Handler, tab[0].Concurrency, tab[0].Lease = block, 2, 3*time.Second
	tab[1].Handler, tab[1].Lease = block, 3*time.Second
	return tab
}

// Defects of the console seen at 1280 px, 390 px and in dark mode: job
// names break mid-word; sub-second runs are slivers without their symbol;
// two runs at once on one replica share a lane; the timeline's labels are
// unreadable on a phone; a phone's job cards are ~480 px tall and its
// history shows 3 of 8 columns; the sign-in page shows links that cannot
// be used yet.
func TestBrowserLayoutDefects(t *testing.T) {
	tab := cockpitTable()
	c := newClusterOf(t, 1, tab)
	for range 3 {
		c.runOnce(t, "sweep") // sub-second runs
	}
	c.waitRunning(t, "heartbeat")
	c.waitRunning(t, "heartbeat") // two at once, on the one replica
	c.waitRunning(t, "flaky-sync")
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)

	// 1280 px: each name on one line.
	b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	if broken := browsertest.JS[string](t, b, `[...document.querySelectorAll("table.jobs tbody th a")].filter(a => a.getClientRects().length > 1).map(a => a.innerText).join(", ")`); broken != "" {
		t.Errorf("at 1280 px these job names break across lines: %s", broken)
	}
	b.Shot(t, "cockpit-jobs-1280")

	// The timeline: a symbol on every bar; the sub-second runs of sweep,
	// one after another, are not drawn over each other, and all three are
	// counted.
	b.Do(t, "sweep", chromedp.Navigate(base+"/jobs/sweep"), chromedp.WaitVisible(chromedp.CSS("figure.timeline svg")))
	if n := browsertest.JS[int](t, b, `[...document.querySelectorAll("svg .bar")].filter(g => !g.querySelector("text")).length`); n != 0 {
		t.Errorf("%d bars of sub-second runs carry no symbol", n)
	}
	checkLanes(t, b, "1280 px", 3)
	b.Shot(t, "cockpit-sweep-1280")
	b.Do(t, "heartbeat", chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(chromedp.CSS("figure.timeline svg")))
	overlap := browsertest.JS[int](t, b, `(() => {
		const r = [...document.querySelectorAll("svg .bar rect")].map(e => e.getBoundingClientRect());
		let n = 0;
		for (let i = 0; i < r.length; i++) for (let k = i + 1; k < r.length; k++)
			if (r[i].top < r[k].bottom - 1 && r[k].top < r[i].bottom - 1 && r[i].left < r[k].right - 1 && r[k].left < r[i].right - 1) n++;
		return n; })()`)
	if overlap != 0 {
		t.Errorf("%d pairs of bars cover each other on the timeline", overlap)
	}
	b.Shot(t, "cockpit-timeline-1280")

	// 390 px, dark: readable timeline labels; compact cards; every
	// history column; no sideways scroll of the page.
	b.Phone(t, true)
	b.Do(t, "phone job page", chromedp.Navigate(base+"/jobs/sweep"), chromedp.WaitVisible(chromedp.CSS("figure.timeline figcaption")))
	checkLanes(t, b, "390 px", 3)
	if h := browsertest.JS[float64](t, b, `Math.min(...[...document.querySelectorAll("svg .lane text, svg .axis text")].map(e => e.getBoundingClientRect().height).filter(h => h > 0))`); h < 9 {
		t.Errorf("at 390 px the timeline's labels are %.1f px tall", h)
	}
	// Every run on the timeline is in view, without scrolling it: the
	// recent runs are at its right end, which a timeline wider than the
	// phone kept out of view. The phone's timeline is counted against
	// itself: it may merge into one bar runs that the wide one, with more
	// room, draws apart (checkLanes counts the runs the bars stand for).
	// One reading of the page: it is drawn again as it polls.
	if n := browsertest.JS[[]int](t, b, `(() => {
		const bars = [...document.querySelectorAll("svg.narrow .bar rect")];
		return [bars.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; }).length, bars.length]; })()`); n[1] == 0 || n[0] != n[1] {
		t.Errorf("at 390 px %d of the timeline's %d bars are in view", n[0], n[1])
	}
	if n := browsertest.JS[int](t, b, `(() => {
		const r = [...document.querySelectorAll("svg .axis text")].map(e => e.getBoundingClientRect()).filter(r => r.width > 0);
		let n = 0;
		for (let i = 1; i < r.length; i++) if (r[i].left < r[i-1].right) n++;
		return n; })()`); n != 0 {
		t.Errorf("at 390 px %d of the timeline's time labels run into the one before", n)
	}
	if cols := browsertest.JS[int](t, b, `(() => { const r = document.querySelector("table.history tbody tr"); return [...r.children].filter(td => { const b = td.getBoundingClientRect(); return b.width > 0 && b.right <= window.innerWidth + 1; }).length; })()`); cols != 8 {
		t.Errorf("at 390 px a history row shows %d of 8 columns", cols)
	}
	if browsertest.JS[bool](t, b, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Error("the job page scrolls sideways at 390 px")
	}
	b.Shot(t, "cockpit-job-390-dark")
	b.Do(t, "phone jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	if avg := browsertest.JS[float64](t, b, `(() => { const r = [...document.querySelectorAll("table.jobs tbody tr")]; return r.reduce((s, x) => s + x.getBoundingClientRect().height, 0) / r.length; })()`); avg > 260 {
		t.Errorf("at 390 px a job's card is %.0f px tall on average", avg)
	}
	b.Shot(t, "cockpit-jobs-390-dark")
	b.Desktop(t, true)
	b.Do(t, "dark desktop", chromedp.Navigate(base+"/jobs/heartbeat"), chromedp.WaitVisible(chromedp.CSS("figure.timeline svg")))
	b.Shot(t, "cockpit-job-1280-dark")
	b.Desktop(t, false)
}

// The sign-in page offers no link that cannot be used yet.
func TestBrowserSignInWithoutNav(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, consoleConfig("tok-nav")))
	b := newBrowser(t)
	b.Do(t, "sign-in", chromedp.Navigate(base+"/replicas"), chromedp.WaitVisible(chromedp.ID("token")))
	if links := browsertest.JS[string](t, b, `[...document.querySelectorAll("header a, nav a")].filter(a => !a.classList.contains("brand")).map(a => a.innerText).join(", ")`); links != "" {
		t.Errorf("the sign-in page links %s", links)
	}
	b.Do(t, "signed in", chromedp.SendKeys(chromedp.ID("token"), "tok-nav"), chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.CSS("table.replicas")))
	if n := browsertest.JS[int](t, b, `document.querySelectorAll("nav a").length`); n != 4 {
		t.Errorf("signed in, the nav has %d links", n)
	}
}

// Run now on a full manual queue says why, with 429, with JavaScript and
// without.
func TestBrowserRunNowQueueFull(t *testing.T) {
	c := newCluster(t, 0) // no replica picks the requests up
	for range scheduler.MaxPendingManual {
		if _, err := c.ctl.Trigger(t.Context(), "sweep"); err != nil {
			t.Fatal(err)
		}
	}
	h := c.console(t, console.Config{})
	base := serve(t, h)
	b := newBrowser(t)
	b.Do(t, "run now", chromedp.Navigate(base+"/jobs/sweep"), browsertest.Click(`form[action$="/trigger"] button`),
		browsertest.WaitJS(`document.getElementById("flash").innerText.includes("(429)")`))
	if f := browsertest.Get(t, b, "flash", chromedp.Text(chromedp.ID("flash"))); !strings.Contains(f, "100 manual runs of this job are waiting") {
		t.Errorf("Run now on a full queue says %q", f)
	}
	rec := httptestRecorder()
	// The form's anti-forgery field, as the page has it.
	csrf := browsertest.JS[string](t, b, `document.querySelector('form[action$="/trigger"] input[name=csrf]').value`)
	r := httpPost("/jobs/sweep/trigger", map[string][]string{"csrf": {csrf}})
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "waiting to be picked up") {
		t.Errorf("Run now without JavaScript on a full queue: %d %q", rec.Code, rec.Body.String())
	}
}

// checkLanes fails the test when two bars of one lane of the timeline in
// view overlap as drawn, or when its bars do not stand for runs runs.
func checkLanes(t *testing.T, b *browser, where string, runs int) {
	t.Helper()
	type lanes struct{ Overlaps, Runs int }
	got := browsertest.JS[lanes](t, b, `(() => {
		let overlaps = 0, runs = 0;
		for (const svg of document.querySelectorAll("figure.timeline svg")) {
			if (!svg.getBoundingClientRect().width) continue; // the other one
			const bars = [...svg.querySelectorAll(".bar")].map(g => {
				const rect = g.querySelector("rect");
				runs += Number(g.dataset.runs);
				return {lane: rect.getAttribute("y"), box: rect.getBoundingClientRect()};
			});
			for (let i = 0; i < bars.length; i++) for (let k = i + 1; k < bars.length; k++) {
				const a = bars[i], c = bars[k];
				if (a.lane === c.lane && a.box.left < c.box.right - 0.5 && c.box.left < a.box.right - 0.5) overlaps++;
			}
		}
		return {Overlaps: overlaps, Runs: runs}; })()`)
	if got.Overlaps != 0 {
		t.Errorf("at %s %d pairs of bars of one lane of the timeline are drawn over each other", where, got.Overlaps)
	}
	if got.Runs != runs {
		t.Errorf("at %s the timeline's bars stand for %d runs, want %d", where, got.Runs, runs)
	}
}
