package console_test

import (
	"strings"

	"github.com/chromedp/chromedp"
	"testing"
	"time"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/scheduler"
)

// The job page shows the job's backfill: progress, what ran, and its end;
// the history says which runs were the backfill's.
func TestJobPageShowsBackfill(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2)
	h := c.console(t, console.Config{})
	if body := get(t, h, "/jobs/sweep").Body.String(); strings.Contains(body, `id="backfill"`) {
		t.Fatal("a backfill shown before any")
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.ctl.Backfill(t.Context(), c.table[2], from, from.Add(5*time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "backfill done", func() bool {
		b, _ := c.ctl.BackfillStatus(t.Context(), "sweep")
		return b != nil && b.Done()
	})
	body := get(t, h, "/jobs/sweep").Body.String()
	for _, want := range []string{`<progress value="6" max="6"></progress> <b>6/6</b> decided · finished`, "6 ran · 0 had run before",
		"parallel 2", "backfill"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if n := strings.Count(body, ">"+string(scheduler.KindBackfill)+"<"); n != 6 {
		t.Errorf("history shows %d backfill runs, want 6", n)
	}
}

// Backfill from the job's page: start it (range, parallel), watch its
// progress, cancel one; the history is ordered by scheduled instant, so the
// backfill's runs of March do not come first, nor show as the last run;
// the backfill's card stays two lines at desktop width.
func TestBrowserBackfillFromJobPage(t *testing.T) {
	c := newCluster(t, 2)
	base := serve(t, c.console(t, console.Config{}))
	manual := c.runOnce(t, "sweep")
	b := newBrowser(t)
	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/sweep"), browsertest.Click("details.backfill-form summary"),
		chromedp.WaitVisible(chromedp.ID("bf-from")),
		browsertest.SetValue("#bf-from", "2026-03-01T00:00"), browsertest.SetValue("#bf-to", "2026-03-01T05:00"),
		browsertest.SetValue("#bf-parallel", "2"),
		browsertest.Confirm(`form[action$="/backfill"] button`))
	b.Do(t, "started", browsertest.WaitJS(`document.getElementById("flash").innerText != ""`))
	if f := browsertest.Get(t, b, "flash", chromedp.Text(chromedp.ID("flash"))); !strings.Contains(f, "Backfill started") {
		t.Fatalf("after Start: %q", f)
	}
	b.Do(t, "progress", browsertest.WaitJS(`(document.getElementById("backfill") || {innerText: ""}).innerText.includes("6/6 decided · finished")`))
	if h := browsertest.JS[float64](t, b, `document.getElementById("backfill").getBoundingClientRect().height`); h > 64 {
		t.Errorf("the backfill's card is %.0f px tall at 1280 px", h)
	}
	b.Do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table.history")))
	first := browsertest.JS[string](t, b, `document.querySelector("table.history tbody tr a").innerText`)
	if first != manual {
		t.Errorf("the history's first row is %s, want the latest instant's run %s", first, manual)
	}
	b.Shot(t, "job-backfill")
	b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	if last := browsertest.JS[string](t, b, `[...document.querySelectorAll("table.jobs tbody tr")].find(r => r.querySelector("th").innerText.startsWith("sweep")).querySelector('td[data-label="Last run"] a').href`); !strings.HasSuffix(last, "/runs/"+manual) {
		t.Errorf("the jobs page's last run of sweep links %s, want %s (not a backfill's)", last, manual)
	}

	// A long one, cancelled from the page.
	b.Do(t, "long backfill", chromedp.Navigate(base+"/jobs/sweep"), browsertest.Click("details.backfill-form summary"),
		browsertest.SetValue("#bf-from", "2025-01-01T00:00"), browsertest.SetValue("#bf-to", "2025-12-31T00:00"),
		browsertest.Confirm(`form[action$="/backfill"] button`),
		browsertest.WaitJS(`(document.getElementById("backfill") || {innerText: ""}).innerText.includes("going on")`),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/backfill-cancel"] button`)),
		browsertest.Confirm(`form[action$="/backfill-cancel"] button`),
		browsertest.WaitJS(`document.getElementById("backfill").innerText.includes("cancelled")`))
	if st, _ := c.ctl.BackfillStatus(t.Context(), "sweep"); st == nil || !st.Cancelled || st.Decided == st.Total {
		t.Errorf("after Cancel the backfill is %+v", st)
	}
	// A bad range says why.
	b.Do(t, "bad range", chromedp.Navigate(base+"/jobs/sweep"), browsertest.Click("details.backfill-form summary"),
		browsertest.SetValue("#bf-from", "2025-03-01T00:00"), browsertest.SetValue("#bf-to", "2025-02-01T00:00"),
		browsertest.Confirm(`form[action$="/backfill"] button`),
		browsertest.WaitJS(`document.getElementById("flash").innerText.includes("(400)")`))
}
