package notify_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/notify"
)

// RFC 4231, test case 2.
func TestSign(t *testing.T) {
	body := []byte("what do ya want for nothing?")
	const want = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got := notify.Sign("Jefe", body); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	if !notify.Verify("Jefe", body, want) || notify.Verify("jefe", body, want) || notify.Verify("Jefe", append(body, '!'), want) {
		t.Error("Verify accepts a wrong key or body, or refuses the right one")
	}
}

func TestRedact(t *testing.T) {
	got := notify.Redact("https://user:pw@hooks.example.com/x?token=abc#f")
	if got != "https://hooks.example.com/x?xxxxx" {
		t.Errorf("Redact = %s", got)
	}
}

func TestValidate(t *testing.T) {
	good := notify.Target{Name: "ops", URL: "https://h/x", On: []notify.Event{notify.Failed, notify.Recovered}}
	if err := good.Validate(); err != nil {
		t.Errorf("good target: %v", err)
	}
	bad := notify.Target{Name: "a b", URL: "https://u:secretpw@/x", On: []notify.Event{"failure"}, Timeout: -time.Second,
		Headers: map[string]string{"solocron-delivery": "x"}}
	err := bad.Validate()
	for _, want := range []string{`name "a b"`, "has no host", `unknown event "failure"`, "timeout", "set by the scheduler"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "secretpw") {
		t.Errorf("Validate shows the URL's password: %v", err)
	}
}

// Post sends the headers, signs the body, and says why a delivery failed
// without the URL's credentials.
func TestPost(t *testing.T) {
	var got http.Header
	var body []byte
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	tg := notify.Target{Name: "ops", URL: strings.Replace(srv.URL, "http://", "http://u:pw@", 1), On: notify.Events,
		Secret: "s", Headers: map[string]string{"X-Team": "payments"}}
	payload := []byte(`{"event":"failed"}`)
	if err := notify.Post(context.Background(), nil, tg, notify.Failed, "j@2026-01-01T00:00:00Z:failed", payload); err != nil {
		t.Fatal(err)
	}
	if got.Get(notify.HeaderDelivery) != "j@2026-01-01T00:00:00Z:failed" || got.Get(notify.HeaderEvent) != "failed" ||
		got.Get("X-Team") != "payments" || got.Get("Content-Type") != "application/json" ||
		!notify.Verify("s", body, got.Get(notify.HeaderSignature)) {
		t.Errorf("headers %v body %s", got, body)
	}
	status = http.StatusInternalServerError
	err := notify.Post(context.Background(), nil, tg, notify.Failed, "k", payload)
	var se *notify.StatusError
	if !errors.As(err, &se) || se.Code != 500 {
		t.Errorf("500: %v", err)
	}
	srv.Close()
	err = notify.Post(context.Background(), nil, tg, notify.Failed, "k", payload)
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("closed receiver: %v", err)
	}
}
