package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A job as an adversary would write it: the longest name the table takes,
// an error of thousands of characters without a space that opens a
// right-to-left override (U+202E) and never closes it, and markup in both.
// On a phone no page scrolls sideways; in a table of runs the error takes
// a few lines, not a screen each (the run's page has all of it); and the
// override turns round only the job's own words, never the console's that
// follow them ("› " and the output's last line).
func TestBrowserHostileRunText(t *testing.T) {
	name := strings.Repeat("n", 128)
	tab := []scheduler.Job{{Name: name, Schedule: "@every 1h", Handler: jobs.Func(func(ctx context.Context) error {
		fmt.Fprint(jobs.Output(ctx), "first\ntail-of-output")
		return errors.New("\u202e<img src=x onerror=window.pwned=1>" + strings.Repeat("E", 5000))
	})}}
	c := newClusterOf(t, 1, tab)
	older := c.runOnce(t, name)
	c.runOnce(t, name)
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)

	b.Do(t, "runs page", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	if tall := browsertest.JS[int](t, b, `Math.round(Math.max(...[...document.querySelectorAll("td.oc small.err")].map(e => e.getBoundingClientRect().height)))`); tall > 150 {
		t.Errorf("runs page: a run's 5,000-character error is %d px tall in the table", tall)
	}
	// "›" stays left of the output's last line: where the override leaks,
	// the line reads "tuptuo-fo-liat ›".
	order := browsertest.JS[string](t, b, `(() => {
		const s = document.querySelector("small.lastline"), n = s.firstChild, r = document.createRange();
		r.setStart(n, 0); r.setEnd(n, 1); const mark = r.getBoundingClientRect().left;
		const i = n.data.indexOf("tail"); r.setStart(n, i); r.setEnd(n, i + 1);
		return mark < r.getBoundingClientRect().left ? "ok" : "the override turned round: " + s.innerText;
	})()`)
	if order != "ok" {
		t.Errorf("runs page: %s", order)
	}

	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/"+name), chromedp.WaitVisible(chromedp.CSS("table.history")))
	if tall := browsertest.JS[int](t, b, `Math.round(Math.max(...[...document.querySelectorAll("table.history td.oc small.err")].map(e => e.getBoundingClientRect().height)))`); tall > 150 {
		t.Errorf("job page: a run's 5,000-character error is %d px tall in the history", tall)
	}

	b.Phone(t, false)
	for _, p := range []string{"/", "/jobs/" + name, "/runs/" + url.PathEscape(older), "/runs"} {
		b.Do(t, p, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main")))
		over := browsertest.JS[string](t, b, `[...document.querySelectorAll("body *")].filter(e => {
			const r = e.getBoundingClientRect();
			return r.width > 0 && r.right > 391 && !e.closest(".scroll, pre, .timeline");
		}).map(e => e.tagName.toLowerCase() + "." + e.className + " to " + Math.round(e.getBoundingClientRect().right) + " px").slice(0, 5).join(", ")`)
		if w := browsertest.JS[int](t, b, `document.documentElement.scrollWidth`); w > 390 || over != "" {
			t.Errorf("at 390 px %s is %d px wide; sticking out: %s", p, w, over)
		}
		if browsertest.JS[bool](t, b, `!!window.pwned`) {
			t.Errorf("%s: the job's markup ran", p)
		}
	}
}
