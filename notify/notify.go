package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Event is what happened; a target lists the events it wants.
type Event string

// The events. Run events come from the run's close; Paused from a
// cluster-wide pause (scheduler pause, the console or the API).
const (
	Failed    Event = "failed"
	TimedOut  Event = "timed_out"
	LeaseLost Event = "lease_lost"
	Missed    Event = "missed"
	// Recovered is the first succeeded run after one or more runs that
	// ended failed, timed_out or lease_lost.
	Recovered Event = "recovered"
	Paused    Event = "paused"
)

// Events lists every event, in the order the docs give them.
var Events = []Event{Failed, TimedOut, LeaseLost, Missed, Recovered, Paused}

// Headers the scheduler sets on every POST.
const (
	HeaderEvent     = "Solocron-Event"
	HeaderDelivery  = "Solocron-Delivery"
	HeaderSignature = "Solocron-Signature"
)

// DefaultTimeout bounds one POST when a target sets none.
const DefaultTimeout = 5 * time.Second

// Target is one receiver of notifications.
type Target struct {
	// Name is how jobs refer to it (notify: [name]): [A-Za-z0-9_.-]{1,64}.
	Name string
	// URL is an absolute http:// or https:// URL. Credentials in it
	// (user:password@) are sent but never logged.
	URL string
	// On lists the events sent to it; at least one.
	On []Event
	// Headers are added to every POST (not the Solocron-* ones).
	Headers map[string]string
	// Secret, when set, signs the body: Solocron-Signature is
	// "sha256=" and the hex HMAC-SHA256 of the body with it. Never logged.
	Secret string
	// Timeout bounds one POST. Default DefaultTimeout.
	Timeout time.Duration
}

// Wants reports whether t gets event e.
func (t Target) Wants(e Event) bool { return slices.Contains(t.On, e) }

// timeout is t's timeout with its default.
func (t Target) timeout() time.Duration {
	if t.Timeout <= 0 {
		return DefaultTimeout
	}
	return t.Timeout
}

// EffectiveTimeout is the bound of one POST to t, DefaultTimeout when unset.
func (t Target) EffectiveTimeout() time.Duration { return t.timeout() }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidName reports whether name may name a target.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// ValidEvent reports whether e is one of Events.
func ValidEvent(e Event) bool { return slices.Contains(Events, e) }

// CheckURL checks a target URL: absolute, http or https, with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %s", strings.TrimPrefix(err.Error(), "parse "))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must be an http:// or https:// URL, got %q", Redact(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("has no host: %q", Redact(raw))
	}
	return nil
}

// Validate checks one target; it returns every problem, joined.
func (t Target) Validate() error {
	var errs []error
	if !ValidName(t.Name) {
		errs = append(errs, fmt.Errorf("name %q: must match [A-Za-z0-9_.-]{1,64}", t.Name))
	}
	if err := CheckURL(t.URL); err != nil {
		errs = append(errs, fmt.Errorf("url %w", err))
	}
	if len(t.On) == 0 {
		errs = append(errs, errors.New("on: needs at least one event"))
	}
	for _, e := range t.On {
		if !ValidEvent(e) {
			errs = append(errs, fmt.Errorf("on: unknown event %q (one of %s)", e, eventList()))
		}
	}
	if t.Timeout < 0 {
		errs = append(errs, errors.New("timeout: must not be negative"))
	}
	for k := range t.Headers {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Solocron-") {
			errs = append(errs, fmt.Errorf("headers: %s is set by the scheduler", k))
		}
	}
	return errors.Join(errs...)
}

func eventList() string {
	s := make([]string, len(Events))
	for i, e := range Events {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// Sign returns the Solocron-Signature value of body under secret:
// "sha256=" and the hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature under secret, in constant
// time: what a receiver does with Solocron-Signature.
func Verify(secret string, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(secret, body)))
}

// Redact returns raw without what may be a credential, for logs: no
// user:password@ and no query (hook URLs often carry a token there).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "xxxxx"
	}
	u.Fragment = ""
	return u.String()
}

// StatusError is a POST the receiver answered with a status other than
// 2xx.
type StatusError struct {
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("notify: receiver answered %d %s", e.Code, http.StatusText(e.Code))
}

// Post sends one notification to t: body, signed when t has a secret, with
// delivery as the idempotency key. It returns nil on a 2xx answer. Errors
// never contain t's URL credentials or secret.
func Post(ctx context.Context, client *http.Client, t Target, event Event, delivery string, body []byte) error {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("notify: bad target URL " + Redact(t.URL))
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "solocron-notify")
	req.Header.Set(HeaderEvent, string(event))
	req.Header.Set(HeaderDelivery, delivery)
	if t.Secret != "" {
		req.Header.Set(HeaderSignature, Sign(t.Secret, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error names the URL, credentials and all: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("notify: POST %s: %w", Redact(t.URL), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Code: resp.StatusCode}
	}
	return nil
}

// String describes t without its secret, URL credentials or header values.
func (t Target) String() string {
	s := fmt.Sprintf("%s %s on %v timeout %s", t.Name, Redact(t.URL), t.On, t.timeout())
	if t.Secret != "" {
		s += " (signed)"
	}
	return s
}

// GoString is String: %#v must not print the secret either.
func (t Target) GoString() string { return "notify.Target{" + t.String() + "}" }

// String is the event's name.
func (e Event) String() string { return string(e) }
