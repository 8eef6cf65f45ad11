package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newServer starts an httptest server for h and closes it with the test.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/200", http.StatusFound)
			return
		}
		var code int
		if _, err := fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &code); err != nil {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "body of "+r.URL.Path)
	})
	for _, tc := range []struct {
		path      string
		expect    []int
		ok        bool
		permanent bool
	}{
		{"/200", nil, true, false},
		{"/204", nil, true, false},
		{"/299", nil, true, false},
		{"/redirect", nil, true, false}, // followed to /200
		{"/201", []int{200, 204}, false, true},
		{"/204", []int{200, 204}, true, false},
		{"/404", []int{404}, true, false},
		{"/404", nil, false, true},
		{"/400", nil, false, true},
		{"/409", nil, false, true},
		{"/408", nil, false, false},
		{"/429", nil, false, false},
		{"/500", nil, false, false},
		{"/503", []int{200}, false, false},
		{"/304", nil, false, true},
	} {
		h := &HTTP{URL: srv.URL + tc.path, ExpectStatus: tc.expect}
		err := h.Run(t.Context())
		if tc.ok {
			if err != nil {
				t.Errorf("%s expect %v: %v, want nil", tc.path, tc.expect, err)
			}
			continue
		}
		var se *StatusError
		if !errors.As(err, &se) {
			t.Errorf("%s expect %v: %v, want a *StatusError", tc.path, tc.expect, err)
			continue
		}
		if code := strings.TrimPrefix(tc.path, "/"); !strings.Contains(err.Error(), code) ||
			se.Snippet != "body of "+tc.path && tc.path != "/304" {
			t.Errorf("%s: error %q / snippet %q lacks the status or body", tc.path, err, se.Snippet)
		}
		if IsPermanent(err) != tc.permanent {
			t.Errorf("%s expect %v: IsPermanent = %v, want %v", tc.path, tc.expect, IsPermanent(err), tc.permanent)
		}
	}
}

func TestHTTPRequest(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, body, host string
		header             http.Header
	}
	got := make(chan seen, 1)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, string(b), r.Host, r.Header.Clone()}
		_, _ = io.WriteString(w, "accepted")
	})
	ctx := NewContext(t.Context(), Info{Job: "hook", RunID: "hook@2026-11-22T04:00:00Z", FencingToken: 7, Slot: 2, Attempt: 1})
	tail := NewTail(0)
	h := &HTTP{
		Method: http.MethodPost,
		URL:    srv.URL + "/hook",
		Headers: map[string]string{
			"Authorization":          "Bearer secret",
			"Content-Type":           "application/json",
			"idempotency-key":        "spoofed", // the run's values win, whatever the case
			"Solocron-Fencing-Token": "1",
			"solocron-fencing-slot":  "9",
			"Host":                   "example.test",
		},
		Body: `{"winners":10}`,
	}
	if err := h.Run(WithOutput(ctx, tail)); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.method != "POST" || s.body != `{"winners":10}` || s.host != "example.test" {
		t.Errorf("server saw method %q body %q host %q", s.method, s.body, s.host)
	}
	for k, want := range map[string]string{
		"Authorization":          "Bearer secret",
		"Content-Type":           "application/json",
		"Idempotency-Key":        "hook@2026-11-22T04:00:00Z",
		"Solocron-Fencing-Token": "7",
		"Solocron-Fencing-Slot":  "2",
	} {
		if v := s.header.Values(k); len(v) != 1 || v[0] != want {
			t.Errorf("header %s = %q, want [%q]", k, v, want)
		}
	}
	if tail.String() != "accepted" {
		t.Errorf("output %q, want the response body", tail.String())
	}

	// Method defaults to GET with no body; without Info no run headers
	// are invented, configured ones are left alone.
	h = &HTTP{URL: srv.URL, Headers: map[string]string{"Idempotency-Key": "mine"}}
	if err := h.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = <-got
	if s.method != "GET" || s.body != "" || s.header.Get("Idempotency-Key") != "mine" || s.header.Get("Solocron-Fencing-Token") != "" {
		t.Errorf("server saw %q %q %v", s.method, s.body, s.header)
	}
}

