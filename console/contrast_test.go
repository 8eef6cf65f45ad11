package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// contrastJS lists the controls of the page whose edge has less than 3:1
// contrast against what is behind them (WCAG 1.4.11): a field whose border
// melts into the page cannot be found, least of all in an incident at
// night in dark mode.
const contrastJS = `(() => {
	const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
	const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
	const behind = e => { for (let p = e.parentElement; p; p = p.parentElement) { const c = rgb(getComputedStyle(p).backgroundColor); if (c.length === 3 || c[3] > 0) return c; } return [255, 255, 255]; };
	return [...document.querySelectorAll("main input:not([type=hidden]), main select, main button")].filter(e => e.getClientRects().length).map(e => {
		const a = lum(rgb(getComputedStyle(e).borderTopColor)), b = lum(behind(e));
		return [e.outerHTML.slice(0, 60), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
	}).filter(x => x[1] < 3).map(x => x[0] + " " + x[1].toFixed(2)).join("\n");
})()`

// The controls of the jobs, job and runs pages stand out from the page, in
// light and dark mode.
func TestBrowserControlsStandOut(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, console.Config{}))
	b := newBrowser(t)
	for _, dark := range []bool{false, true} {
		b.Desktop(t, dark)
		for _, p := range []string{"/", "/jobs/sweep", "/runs"} {
			b.Do(t, p, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main button")))
			if weak := browsertest.JS[string](t, b, contrastJS); weak != "" {
				t.Errorf("dark %v, %s: controls under 3:1 against the page:\n%s", dark, p, weak)
			}
		}
	}
	b.Desktop(t, false)
}
