package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// pageCheck is what an operator must be able to read and use on a page in
// every mode: the page does not scroll sideways, every control is in view,
// and every piece of text stands out from what is behind it (WCAG AA:
// 4.5:1, 3:1 for large text) — a dark mode that forgets a colour leaves
// dark text on a dark panel.
const pageCheck = `(() => {
	const rgb = s => { const m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
	const bg = e => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.a > 0.5) return c; } return rgb(getComputedStyle(document.documentElement).backgroundColor); };
	const out = [];
	if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px wide");
	for (const s of document.querySelectorAll(".scroll")) if (s.scrollWidth > s.clientWidth + 1) out.push("a table scrolls sideways: " + s.firstElementChild.className + " is " + s.scrollWidth + " px in " + s.clientWidth);
	for (const e of document.querySelectorAll("button, a, input, select, summary")) {
		const r = e.getBoundingClientRect();
		if (r.width === 0 || e.closest("svg") || e.closest(".scroll") || e.classList.contains("visually-hidden")) continue;
		if (r.left < -1 || r.right > window.innerWidth + 1) out.push("out of view: " + e.outerHTML.slice(0, 80));
	}
	for (const e of document.querySelectorAll("body *")) {
		if (e.closest("svg") || e.closest(".visually-hidden") || !e.getClientRects().length) continue;
		if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
		const s = getComputedStyle(e), fg = rgb(s.color), b = bg(e);
		const l1 = lum(fg), l2 = lum(b), ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.6 && Number(s.fontWeight) >= 700);
		if (ratio < (large ? 3 : 4.5)) out.push("contrast " + ratio.toFixed(2) + " (" + s.color + " on rgb(" + b.r + "," + b.g + "," + b.b + ")): " + e.tagName + " " + JSON.stringify(e.textContent.trim().slice(0, 40)));
	}
	return out.slice(0, 12).join("\n"); })()`

// The operator's pages — the jobs page's summary strip, the
// runs page across jobs, the pools page, a job with a run in flight (its
// Cancel), its definition and its backfill form, a failed run (its Retry,
// its output's last line), a job paused with a reason — at 1280 px in
// dark mode and at 390 px light and dark: readable and usable in each, no
// table scrolling sideways on a phone (the replicas and pools tables
// among them), nor for a long word (a pause reason's URL, an unknown run
// id echoed by the error page, a name of the longest kind and its run
// ids). An error page does not re-fetch its address as the live pages do
// (it may be a refused action's, answered 404 to a GET).
func TestBrowserNewPagesInEveryMode(t *testing.T) {
	longName := "warehouse-sync_" + strings.Repeat("x", 113) // 128, the longest name
	block := jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return nil })
	tab := append(table(),
		scheduler.Job{Name: "disk-usage-report", Schedule: "*/15 * * * *", Handler: jobs.Func(func(ctx context.Context) error {
			fmt.Fprint(jobs.Output(ctx), "step 1\nERROR: disk full on /var/lib/postgresql/16/main\n")
			return errors.New("command exited with code 3")
		})},
		scheduler.Job{Name: "export-orders", Schedule: "@every 1h", Handler: block, Concurrency: 2, Pool: "exports", PoolSize: 2, Lease: 10 * time.Second,
			Timeout: time.Hour, Retries: 2, Blackouts: []scheduler.Blackout{{Cron: "0 0 * * 6", Duration: 48 * time.Hour, Timezone: "Europe/Paris"}}},
		scheduler.Job{Name: "export-invoices", Schedule: "@every 1h", Handler: block, Pool: "exports", PoolSize: 2, Lease: 10 * time.Second},
		scheduler.Job{Name: longName, Schedule: "@every 1h", Handler: jobs.Func(func(context.Context) error { return errors.New("exit status 1") })})
	c := newClusterOf(t, 1, tab)
	c.ctl.UseTable(tab)
	failed := c.runOnce(t, "disk-usage-report")
	c.runOnce(t, longName)
	c.runOnce(t, "sweep")
	running := c.waitRunning(t, "export-orders")
	c.waitRunning(t, "export-invoices")
	if err := c.ctl.PauseWithReason(t.Context(), "nightly-report", "waiting for the warehouse migration: https://tracker.example.com/browse/INC-4711?focusedCommentId=1234567&page=com.example.issuetabpanels:comment-tabpanel", "ops"); err != nil {
		t.Fatal(err)
	}
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	pages := []struct{ name, path, ready string }{
		{"jobs", "/", "ul.strip"},
		{"runs-bad", "/runs?outcome=bad", "table.runs .lastline"},
		{"pools", "/pools", "table.pools"},
		{"replicas", "/replicas", "table.replicas"},
		{"error-long-id", "/runs/sweep@" + strings.Repeat("9", 300), "p.error"},
		{"job-long-name", "/jobs/" + longName, "table.history"},
		{"job-running", "/jobs/export-orders", `form[action$="/cancel"] button`},
		{"job-paused", "/jobs/nightly-report", "dl.def"},
		{"run-failed", "/runs/" + url.PathEscape(failed), `form[action$="/retry"] button`},
		{"run-running", "/runs/" + url.PathEscape(running), `form[action$="/cancel"] button`},
	}
	for _, mode := range []struct {
		name        string
		phone, dark bool
	}{{"1280-dark", false, true}, {"390", true, false}, {"390-dark", true, true}} {
		if mode.phone {
			b.Phone(t, mode.dark)
		} else {
			b.Desktop(t, mode.dark)
		}
		for _, p := range pages {
			b.Do(t, p.name+" "+mode.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			if p.name == "job-running" {
				// The backfill form open, its fields in view too.
				b.Do(t, "backfill form", browsertest.Click("details.backfill-form summary"), chromedp.WaitVisible(chromedp.ID("bf-from")))
			}
			if p.name == "jobs" {
				if broken := browsertest.JS[string](t, b, `[...document.querySelectorAll("table.jobs tbody th a:not(.long)")].filter(a => a.getClientRects().length > 1).map(a => a.innerText).join(", ")`); broken != "" {
					t.Errorf("at %s these job names break across lines: %s", mode.name, broken)
				}
			}
			if problems := browsertest.JS[string](t, b, pageCheck); problems != "" {
				t.Errorf("%s at %s:\n%s", p.path, mode.name, problems)
			}
			b.Shot(t, "mode-"+p.name+"-"+mode.name)
		}
	}
	b.Desktop(t, false)

	// The live refresh, counted: a live page fetches itself again (within
	// its period), an error page never, also when it becomes visible.
	const countFetches = `(() => { window.fetches = 0; const f = window.fetch; window.fetch = (...a) => { window.fetches++; return f(...a); };
		document.dispatchEvent(new Event("visibilitychange")); return true; })()`
	b.Do(t, "runs page", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	browsertest.JS[bool](t, b, countFetches)
	b.Do(t, "the runs page refreshes", browsertest.WaitJS(`window.fetches > 0`))
	for _, path := range []string{"/jobs/no-such-job", "/runs/no-such-run"} {
		b.Do(t, path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("p.error")))
		browsertest.JS[bool](t, b, countFetches)
		if n := browsertest.JS[int](t, b, `window.fetches`); n != 0 {
			t.Errorf("the error page at %s fetched its address again %d times", path, n)
		}
	}
}