func TestHTTPTimeout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; ends when the client goes away
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := (&HTTP{URL: srv.URL}).Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v, want it to wrap context.DeadlineExceeded", err)
	}
	if IsPermanent(err) {
		t.Errorf("Run: %v is permanent", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Run took %v with a 200ms timeout", elapsed)
	}

	myCause := errors.New("lease lost")
	ctx, cancelCause := context.WithCancelCause(t.Context())
	time.AfterFunc(100*time.Millisecond, func() { cancelCause(myCause) })
	if err := (&HTTP{URL: srv.URL}).Run(ctx); !errors.Is(err, myCause) {
		t.Errorf("Run: %v, want it to wrap the cause", err)
	}
}

func TestHTTPSnippetBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 100_000) // 1 MB
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
		_, _ = io.WriteString(w, big)
	})
	tail := NewTail(1 << 20)
	if err := (&HTTP{URL: srv.URL}).Run(WithOutput(t.Context(), tail)); err != nil {
		t.Fatal(err)
	}
	if got := tail.String(); got != big[:snippetLimit] {
		t.Errorf("output is %d bytes, want the first %d of the body", len(got), snippetLimit)
	}
	err := (&HTTP{URL: srv.URL + "/fail"}).Run(t.Context())
	var se *StatusError
	if !errors.As(err, &se) || se.Snippet != big[:snippetLimit] || len(err.Error()) > snippetLimit+100 {
		t.Errorf("Run: %d-byte error, snippet %d bytes; want a snippet of %d", len(err.Error()), len(se.Snippet), snippetLimit)
	}
}

// TestHTTPReusesConnections: the body beyond the snippet is drained (up to a
// bound), so consecutive runs share one connection.
func TestHTTPReusesConnections(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 20_000))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	for range 5 {
		if err := (&HTTP{URL: srv.URL, Client: client}).Run(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 runs opened %d connections, want 1", n)
	}
}

func TestHTTPBadInput(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "://x", "ftp://example.com/", "/relative", "http://", "http://example.com/%zz", "http://[::1"} {
		err := (&HTTP{URL: u}).Run(t.Context())
		if err == nil || !IsPermanent(err) {
			t.Errorf("URL %q: %v, want a permanent error", u, err)
		}
	}
	srv := newServer(t, func(http.ResponseWriter, *http.Request) {})
	if err := (&HTTP{Method: "BAD METHOD", URL: srv.URL}).Run(t.Context()); !IsPermanent(err) {
		t.Errorf("bad method: %v, want a permanent error", err)
	}
}

func TestHTTPTransportErrorRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	err := (&HTTP{URL: url + "/x?token=secret"}).Run(t.Context())
	if err == nil || IsPermanent(err) {
		t.Errorf("connection refused: %v, want a retryable error", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows the query", err)
	}
}

func TestHTTPSecretsNotInErrors(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	u := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/x?token=hunter2"
	err := (&HTTP{URL: u}).Run(t.Context())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Run: %v; want an error that does not show the password or query", err)
	}
	err = (&HTTP{URL: "http://user:hunter2@bad host/"}).Run(t.Context())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Run: %v; want an error that does not show the password", err)
	}
}

