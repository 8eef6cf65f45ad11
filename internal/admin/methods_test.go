package admin_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// Every path of the API answers a method none of its routes takes 405,
// with an Allow header naming those that do and the API's JSON error body,
// before the token is asked for; the routes are one table (routes.Table),
// so a route added later gets it too.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		for path, allow := range map[string]string{
			"/healthz":                    "GET, HEAD",
			"/readyz":                     "GET, HEAD",
			"/metrics":                    "GET, HEAD",
			"/api/v1/replicas":            "GET, HEAD",
			"/api/v1/jobs":                "GET, HEAD",
			"/api/v1/jobs/tick":           "GET, HEAD",
			"/api/v1/jobs/tick/runs":      "GET, HEAD",
			"/api/v1/summary":             "GET, HEAD",
			"/api/v1/runs":                "GET, HEAD",
			"/api/v1/pools":               "GET, HEAD",
			"/api/v1/jobs/tick/trigger":   "POST",
			"/api/v1/jobs/tick/pause":     "POST",
			"/api/v1/jobs/tick/resume":    "POST",
			"/api/v1/runs/tick@x/cancel":  "POST",
			"/api/v1/runs/tick@x/retry":   "POST",
			"/api/v1/jobs/tick/backfill":  "GET, HEAD, POST, DELETE",
			"/api/v1/jobs/nojob/trigger":  "POST", // the path's shape, whatever the name
			"/api/v1/jobs/a%2Fb/backfill": "GET, HEAD, POST, DELETE",
		} {
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"} {
				if strings.Contains(", "+allow+",", ", "+m+",") {
					continue
				}
				for _, auth := range []string{"", bearer} {
					a := f.do(m, path, auth)
					if a.code != http.StatusMethodNotAllowed || a.hdr.Get("Allow") != allow {
						t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", m, path, a.code, a.hdr.Get("Allow"), allow)
						continue
					}
					if m != "HEAD" {
						a.wantError(t, http.StatusMethodNotAllowed, "method "+m+" not allowed; use "+allow)
					}
				}
			}
		}
		// Not a path of the API: 404 whatever the method.
		for _, path := range []string{"/api/v1/jobs/tick/nothing", "/api/v1/jobs/tick/trigger/", "/api/v1/jobs/", "/api/v2/jobs"} {
			for _, m := range []string{"GET", "POST", "PUT"} {
				if a := f.do(m, path, bearer); a.code != http.StatusNotFound || a.hdr.Get("Allow") != "" {
					t.Errorf("%s %s: %d, Allow %q; want 404 without Allow", m, path, a.code, a.hdr.Get("Allow"))
				}
			}
		}
	})
}

// An answer says back a name, an id or a path from the address cut short:
// the address may be as long as the server reads (64 KiB of header).
func TestHugeInputGetsAShortError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "")
		big := strings.Repeat("x", 60_000)
		for _, c := range []struct {
			method, path string
			code         int
		}{
			{"GET", "/api/v1/jobs/" + big, http.StatusNotFound},
			{"POST", "/api/v1/jobs/" + big + "/trigger", http.StatusNotFound},
			{"POST", "/api/v1/runs/tick@" + big + "/cancel", http.StatusNotFound},
			{"POST", "/api/v1/runs/" + big + "/retry", http.StatusBadRequest},
			{"GET", "/api/v1/" + big, http.StatusNotFound},
			{strings.Repeat("M", 1000), "/api/v1/jobs", http.StatusMethodNotAllowed},
		} {
			a := f.do(c.method, c.path, "", "Sec-Fetch-Site", "same-origin")
			if a.code != c.code || len(a.body) > 2<<10 {
				t.Errorf("%.20s %.40s…: %d, %d bytes; want a short %d", c.method, c.path, a.code, len(a.body), c.code)
			}
			var e struct{ Error string }
			a.decode(t, &e)
		}
	})
}
