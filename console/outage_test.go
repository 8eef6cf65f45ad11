package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

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
	b.Do(t, "Run now during the outage", chromedp.Click(chromedp.CSS(`form[action$="/trigger"] button`)),
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