func TestHTTPCustomClient(t *testing.T) {
	t.Parallel()
	var used atomic.Bool
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Store(true)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})}
	if err := (&HTTP{URL: "http://example.invalid/", Client: client}).Run(t.Context()); err != nil || !used.Load() {
		t.Errorf("Run: %v, client used %v", err, used.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHTTPRedirectPolicy: by default a redirect to another host, or from
// https to http, is refused before anything is sent there (custom headers,
// fencing token, body); all follows it; none follows nothing.
func TestHTTPRedirectPolicy(t *testing.T) {
	t.Parallel()
	var otherHits atomic.Int32
	var otherHeader atomic.Value
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherHeader.Store(r.Header.Get("X-Api-Key"))
		_, _ = io.WriteString(w, "answer of the other host")
	})
	origin := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			w.Header().Set("Location", other.URL+"/stolen?token=q")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/ok", http.StatusTemporaryRedirect)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	run := func(path, policy string) (error, string) {
		tail := NewTail(1 << 10)
		h := &HTTP{Method: "POST", URL: origin.URL + path, Body: "payload", FollowRedirects: policy,
			Headers: map[string]string{"X-Api-Key": "header-secret"}}
		err := h.Run(WithOutput(t.Context(), tail))
		return err, tail.String()
	}

	for _, policy := range []string{"", RedirectSameHost} {
		err, out := run("/away", policy)
		var re *RedirectError
		if !errors.As(err, &re) || !IsPermanent(err) || re.Status != 307 || re.Reason != "another host" ||
			re.To != other.URL+"/stolen" || re.Policy != RedirectSameHost {
			t.Errorf("policy %q, redirect to another host: %v (%+v), want a permanent *RedirectError", policy, err, re)
		}
		if strings.Contains(fmt.Sprint(err), "token=q") || strings.Contains(out, "other host") {
			t.Errorf("policy %q: error %q / output %q carries the other host's query or answer", policy, err, out)
		}
		if err, _ := run("/here", policy); err != nil {
			t.Errorf("policy %q, redirect to the same host: %v", policy, err)
		}
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other host got %d requests under same_host", n)
	}
	if err, out := run("/away", RedirectAll); err != nil || out != "answer of the other host" {
		t.Errorf("all: %v %q", err, out)
	}
	if otherHits.Load() != 1 || otherHeader.Load() != "header-secret" {
		t.Errorf("all: the other host saw %d requests", otherHits.Load())
	}
	var re *RedirectError
	if err, _ := run("/here", RedirectNone); !errors.As(err, &re) || re.Reason != "redirects not followed" {
		t.Errorf("none: %v, want a *RedirectError", err)
	}
	if err := (&HTTP{URL: origin.URL, FollowRedirects: "sometimes"}).Run(t.Context()); !IsPermanent(err) {
		t.Errorf("a bad policy: %v, want a permanent error", err)
	}
}

// TestHTTPRedirectDowngrade: https to http on the same host name is refused
// under same_host.
func TestHTTPRedirectDowngrade(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	plain := newServer(t, func(w http.ResponseWriter, r *http.Request) { plainHits.Add(1) })
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Same host (127.0.0.1), plain http: a downgrade.
		http.Redirect(w, r, plain.URL+"/", http.StatusFound)
	}))
	t.Cleanup(tlsSrv.Close)
	h := &HTTP{URL: tlsSrv.URL, Client: tlsSrv.Client()}
	var re *RedirectError
	if err := h.Run(t.Context()); !errors.As(err, &re) || re.Reason != "https to http" {
		t.Errorf("Run: %v, want a *RedirectError for https to http", err)
	}
	if plainHits.Load() != 0 {
		t.Error("the request went over plain http")
	}
}

// TestHTTPDefaultTimeout: with no timeout of its own and a context without
// deadline, a request to a server that never answers ends after Timeout
// (DefaultHTTPTimeout when 0), not never.
func TestHTTPDefaultTimeout(t *testing.T) {
	t.Parallel()
	if DefaultHTTPTimeout != time.Minute {
		t.Errorf("DefaultHTTPTimeout %v, documented as 1m", DefaultHTTPTimeout)
	}
	h := &HTTP{}
	if h.timeout() != DefaultHTTPTimeout {
		t.Errorf("the zero HTTP's timeout is %v", h.timeout())
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	start := time.Now()
	err := (&HTTP{URL: srv.URL, Timeout: 300 * time.Millisecond}).Run(t.Context())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v, want a deadline", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %v", d)
	}
}

// TestHTTPEndlessBodyBounded: a body that never ends is read only up to the
// bound; Run returns.
func TestHTTPEndlessBodyBounded(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("z", 8192))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	done := make(chan error, 1)
	go func() { done <- (&HTTP{URL: srv.URL, Timeout: -1}).Run(t.Context()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run reads an endless body forever")
	}
}
