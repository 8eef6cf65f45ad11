package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
)

// The console answers under the service's prefix, behind the token; the
// service's own routes are untouched.
func TestConsoleUnderPrefix(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, "let-me-in") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "http://" + ln.Addr().String()
	testkit.WaitFor(t, 10*time.Second, "the service", func() bool { return testkit.HTTPStatus(base+"/") == 200 })

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := c.Get(base + "/ops/solocron/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/ops/solocron/signin" {
		t.Fatalf("without a session the console sends to %s", resp.Request.URL)
	}
	req, _ := http.NewRequest("POST", base+"/ops/solocron/signin", strings.NewReader(url.Values{"token": {"let-me-in"}, "next": {"/ops/solocron/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(page, `href="/ops/solocron/jobs/cleanup"`) || !strings.Contains(page, "invoice-run") {
		t.Fatalf("after sign-in: %d\n%s", resp.StatusCode, page)
	}
	// A DNS-rebinding page sends its own name: 421, session or not.
	req, _ = http.NewRequest("GET", base+"/ops/solocron/", nil)
	req.Host = "rebind.evil.example"
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %d, want 421", resp.StatusCode)
	}
}
