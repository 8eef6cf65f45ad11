package console_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/solocron/solocron/console"
)

// A page's address typed with a trailing slash (/jobs/, /runs/x/) leads to
// the page, its query kept; an address that is no page stays 404 with or
// without it, and an action's address is not redirected to (GET there is
// 405). Before, every such address was "No such page".
func TestTrailingSlashLeadsToThePage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	for _, prefix := range []string{"", "/ops/solocron"} {
		h := c.console(t, console.Config{Prefix: prefix, Token: "tok"})
		do := func(method, path string) *httptest.ResponseRecorder { return serveAs(h, method, prefix+path, true) }
		for path, to := range map[string]string{
			"/runs/":                   "/runs",
			"/pools/":                  "/pools",
			"/jobs/sweep/":             "/jobs/sweep",
			"/runs/sweep@x/":           "/runs/sweep@x",
			"/runs/a%2Fb@x/":           "/runs/a%2Fb@x",
			"/runs/?outcome=failed":    "/runs?outcome=failed",
			"/jobs/sweep/?from=20&x=1": "/jobs/sweep?from=20&x=1",
		} {
			for _, m := range []string{"GET", "HEAD"} {
				w := do(m, path)
				if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != prefix+to {
					t.Errorf("%s %s%s: %d to %q; want 301 to %q", m, prefix, path, w.Code, w.Header().Get("Location"), prefix+to)
				}
			}
		}
		for path, code := range map[string]int{
			"/nope/":               http.StatusNotFound,
			"/jobs/":               http.StatusNotFound, // /jobs is no page either
			"/jobs/sweep/trigger/": http.StatusNotFound, // an action: no GET to lead to
			"/jobs/sweep/nope/":    http.StatusNotFound,
		} {
			if w := do("GET", path); w.Code != code {
				t.Errorf("GET %s%s: %d (Location %q); want %d", prefix, path, w.Code, w.Header().Get("Location"), code)
			}
		}
		if w := do("POST", "/runs/"); w.Code == http.StatusMovedPermanently {
			t.Errorf("POST %s/runs/ redirected to %q: only GET and HEAD are", prefix, w.Header().Get("Location"))
		}
	}
}
