package console_test

import (
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// The narrowest phone in use, 320 px: no page scrolls sideways and nothing
// but a scrolling box (a wide table's, an output's) sticks out, with a long
// pause reason, a run in flight and run ids of long names.
func TestBrowserNothingOverflowsAt320(t *testing.T) {
	c := newClusterOf(t, 1, cockpitTable())
	id := c.runOnce(t, "sweep")
	c.waitRunning(t, "flaky-sync")
	if err := c.ctl.PauseWithReason(t.Context(), "audit", "incident INC-4242: https://status.example.com/incidents/4242?component=paymentprovideroutageeuwest1", "console"); err != nil {
		t.Fatal(err)
	}
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	b.Do(t, "320 px", browsertest.Send(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 320, Height: 640, DeviceScaleFactor: 1, Mobile: true}))
	for _, p := range []string{"/", "/jobs/flaky-sync", "/jobs/audit", "/runs/" + url.PathEscape(id), "/runs", "/runs?q=sweep&replica=replica-1", "/pools", "/replicas"} {
		b.Do(t, p, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main")))
		over := browsertest.JS[string](t, b, `[...document.querySelectorAll("body *")].filter(e => {
			const r = e.getBoundingClientRect();
			return r.width > 0 && r.right > 321 && !e.closest(".scroll, pre, .timeline");
		}).map(e => e.tagName.toLowerCase() + "." + e.className + " to " + Math.round(e.getBoundingClientRect().right) + " px").slice(0, 5).join(", ")`)
		if w := browsertest.JS[int](t, b, `document.documentElement.scrollWidth`); w > 320 || over != "" {
			t.Errorf("at 320 px %s is %d px wide; sticking out: %s", p, w, over)
		}
	}
}
