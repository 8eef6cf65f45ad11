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
)

// defaultClient is used when HTTP.Client is nil. It has no timeout of its
// own: the run's context (the job's timeout, the lease) bounds the request.
var defaultClient = &http.Client{}

// HTTP is a Job that sends one HTTP request.
//
// Besides Headers it always sends Idempotency-Key: <run id> and
// Solocron-Fencing-Token: <fencing token> (taken from the context's Info;
// they replace configured headers of the same name), so the receiver can
// de-duplicate retried deliveries and refuse a stale run; and the run's
// trace context (traceparent, tracestate: see WithTraceContext), so the
// receiver's spans join the run's trace.
type HTTP struct {
	// Method is the request method; "" means GET.
	Method string
	// URL is the absolute http or https URL to call.
	URL string
	// Headers are added to the request. A "Host" entry sets the Host header.
	Headers map[string]string
	// Body is the request body; "" sends none.
	Body string
	// ExpectStatus lists the statuses that mean success; empty means any
	// 2xx. Redirects are followed (the client's policy) before the status
	// is checked.
	ExpectStatus []int
	// Client sends the request; nil means a package default client with no
	// timeout of its own (the context bounds the request).
	Client *http.Client
}

// Run sends the request and checks the response's status. The first 4 KiB
// of the response body go to Output(ctx); at most 64 KiB more are read and
// discarded so the connection can be reused.
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
	u, err := url.Parse(h.URL)
	if err != nil {
		return Permanent(fmt.Errorf("jobs: http: bad URL: %w", stripURL(err)))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Permanent(fmt.Errorf("jobs: http: bad URL %q: want an absolute http or https URL", redact(u)))
	}
	where := method + " " + redact(u)
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
	}

	client := h.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		err = stripURL(err)
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
