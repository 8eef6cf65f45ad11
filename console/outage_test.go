package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// The console while the store does not answer (Redis down), in Chromium.
// A page left open does not go on showing the state from before the
// outage as if it were live: a banner says it is not up to date and why,
// and goes once the store answers again. A page opened during the outage
// is an error page that loads itself again, and shows the jobs once the
// store answers. An action sent meanwhile says that whether it was applied
// is unknown (a Run now the store applied but whose answer was lost must
// not be sent twice in the belief it was not).
func TestBrowserStoreDown(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, console.Config{CacheTTL: 1}))
	// The 503s this test provokes show as failed loads.
	b := browsertest.New(t, regexp.MustCompile(`favicon`), regexp.MustCompile(`status of 503\b`))
	const banner = `(document.getElementById("stale") || {innerText: ""}).innerText`

	b.Do(t, "jobs page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	c.srv.SetError("LOADING Redis is loading the dataset in memory")
	b.Do(t, "the open page says it is stale", browsertest.WaitJS(banner+`.includes("did not answer")`))
	if s := browsertest.JS[string](t, b, banner); !strings.Contains(s, "Not up to date") || !strings.Contains(s, "LOADING") {
		t.Errorf("the banner of a page whose refresh failed: %q", s)
	}
	b.Shot(t, "store-down-stale")
	c.srv.SetError("")
	b.Do(t, "the banner goes once the store answers", browsertest.WaitJS(`document.getElementById("stale") === null`))

	c.srv.SetError("LOADING Redis is loading the dataset in memory")
	b.Do(t, "a page opened during the outage", chromedp.Navigate(base+"/"),
		browsertest.WaitJS(`(document.querySelector("p.error") || {innerText: ""}).innerText.includes("did not answer")`))
	b.Shot(t, "store-down-error")
	c.srv.SetError("")
	b.Do(t, "the error page shows the jobs once the store answers", chromedp.WaitVisible(chromedp.CSS("table.jobs")))

	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/evil"), chromedp.WaitVisible(chromedp.CSS(`form[action$="/trigger"] button`)))
	c.srv.SetError("LOADING Redis is loading the dataset in memory")
	b.Do(t, "Run now during the outage", browsertest.Click(`form[action$="/trigger"] button`),
		browsertest.WaitJS(`document.getElementById("flash").innerText.includes("The action failed (503)")`))
	if f := browsertest.JS[string](t, b, `document.getElementById("flash").innerText`); !strings.Contains(f, "Whether the action was applied is unknown") {
		t.Errorf("Run now while the store does not answer: %q", f)
	}
	c.srv.SetError("")
}

// The same without a browser: a page answers 503 with a meta refresh and
// Retry-After; an action answers 503 saying its effect is unknown.
func TestStoreDownAnswers(t *testing.T) {
	c := newCluster(t, 0)
	h := c.console(t, console.Config{CacheTTL: 1})
	c.srv.SetError("LOADING Redis is loading the dataset in memory")
	w := get(t, h, "/jobs/evil")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `<meta http-equiv="refresh" content="5">`) {
		t.Errorf("a page while the store does not answer: %d, Retry-After %q, body:\n%s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
}

// A replica that takes connections but never answers (frozen, cut off mid-
// connection): the page open on it says within a bound that it is not up
// to date, and an action sent to it says, once its bound passes, that
// whether it was applied is unknown, its button usable again. Both waited
// for ever: the page looked live and the button stayed disabled. (The
// bounds, 10 and 15 s, are cut to half a second here.)
func TestBrowserReplicaThatNeverAnswers(t *testing.T) {
	c := newCluster(t, 0)
	h := c.console(t, console.Config{})
	var hang atomic.Bool
	release := make(chan struct{})
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	b := newBrowser(t)
	t.Cleanup(func() { close(release) }) // first: the server's Close waits for its requests
	const banner = `(document.getElementById("stale") || {innerText: ""}).innerText`

	b.Do(t, "job page", chromedp.Navigate(base+"/jobs/evil"), chromedp.WaitVisible(chromedp.CSS(`form[action$="/trigger"] button`)))
	browsertest.JS[bool](t, b, `(() => { const t = AbortSignal.timeout.bind(AbortSignal); AbortSignal.timeout = ms => t(Math.min(ms, 500)); return true; })()`)
	hang.Store(true)
	b.Do(t, "the open page says it is stale", browsertest.WaitJS(banner+`.includes("did not answer within")`))
	b.Do(t, "Run now", browsertest.Click(`form[action$="/trigger"] button`),
		browsertest.WaitJS(`document.getElementById("flash").innerText.includes("whether the action was applied is unknown")`))
	if browsertest.JS[bool](t, b, `document.querySelector('form[action$="/trigger"] button').disabled`) {
		t.Error("Run now stays disabled after its request timed out")
	}
}

// A page open when its session ends (12 hours on, a sign-out in another
// tab, a new admin token) says it is not up to date any more: its refresh,
// sent to the sign-in form, kept the page as it was, looking live.
func TestBrowserSessionEndsOnAnOpenPage(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, consoleConfig("tok-ends")))
	b := newBrowser(t)
	b.Do(t, "sign in", chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "tok-ends"), chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.CSS("table.jobs")))
	b.Do(t, "the session ends", browsertest.Send(network.ClearBrowserCookies, cdp.Empty{}),
		browsertest.WaitJS(`(document.getElementById("stale") || {innerText: ""}).innerText.includes("session has ended")`))
}
