package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/admin"
)

// The console on the admin listener, as the daemon wires it: its session
// cookie is the API's Authenticate hook, so with a token a signed-in browser
// reads /api/v1 (GET /api/v1/replicas included) and nothing else does; the
// console and the replica list are behind the Host check, and the rate
// limit, like the API.
func TestConsoleBehindTheAPIsGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, "")
		con, err := console.New(console.Config{Control: f.sched.Control(), Jobs: f.sched.Jobs, Token: token, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		f.h = admin.NewHandler(admin.Config{
			Jobs: f.sched.Jobs, Control: f.sched.Control(), Token: token, Logger: quiet, Listen: "127.0.0.1:9090",
			Ready: func() error { return nil }, Authenticate: con.Authenticate, Console: con,
		})

		// Sign in on the console: the token buys a session cookie.
		r := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
		r.Host = "127.0.0.1:9090"
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		var session *http.Cookie
		for _, c := range w.Result().Cookies() {
			if c.Name == "solocron_session" {
				session = c
			}
		}
		if w.Code != http.StatusSeeOther || session == nil {
			t.Fatalf("sign-in: %d, cookies %v", w.Code, w.Result().Cookies())
		}
		good := "solocron_session=" + session.Value
		forged := "solocron_session=" + session.Value[:strings.LastIndexByte(session.Value, '.')+1] + strings.Repeat("0", 64)

		for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/tick", "/api/v1/jobs/tick/runs", "/api/v1/replicas"} {
			if a := f.do("GET", path, "", "Cookie", good); a.code != 200 {
				t.Errorf("GET %s with the console's session: %d %s", path, a.code, a.body)
			}
			f.do("GET", path, "").wantError(t, 401, "Bearer")
			f.do("GET", path, "", "Cookie", forged).wantError(t, 401, "Bearer")
			if a := f.do("GET", path, bearer); a.code != 200 {
				t.Errorf("GET %s with the token: %d", path, a.code)
			}
		}
		// The console's pages: a session or the token, else the sign-in form.
		for _, path := range []string{"/", "/jobs/tick", "/replicas"} {
			if a := f.do("GET", path, "", "Cookie", good); a.code != 200 || !strings.Contains(a.body, "<html") {
				t.Errorf("GET %s with a session: %d", path, a.code)
			}
			if a := f.do("GET", path, "", "Cookie", forged); a.code != http.StatusSeeOther || !strings.HasPrefix(a.hdr.Get("Location"), "/signin?next=") {
				t.Errorf("GET %s with a forged session: %d %s", path, a.code, a.hdr.Get("Location"))
			}
		}
		// A foreign Host: 421 for the console as for the API, session or not.
		evil := []string{"Host", "rebind.evil.example:9090", "Cookie", good, "Sec-Fetch-Site", "same-origin"}
		for _, path := range []string{"/", "/signin", "/replicas", "/assets/style.css", "/api/v1/replicas"} {
			if a := f.do("GET", path, "", evil...); a.code != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host rebind.evil.example: %d, want 421", path, a.code)
			}
		}

		// The rate limit counts console requests too.
		f.h = admin.NewHandler(admin.Config{
			Jobs: f.sched.Jobs, Control: f.sched.Control(), Token: token, Logger: quiet, Listen: "127.0.0.1:9090",
			Ready: func() error { return nil }, Authenticate: con.Authenticate, Console: con, RateLimit: 1, RateBurst: 2,
		})
		codes := []int{}
		for range 3 {
			codes = append(codes, f.do("GET", "/signin", "").code)
		}
		if codes[2] != http.StatusTooManyRequests {
			t.Errorf("three quick console requests with a burst of 2: %v, want the third refused 429", codes)
		}
	})
}
