package console_test

import (
	"context"
	"errors"
	"fmt"
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

// The summary strip counts what needs a look, each count a link to the
// list behind it; the runs page lists every job's runs, filtered by
// outcome and time, failed rows with their output's last line; the pools
// page shows each pool's size, use, holders and waiting runs.
func TestBrowserSummaryRunsPools(t *testing.T) {
	block := jobs.Func(func(ctx context.Context) error { <-ctx.Done(); return nil })
	tab := append(table(),
		scheduler.Job{Name: "disk", Schedule: "@every 1h", Handler: jobs.Func(func(ctx context.Context) error {
			fmt.Fprint(jobs.Output(ctx), "step 1\nstep 2\nERROR: disk full on /var\n")
			return errors.New("command exited with code 3")
		})},
		scheduler.Job{Name: "exa", Schedule: "@every 1h", Handler: block, Concurrency: 3, Pool: "exports", PoolSize: 2, Lease: 10 * time.Second},
		scheduler.Job{Name: "exb", Schedule: "@every 1h", Handler: block, Pool: "exports", PoolSize: 2, Lease: 10 * time.Second})
	c := newClusterOf(t, 1, tab)
	c.ctl.UseTable(tab)
	c.runOnce(t, "disk")
	c.runOnce(t, "sweep")
	for range 2 {
		c.waitRunning(t, "exa")
	}
	if _, err := c.ctl.Trigger(t.Context(), "exb"); err != nil {
		t.Fatal(err)
	}
	if err := c.ctl.Pause(t.Context(), "nightly-report"); err != nil {
		t.Fatal(err)
	}
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ul.strip")))
	strip := browsertest.Get(t, b, "strip", chromedp.Text(chromedp.CSS("ul.strip")))
	for _, want := range []string{"2 running now", "1 failed · last hour", "1 failed · last day", "0 missed · last day", "1 paused"} {
		if !strings.Contains(strip, want) {
			t.Errorf("the summary strip lacks %q: %q", want, strip)
		}
	}
	b.Shot(t, "jobs-summary")
	b.Do(t, "failed in the last hour", browsertest.Click(`ul.strip a[href*="since=1h"]`), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	if loc := browsertest.Get(t, b, "location", chromedp.Location()); !strings.HasSuffix(loc, "/runs?outcome=bad&since=1h") {
		t.Errorf("the strip's failed link leads to %s", loc)
	}
	rows := browsertest.Get(t, b, "runs", chromedp.Text(chromedp.CSS("table.runs tbody")))
	if !strings.Contains(rows, "disk@manual-") || !strings.Contains(rows, "command exited with code 3") || !strings.Contains(rows, "› ERROR: disk full on /var") ||
		strings.Contains(rows, "sweep@") {
		t.Errorf("runs that failed in the last hour:\n%s", rows)
	}
	b.Shot(t, "runs-failed")
	b.Do(t, "all runs", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	if rows := browsertest.Get(t, b, "runs", chromedp.Text(chromedp.CSS("table.runs tbody"))); !strings.Contains(rows, "sweep@manual-") || !strings.Contains(rows, "disk@manual-") || !strings.Contains(rows, "exa@manual-") {
		t.Errorf("every run:\n%s", rows)
	}
	// The failed row in the job's own history shows the last line too.
	b.Do(t, "disk's history", chromedp.Navigate(base+"/jobs/disk"), chromedp.WaitVisible(chromedp.CSS("table.history .lastline")))

	b.Do(t, "pools page", chromedp.Navigate(base+"/pools"), chromedp.WaitVisible(chromedp.CSS("table.pools")))
	testkit.WaitFor(t, 10*time.Second, "the pool full with one waiting", func() bool {
		b.Do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table.pools")))
		row := browsertest.Get(t, b, "pool", chromedp.Text(chromedp.CSS("table.pools tbody tr")))
		return strings.Contains(row, "exports") && strings.Contains(row, "2 of 2") && strings.Contains(row, "full") &&
			strings.Count(row, "exa@manual-") == 2 && strings.Contains(row, "\t1\t") && strings.Contains(row, "exa, exb")
	})
	b.Shot(t, "pools")
	if code := get(t, c.console(t, console.Config{}), "/runs?outcome=nope").Code; code != 400 {
		t.Errorf("runs?outcome=nope: %d", code)
	}
}
