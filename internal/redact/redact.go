// Package redact masks the scheduler's own secrets (its admin token, its
// store's passwords, its TLS keys) in whatever leaves the process: log
// lines, API answers, errors, run records, metrics, command output.
//
// It matches each secret as written and in the forms it takes once quoted
// or escaped on the way out (JSON, Go quoting, URL escaping), so a secret
// that a job prints, or that an error carries, is masked whatever the log
// format. A secret shorter than MinLen is not matched (masking every "ab"
// of every log line would make logs unreadable and tell the secret anyway);
// callers warn about it (see Redactor.Short).
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[REDACTED]"

// MinLen is the shortest secret matched.
const MinLen = 4

// Redactor masks a set of secrets. The zero value and nil mask nothing. It
// is safe for concurrent use; Add may be called at any time.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // every form, longest first
	short   []string // names given whose secret is too short to mask
	repl    *strings.Replacer
}

// New returns a Redactor for secrets; empty strings are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add adds secrets; empty strings are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if len(s) < MinLen {
			r.short = append(r.short, s)
			continue
		}
		for _, f := range forms(s) {
			if len(f) >= MinLen && !slices.Contains(r.secrets, f) {
				r.secrets = append(r.secrets, f)
			}
		}
	}
	// Longest first: a secret that contains another is masked whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(r.secrets))
	for _, s := range r.secrets {
		pairs = append(pairs, s, Mask)
	}
	r.repl = strings.NewReplacer(pairs...)
}

// forms are the ways s may be written out.
func forms(s string) []string {
	out := []string{s}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	q := strconv.Quote(s)
	out = append(out, q[1:len(q)-1], url.QueryEscape(s), url.PathEscape(s),
		url.UserPassword("u", s).String()[2:])
	return out
}

// Short reports how many secrets were too short to mask.
func (r *Redactor) Short() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.short)
}

// Len reports how many forms of secrets are masked.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.secrets)
}

func (r *Redactor) replacer() *strings.Replacer {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.repl
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	repl := r.replacer()
	if repl == nil || s == "" {
		return s
	}
	return repl.Replace(s)
}

// Bytes returns b with every secret masked; b itself when none is there.
func (r *Redactor) Bytes(b []byte) []byte {
	repl := r.replacer()
	if repl == nil || len(b) == 0 {
		return b
	}
	s := string(b)
	if t := repl.Replace(s); t != s {
		return []byte(t)
	}
	return b
}

// Error returns err with its message masked; err itself (for errors.Is and
// errors.As) when the message holds no secret.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if m := r.String(msg); m != msg {
		return &redactedError{msg: m, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap keeps errors.Is working on the cause. Printing the cause would show
// the secret again: callers print Error().
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that masks what it writes to w. Each Write is
// masked on its own: give it whole records (a slog handler writes one line
// per Write), not a stream cut at random.
func (r *Redactor) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	q := w.r.Bytes(p)
	if _, err := w.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Handler returns h with its answers' bodies masked: each answer is
// buffered whole, then masked, so a secret cut across two writes is masked
// too. Meant for small answers (the metrics page).
func (r *Redactor) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		bw := &bufferedWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(bw, req)
		body := r.Bytes(bw.buf.Bytes())
		w.Header().Del("Content-Length")
		w.WriteHeader(bw.code)
		_, _ = w.Write(body)
	})
}

type bufferedWriter struct {
	http.ResponseWriter
	buf  bytes.Buffer
	code int
}

func (b *bufferedWriter) WriteHeader(code int)        { b.code = code }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
