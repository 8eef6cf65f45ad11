package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/solocron/solocron/internal/testkit/browsertest"
)

// The console's pages as an operator sees them, in headless Chromium: each
// test serves a console over miniredis from an httptest server (no daemon),
// so a browser test costs a second, not a cluster's start. The daemon's
// own browser test (cmd/scheduler) covers three real replicas.

// newBrowser is a headless Chromium tab (browsertest.New) that fails the
// test on any console error but the answers a test asks for on purpose (a
// refused action), which the browser logs as failed loads.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	return browsertest.New(t, regexp.MustCompile(`favicon`), regexp.MustCompile(`status of (400|403|404|409|429)\b`))
}

type browser = browsertest.Browser

// serve serves h on a loopback httptest server.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The open redirect of issue: /signin?next=/%09/<other host>/x sent the
// browser, once signed in, to the other host. Here the other host is a
// second local server; the browser must stay on the console.
func TestBrowserSignInStaysOnTheConsole(t *testing.T) {
	c := newCluster(t, 0)
	base := serve(t, c.console(t, consoleConfig("tok-redirect")))
	other := strings.TrimPrefix(serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<title>elsewhere</title>elsewhere")
	})), "http://")
	b := newBrowser(t)
	for _, next := range []string{"/%09/" + other + "/x", "/%5C" + other + "/x", "/%0d%0a/" + other + "/x", "//" + other + "/x", "/\\" + other + "/x"} {
		b.Do(t, "sign-in form "+next, chromedp.Navigate(base+"/signin?next="+next), chromedp.WaitVisible(chromedp.ID("token")))
		b.Do(t, "sign in "+next, chromedp.SendKeys(chromedp.ID("token"), "tok-redirect"), chromedp.Submit(chromedp.ID("token")))
		if loc := b.Settled(t, "/signin"); !strings.HasPrefix(loc, base+"/") {
			t.Errorf("signed in with next=%s, the browser went to %s", next, loc)
		}
		// Signed in, the form sends on at once: still home.
		b.Do(t, "signed in, "+next, chromedp.Navigate(base+"/signin?next="+next))
		if loc := b.Settled(t, "/signin"); !strings.HasPrefix(loc, base+"/") {
			t.Errorf("signed in, next=%s sent the browser to %s", next, loc)
		}
		b.Do(t, "sign out", browsertest.Click(`form.signout button`), chromedp.WaitVisible(chromedp.ID("token")))
	}
}
