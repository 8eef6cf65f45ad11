package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// The job page refreshes itself every few seconds; an operator in the
// middle of something keeps it: the pause reason being typed, the backfill
// form opened and its range, the keyboard focus (on Run now, on a run's
// Cancel). They were all swapped for the server's fresh copy: the text
// vanished, the form closed and the focus fell to the page's top.
func TestBrowserRefreshKeepsWhatTheOperatorIsDoing(t *testing.T) {
	c := newClusterOf(t, 1, blockTable())
	c.waitRunning(t, "block")
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	// refreshed waits for the page to be drawn again after what was done.
	refreshed := func(what string) {
		t.Helper()
		before := browsertest.JS[string](t, b, `document.getElementById("updated").textContent`)
		b.Do(t, what, browsertest.WaitJS(`document.getElementById("updated").textContent !== `+jsString(before)))
	}
	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/block"), chromedp.WaitVisible(chromedp.ID("reason")),
		browsertest.Click("details.backfill-form summary"), chromedp.WaitVisible(chromedp.ID("bf-from")),
		browsertest.SetValue("#bf-parallel", "7"),
		browsertest.Focus("#reason"), browsertest.SendKeys("#reason", "incident INC-42"))
	refreshed("refresh while typing")
	type state struct {
		Reason, Parallel, Focus string
		Open                    bool
	}
	got := browsertest.JS[state](t, b, `({Reason: document.getElementById("reason").value, Parallel: document.getElementById("bf-parallel").value,
		Focus: document.activeElement.id, Open: document.querySelector("details.backfill-form").open})`)
	if want := (state{Reason: "incident INC-42", Parallel: "7", Focus: "reason", Open: true}); got != want {
		t.Errorf("after a refresh the page has %+v, want %+v", got, want)
	}
	for _, sel := range []string{`form[action$="/trigger"] button`, `ul.running form[action$="/cancel"] button`} {
		b.Do(t, "focus "+sel, browsertest.Focus(sel))
		refreshed("refresh with the focus on " + sel)
		if !browsertest.JS[bool](t, b, `document.activeElement === document.querySelector('`+sel+`')`) {
			t.Errorf("after a refresh the focus left %s for %s", sel, browsertest.JS[string](t, b, `document.activeElement.outerHTML.slice(0, 80)`))
		}
	}
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
