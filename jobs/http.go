package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// snippetLimit bounds the response body kept for Output and errors.
	snippetLimit = 4096
	// drainLimit bounds what is read and discarded after the snippet so
	// the connection can be reused; a longer body closes the connection
	// instead.
	drainLimit = 64 << 10
)

// Headers HTTP.Run always sends.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerFencingToken   = "Solocron-Fencing-Token"
	headerFencingSlot    = "Solocron-Fencing-Slot"
)

// DefaultHTTPTimeout bounds an HTTP job's request when HTTP.Timeout is 0: a
// server that accepts and never answers must not hold the run's slot (and
// its lease) forever.
const DefaultHTTPTimeout = time.Minute

// defaultClient is used when HTTP.Client is nil. It has no timeout of its
// own: HTTP.Timeout and the run's context bound the request.
var defaultClient = &http.Client{}

// Redirect policies of HTTP.FollowRedirects.
const (
	// RedirectSameHost (the default) follows a redirect only to the same
	// host (host:port as written in the URL), and never from https to http.
	RedirectSameHost = "same_host"
	// RedirectAll follows any redirect, up to 10, as Go's client does.
	RedirectAll = "all"
	// RedirectNone follows no redirect.
	RedirectNone = "none"
)

// maxRedirects is how many redirects one request follows at most.
const maxRedirects = 10

// RedirectError is a redirect an HTTP job refused to follow. The URLs are
// redacted (no user info, query or fragment).
type RedirectError struct {
	Status   int    // the redirect's status, e.g. 307
	From, To string // the URL redirected and where to
	Policy   string // the job's follow_redirects
	Reason   string // "another host", "https to http", "redirects not followed", "too many redirects"
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("redirect refused (%s; follow_redirects: %s): %d from %s to %s", e.Reason, e.Policy, e.Status, e.From, e.To)
}

// HTTP is a Job that sends one HTTP request.
//
// Besides Headers it always sends Idempotency-Key: <run id> and
// Solocron-Fencing-Token: <fencing token> and Solocron-Fencing-Slot: <slot>
// (taken from the context's Info; they replace configured headers of the
// same name), so the receiver can
// de-duplicate retried deliveries and refuse a stale run; and the run's
// trace context (traceparent, tracestate: see WithTraceContext), so the
// receiver's spans join the run's trace.
type HTTP struct {
	// Method is the request method; "" means GET.
	Method string
	// URL is the absolute http or https URL to call.
	URL string
	// Headers are added to the request. A "Host" entry sets the Host header.
	// The headers every request carries (ReservedHeader) replace entries of
	// the same name; Validate, which the scheduler runs on every job,
	// refuses them.
	Headers map[string]string
	// Body is the request body; "" sends none.
	Body string
	// ExpectStatus lists the statuses that mean success; empty means any
	// 2xx. Redirects are followed (see FollowRedirects) before the status is
	// checked.
	ExpectStatus []int
	// FollowRedirects is RedirectSameHost (""), RedirectAll or
	// RedirectNone. A redirect it refuses fails the run with a
	// *RedirectError (permanent): the headers, fencing token and body are
	// never sent to a host the job did not name, nor over http after https.
	FollowRedirects string
	// Timeout bounds the request, response body included; 0 means
	// DefaultHTTPTimeout (1m), a negative value no bound but the context's.
	Timeout time.Duration
	// Client sends the request; nil means a package default client with no
	// timeout of its own. Its CheckRedirect is replaced by FollowRedirects'.
	Client *http.Client
}

