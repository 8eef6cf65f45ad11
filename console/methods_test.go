package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/solocron/solocron/console"
)

// A method none of an address's routes takes is 405 with an Allow header
// naming those that do, on an error page, signed in or not, under a prefix
// or not: the actions (POST only) answered GET, PUT, DELETE... 404, as if
// they did not exist. An address that is no route is 404 whatever the
// method: an unknown action included.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	for _, prefix := range []string{"", "/ops/solocron"} {
		h := c.console(t, console.Config{Prefix: prefix, Token: "tok"})
		do := func(method, path string, auth bool) *httptest.ResponseRecorder {
			return serveAs(h, method, prefix+path, auth)
		}
		for path, allow := range map[string]string{
			"/":                             "GET, HEAD",
			"/jobs/sweep":                   "GET, HEAD",
			"/runs/sweep@x":                 "GET, HEAD",
			"/runs":                         "GET, HEAD",
			"/replicas":                     "GET, HEAD",
			"/pools":                        "GET, HEAD",
			"/assets/style.css":             "GET, HEAD",
			"/signin":                       "GET, HEAD, POST",
			"/signout":                      "POST",
			"/jobs/sweep/trigger":           "POST",
			"/jobs/sweep/pause":             "POST",
			"/jobs/sweep/resume":            "POST",
			"/jobs/sweep/backfill":          "POST",
			"/jobs/sweep/backfill-cancel":   "POST",
			"/jobs/no-such-job/trigger":     "POST", // the address's shape, whatever the name
			"/runs/sweep@x/cancel":          "POST",
			"/runs/sweep@x/retry":           "POST",
			"/runs/" + "a%2Fb@x" + "/retry": "POST",
		} {
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
				if strings.Contains(", "+allow+",", ", "+m+",") {
					continue
				}
				for _, auth := range []bool{false, true} {
					w := do(m, path, auth)
					if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != allow {
						t.Errorf("%s %s%s (signed in %v): %d, Allow %q; want 405, Allow %q", m, prefix, path, auth, w.Code, w.Header().Get("Allow"), allow)
						continue
					}
					if m != "HEAD" && (!strings.Contains(w.Body.String(), `class="error"`) || !strings.Contains(w.Body.String(), "takes "+allow+" only")) {
						t.Errorf("%s %s%s: the 405 page does not say why: %.300s", m, prefix, path, w.Body)
					}
				}
			}
		}
		if prefix != "" {
			if w := do("POST", "", true); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("POST %s: %d, Allow %q", prefix, w.Code, w.Header().Get("Allow"))
			}
		}
		for _, path := range []string{"/jobs/sweep/nothing", "/runs/sweep@x/nothing", "/jobs/sweep/", "/nothing"} {
			for _, m := range []string{"GET", "POST", "PUT"} {
				if m == "GET" && path == "/jobs/sweep/" {
					continue // leads to the job's page (TestTrailingSlashLeadsToThePage)
				}
				if w := do(m, path, true); w.Code != http.StatusNotFound || w.Header().Get("Allow") != "" {
					t.Errorf("%s %s%s: %d, Allow %q; want 404", m, prefix, path, w.Code, w.Header().Get("Allow"))
				}
			}
		}
	}
}

// serveAs answers one request to h, signed in with the token "tok" when
// auth is set.
func serveAs(h http.Handler, method, path string, auth bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if auth {
		r.Header.Set("Authorization", "Bearer tok")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
