package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// An operator at the keyboard alone: Tab reaches Run now with its focus
// shown, and Enter on it sends it at once (Run now does what it says, as a
// test or a hurried operator expects), and once however quickly Enter is
// pressed again: a double press must not draw a lottery twice. Cancel,
// which kills a run, asks first; Escape and "Back" keep the run going.
func TestBrowserActionsFromTheKeyboard(t *testing.T) {
	c := newClusterOf(t, 1, blockTable())
	id := c.waitRunning(t, "block")
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	// requested counts the manual runs of block asked for so far: pending,
	// queued for the slot, running or ended (the replica may have taken one
	// already).
	requested := func() int {
		t.Helper()
		st, err := c.ctl.Status(t.Context(), "block", 100)
		if err != nil {
			t.Fatal(err)
		}
		n := st.PendingManual + st.Waiting // block waits for its slot
		for _, r := range append(st.Running, st.History...) {
			if strings.HasPrefix(r.ID, "block@manual-") {
				n++
			}
		}
		return n
	}
	before := requested()
	const runNow = `form[action$="/trigger"] button`
	isRunNow := `document.activeElement === document.querySelector('` + runNow + `')`
	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/block"), chromedp.WaitVisible(chromedp.CSS(runNow)))
	for range 30 {
		if browsertest.JS[bool](t, b, isRunNow) {
			break
		}
		b.Do(t, "tab", chromedp.KeyEvent(kb.Tab))
	}
	if !browsertest.JS[bool](t, b, isRunNow) {
		t.Fatalf("30 presses of Tab never reached Run now (focus on %s)", browsertest.JS[string](t, b, `document.activeElement.outerHTML.slice(0, 120)`))
	}
	if style := browsertest.JS[string](t, b, `getComputedStyle(document.activeElement).outlineStyle`); style == "none" {
		t.Error("Run now, focused from the keyboard, shows no focus outline")
	}

	// Enter sends it at once, and a second Enter right after, a double
	// click, or a click just after the answer came (the refresh may have put
	// a new button there) does not send it again; a click later does.
	flashed := browsertest.WaitJS(`document.getElementById("flash").innerText.includes("Run requested")`)
	b.Do(t, "Enter twice on Run now", chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.Enter), flashed)
	if browsertest.JS[bool](t, b, `!!document.querySelector("dialog.confirm[open]")`) {
		t.Error("Run now asked a question: it should act at once")
	}
	browsertest.JS[bool](t, b, `(() => { window.sentAt = Date.now(); document.getElementById("flash").textContent = "";
		const b = document.querySelector('`+runNow+`'); b.click(); b.click(); return true })()`)
	b.Do(t, "a while later, Run now again", browsertest.WaitJS(`Date.now() - window.sentAt > 2000`),
		browsertest.WaitJS(`(document.getElementById("flash").textContent = "", true)`),
		browsertest.Click(runNow), flashed)
	if n := requested(); n != before+2 {
		t.Errorf("after Enter twice, a double click at once and a click 2 s later on Run now: %d manual runs asked for, want %d", n, before+2)
	}

	// Cancel asks: Escape takes the question back, and the focus returns.
	const cancel = `ul.running form[action$="/cancel"] button`
	b.Do(t, "Cancel, then Escape", browsertest.Focus(cancel), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("dialog.confirm[open]")))
	if f := browsertest.JS[string](t, b, `document.activeElement.innerText`); f != "Back" {
		t.Errorf("the question opens with the focus on %q, want Back", f)
	}
	b.Do(t, "Escape", chromedp.KeyEvent(kb.Escape), browsertest.WaitJS(`!document.querySelector("dialog.confirm[open]")`))
	if !browsertest.JS[bool](t, b, `document.activeElement === document.querySelector('`+cancel+`')`) {
		t.Error("after Escape the focus is not back on Cancel")
	}
	if r, _ := c.ctl.Get(t.Context(), id); r == nil || r.CancelledBy != "" {
		t.Errorf("Escape on Cancel's question still cancelled the run: %+v", r)
	}

	// Back keeps the run too.
	b.Do(t, "Cancel, then Back", browsertest.Click(`ul.running form[action$="/cancel"] button`),
		chromedp.WaitVisible(chromedp.CSS("dialog.confirm[open]")))
	if q := browsertest.JS[string](t, b, `document.querySelector("dialog.confirm").innerText`); !containsAll(q, "Cancel run "+id, "replica-1") {
		t.Errorf("Cancel asks %q", q)
	}
	b.Shot(t, "confirm-cancel")
	b.Do(t, "Back", browsertest.Click("dialog.confirm button.no"), browsertest.WaitJS(`!document.querySelector("dialog.confirm[open]")`))
	if r, _ := c.ctl.Get(t.Context(), id); r == nil || r.CancelledBy != "" {
		t.Errorf("Back on Cancel's question still cancelled the run: %+v", r)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
