package console_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// Pause with a reason from the job's page: the reason and who paused show
// on the job and on the jobs page; a paused job shows no "Next run: in
// 4s"; its skipped_paused runs are not in red; a job paused after failures
// in a row shows why and how many.
func TestBrowserPauseWithReason(t *testing.T) {
	tab := append(table(),
		scheduler.Job{Name: "ticker", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil })},
		scheduler.Job{Name: "tripping", Schedule: "@every 1h", PauseAfterFailures: 2,
			Handler: jobs.Func(func(context.Context) error { return errors.New("exit status 3") })})
	c := newClusterOf(t, 1, tab)
	for range 2 {
		c.runOnce(t, "tripping")
	}
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	b.Do(t, "pause with a reason", chromedp.Navigate(base+"/jobs/ticker"), chromedp.WaitVisible(chromedp.ID("reason")),
		browsertest.SendKeys("#reason", "deploy freeze INC-9"),
		browsertest.Click(`form[action$="/pause"] button`),
		browsertest.WaitJS(`document.getElementById("state").innerText.includes("deploy freeze INC-9 (paused by console from 127.0.0.1)")`))
	st, _ := c.ctl.Status(t.Context(), "ticker", 1)
	if !st.Paused || st.PausedWhy != "deploy freeze INC-9 (paused by console from 127.0.0.1)" {
		t.Fatalf("after Pause: paused %v why %q", st.Paused, st.PausedWhy)
	}
	if next := browsertest.Get(t, b, "next run", chromedp.Text(chromedp.ID("next-run"))); !strings.HasPrefix(next, "none while paused") {
		t.Errorf("a paused job's next run: %q", next)
	}
	// Its skipped_paused runs: grey, not the red of failures.
	b.Do(t, "skipped rows", browsertest.WaitJS(`document.querySelector("table.history").innerText.includes("skipped (paused)")`))
	if red := browsertest.JS[string](t, b, `[...document.querySelectorAll("table.history tr")].filter(r => r.innerText.includes("skipped (paused)"))
		.map(r => [...r.querySelectorAll("small, .outcome")].map(e => getComputedStyle(e).color)).flat()
		.filter(c => c === getComputedStyle(document.querySelector(".outcome.bad") || document.body).color && c !== getComputedStyle(document.body).color).join(" ")`); red != "" {
		t.Errorf("skipped_paused rows are drawn in the failures' colour: %s", red)
	}
	if browsertest.JS[bool](t, b, `[...document.querySelectorAll("table.history small.err")].some(e => e.closest("tr").innerText.includes("skipped (paused)"))`) {
		t.Error("a skipped_paused row's text is marked as an error")
	}
	b.Shot(t, "job-paused")

	// The jobs page: both paused jobs with their reasons; no "in 1s".
	testkit.WaitFor(t, 10*time.Second, "tripping paused", func() bool {
		st, _ := c.ctl.Status(t.Context(), "tripping", 1)
		return st.Paused
	})
	b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	row := func(name string) string {
		return browsertest.JS[string](t, b, `[...document.querySelectorAll("table.jobs tbody tr")].find(r => r.querySelector("th").innerText.startsWith("`+name+`")).innerText`)
	}
	if r := row("ticker"); !strings.Contains(r, "deploy freeze INC-9") || strings.Contains(r, "in 1s") || !strings.Contains(r, "none while paused") {
		t.Errorf("the jobs page's row of ticker:\n%s", r)
	}
	if r := row("tripping"); !strings.Contains(r, "paused after 2 runs in a row ended badly") || !strings.Contains(r, "2 failures in a row") {
		t.Errorf("the jobs page's row of a job paused after failures:\n%s", r)
	}
	b.Shot(t, "jobs-paused")
}