// Run sends the request and checks the response's status. The first 4 KiB
// of the response body go to Output(ctx); at most 64 KiB more are read and
// discarded so the connection can be reused; the rest is never read.
//
// It returns nil for an expected status; a *StatusError for another one,
// wrapped in Permanent unless the status is 5xx, 408 or 429; an error
// wrapping context.Cause(ctx) when ctx ended the request; a plain
// (retryable) error for other transport failures; and a Permanent error for
// an unusable URL or method.
//
// Error messages name the URL without its user info or query, which may
// carry secrets.
func (h *HTTP) Run(ctx context.Context) error {
	if h == nil {
		return Permanent(errors.New("jobs: nil *HTTP"))
	}
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	if err := h.problems(false).first(); err != nil {
		return Permanent(fmt.Errorf("jobs: http: %w", err))
	}
	u, _ := url.Parse(h.URL) // checked by problems
	where := method + " " + redact(u)
	policy := h.FollowRedirects
	if policy == "" {
		policy = RedirectSameHost
	}
	if t := h.timeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	var body io.Reader
	if h.Body != "" {
		body = strings.NewReader(h.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, body)
	if err != nil {
		return Permanent(fmt.Errorf("jobs: http %s: %w", where, stripURL(err)))
	}
	for k, v := range h.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	for k, v := range TraceContext(ctx) {
		if traceHeader(k, v) {
			req.Header.Set(k, v)
		}
	}
	if info, ok := FromContext(ctx); ok {
		req.Header.Set(headerIdempotencyKey, info.RunID)
		req.Header.Set(headerFencingToken, strconv.FormatInt(info.FencingToken, 10))
		if info.Slot > 0 {
			req.Header.Set(headerFencingSlot, strconv.Itoa(info.Slot))
		}
	}

	base := h.Client
	if base == nil {
		base = defaultClient
	}
	client := *base // a copy: the caller's client keeps its own policy
	client.CheckRedirect = checkRedirect(policy)
	resp, err := client.Do(req)
	if err != nil {
		err = stripURL(err)
		var rerr *RedirectError
		if errors.As(err, &rerr) {
			return Permanent(fmt.Errorf("jobs: http %s: %w", where, rerr))
		}
		if ctx.Err() != nil {
			return fmt.Errorf("jobs: http %s: %w (%w)", where, context.Cause(ctx), err)
		}
		return fmt.Errorf("jobs: http %s: %w", where, err)
	}
	defer resp.Body.Close()

	snippet, readErr := io.ReadAll(io.LimitReader(resp.Body, snippetLimit))
	_, _ = Output(ctx).Write(snippet)
	if readErr == nil {
		_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	}

	if h.expected(resp.StatusCode) {
		return nil
	}
	serr := &StatusError{Code: resp.StatusCode, Snippet: string(snippet)}
	if retryableStatus(resp.StatusCode) {
		return serr
	}
	return Permanent(serr)
}

func (h *HTTP) timeout() time.Duration {
	if h.Timeout == 0 {
		return DefaultHTTPTimeout
	}
	return h.Timeout
}

// checkRedirect is the client's redirect policy for policy. req is the
// request about to be sent; via[0] is the job's own.
func checkRedirect(policy string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		prev := via[len(via)-1]
		refuse := func(reason string) error {
			status := 0
			if req.Response != nil {
				status = req.Response.StatusCode
			}
			return &RedirectError{Status: status, From: redact(prev.URL), To: redact(req.URL), Policy: policy, Reason: reason}
		}
		first := via[0].URL
		switch {
		case policy == RedirectNone:
			return refuse("redirects not followed")
		case len(via) >= maxRedirects:
			return refuse("too many redirects")
		case policy == RedirectAll:
			return nil
		case prev.URL.Scheme == "https" && req.URL.Scheme != "https":
			return refuse("https to http")
		case !strings.EqualFold(req.URL.Host, first.Host):
			return refuse("another host")
		}
		return nil
	}
}

func (h *HTTP) expected(code int) bool {
	if len(h.ExpectStatus) == 0 {
		return code >= 200 && code <= 299
	}
	return slices.Contains(h.ExpectStatus, code)
}

// retryableStatus reports whether another attempt may get a different
// answer: the server failed, timed out, or asked us to slow down.
func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests
}

// redact returns u without user info, query or fragment.
func redact(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// stripURL replaces a *url.Error, whose message repeats the URL with its
// query, by the error it wraps; the caller names the URL itself, redacted.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
