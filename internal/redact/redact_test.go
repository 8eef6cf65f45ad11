package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/solocron/solocron/internal/redact"
)

func TestStringForms(t *testing.T) {
	const secret = `p@ss"w/rd\x`
	r := redact.New(secret, "", "ab")
	if r.Short() != 1 {
		t.Errorf("Short() = %d, want 1 (\"ab\")", r.Short())
	}
	js, _ := json.Marshal(map[string]string{"v": secret})
	u := url.URL{Scheme: "redis", User: url.UserPassword("u", secret), Host: "h:1"}
	for _, in := range []string{
		"raw " + secret,
		string(js),
		"quoted " + `"p@ss\"w/rd\\x"`,
		"url " + u.String(),
		"query " + url.QueryEscape(secret),
	} {
		got := r.String(in)
		if strings.Contains(got, "w/rd") || strings.Contains(got, "w%2Frd") || !strings.Contains(got, redact.Mask) {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
	if got := r.String("ab cd"); got != "ab cd" {
		t.Errorf("a too short secret was masked: %q", got)
	}
	var nilR *redact.Redactor
	if nilR.String("x "+secret) != "x "+secret || nilR.Error(nil) != nil {
		t.Error("a nil Redactor changed something")
	}
}

func TestLongestFirst(t *testing.T) {
	r := redact.New("secret", "secret-and-more")
	if got := r.String("a secret-and-more b"); got != "a "+redact.Mask+" b" {
		t.Errorf("got %q", got)
	}
}

func TestErrorKeepsCause(t *testing.T) {
	cause := errors.New("dial tcp: password hunter22 refused")
	r := redact.New("hunter22")
	err := r.Error(cause)
	if strings.Contains(err.Error(), "hunter22") || !errors.Is(err, cause) {
		t.Errorf("Error: %q, Is(cause) %v", err, errors.Is(err, cause))
	}
	plain := errors.New("nothing secret")
	if r.Error(plain) != plain {
		t.Error("an error without a secret was wrapped")
	}
}

// TestWriterWithSlog: a JSON or text log line carrying a secret, in the
// message, an attribute or an error, is masked; added later secrets too.
func TestWriterWithSlog(t *testing.T) {
	r := redact.New()
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(r.Writer(&buf), nil), slog.NewTextHandler(r.Writer(&buf), nil)} {
		log := slog.New(h)
		r.Add(`tok"en-123`)
		log.Info("token is tok\"en-123", "err", errors.New("bad tok\"en-123"), "v", `tok"en-123`)
	}
	if s := buf.String(); strings.Contains(s, "en-123") || strings.Count(s, redact.Mask) != 6 {
		t.Errorf("log:\n%s", s)
	}
}

func TestHandler(t *testing.T) {
	r := redact.New("metric-secret")
	h := r.Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(201)
		io.WriteString(w, "a metric-")
		io.WriteString(w, "secret b\n") // cut across two writes
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 201 || rec.Body.String() != "a "+redact.Mask+" b\n" {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
}
