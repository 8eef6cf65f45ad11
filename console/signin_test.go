package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/solocron/solocron/console"
)

// The sign-in's next= is parsed and rebuilt: whatever it holds, the
// redirect stays on the console's own origin, under its prefix. Browsers
// drop TAB, CR and LF and read a backslash as a slash, so each of these
// would otherwise leave the site.
func TestSignInNextStaysInside(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	base, _ := url.Parse("http://console.test/")
	for _, prefix := range []string{"", "/ops/solocron"} {
		h := c.console(t, console.Config{Prefix: prefix})
		home := prefix + "/"
		hostile := []string{
			"/\t/evil.example/x", "/%09/evil.example/x", "/\r\n/evil.example/x", "/%0d%0a/evil.example/x",
			"/\\evil.example/x", "/%5Cevil.example/x", "/\\/evil.example", "//evil.example/x", "/%2F/evil.example",
			"///evil.example", "https://evil.example/", "javascript:alert(1)", "evil.example", "/\x7f/evil.example",
			"/../../evil", home + "../../evil", home + "%2e%2e/%2e%2e/x", "/%00/evil.example",
		}
		for _, next := range hostile {
			w := get(t, h, prefix+"/signin?next="+url.QueryEscape(next))
			loc := w.Header().Get("Location")
			if w.Code != http.StatusSeeOther {
				t.Fatalf("prefix %q next %q: %d", prefix, next, w.Code)
			}
			// As a browser reads it: TAB, CR, LF dropped, "\\" as "/".
			seen := strings.NewReplacer("\t", "", "\r", "", "\n", "", "\\", "/").Replace(loc)
			u, err := base.Parse(seen)
			if err != nil || u.Host != base.Host || !strings.HasPrefix(loc, home) || strings.ContainsAny(loc, "\\\t\r\n\x00\x7f") {
				t.Errorf("prefix %q next %q redirects to %q", prefix, next, loc)
			}
		}
		// What belongs inside stays as asked.
		for next, want := range map[string]string{
			home + "jobs/sweep":             home + "jobs/sweep",
			home + "jobs/sweep?page=2":      home + "jobs/sweep?page=2",
			home + "?q=sw&outcome=failed":   home + "?outcome=failed&q=sw",
			home + "runs/sweep@manual-1abc": home + "runs/sweep@manual-1abc",
			home:                            home,
		} {
			if loc := get(t, h, prefix+"/signin?next="+url.QueryEscape(next)).Header().Get("Location"); loc != want {
				t.Errorf("prefix %q next %q redirects to %q, want %q", prefix, next, loc, want)
			}
		}
	}
}

// consoleConfig is a console with a token, quiet.
func consoleConfig(token string) console.Config {
	return console.Config{Token: token, Logger: quiet}
}

// httpPost is a same-origin form POST to path.
func httpPost(path string, form url.Values) *http.Request {
	r := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return r
}

func httptestRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }
