package jobs

import (
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// reservedEnv are the variables a command job's run sets itself (see
// Command); supervisorEnv those that mark the job supervisor's process
// (see SupervisorMain); reservedHeaders the headers an HTTP job's request
// always carries (see HTTP), in canonical form.
var (
	reservedEnv     = []string{envJob, envRunID, envScheduledAt, envFencingToken, envAttempt, envReplicaID, envSlot}
	supervisorEnv   = []string{envSupervisor, envSupervisorGorace}
	reservedHeaders = []string{headerIdempotencyKey, headerFencingToken, headerFencingSlot}
)

// ReservedEnv reports whether name is one of the variables every run of a
// command job sets itself: SOLOCRON_JOB, SOLOCRON_RUN_ID,
// SOLOCRON_SCHEDULED_AT, SOLOCRON_FENCING_TOKEN, SOLOCRON_ATTEMPT,
// SOLOCRON_REPLICA_ID and SOLOCRON_SLOT; or one that marks the job
// supervisor (SOLOCRON_JOB_SUPERVISOR, SOLOCRON_JOB_SUPERVISOR_GORACE),
// which a program never sees. Command.Validate refuses them in Env.
func ReservedEnv(name string) bool {
	return slices.Contains(reservedEnv, name) || slices.Contains(supervisorEnv, name)
}

// ReservedHeader reports whether name (in any case) is one of the headers
// every request of an HTTP job carries: Idempotency-Key,
// Solocron-Fencing-Token and Solocron-Fencing-Slot. HTTP.Validate refuses
// them in Headers.
func ReservedHeader(name string) bool {
	return slices.Contains(reservedHeaders, textproto.CanonicalMIMEHeaderKey(name))
}

// FieldError is one problem with one field of a Command or an HTTP, as
// Validate reports it.
type FieldError struct {
	// Field is the Go name of the field: "Args", "Env", "URL", "Headers", ...
	Field string
	// Key is the map key at fault (an Env variable, a header name), or "".
	Key string
	// Index is the list index at fault (in Args or ExpectStatus), or -1.
	Index int
	Err   error
}

// Error returns e.g. `Env["A=B"]: "A=B" is not an environment variable name`.
func (e *FieldError) Error() string {
	f := e.Field
	switch {
	case e.Key != "":
		f += "[" + strconv.Quote(e.Key) + "]"
	case e.Index >= 0:
		f += "[" + strconv.Itoa(e.Index) + "]"
	}
	return f + ": " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *FieldError) Unwrap() error { return e.Err }

// problems collects FieldErrors.
type problems []error

func (p *problems) add(field, key string, index int, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Key: key, Index: index, Err: fmt.Errorf(format, args...)})
}

// first is the first problem, for Run, which stops at it.
func (p problems) first() error {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}

// Validate reports every problem with c, as *FieldError values joined with
// errors.Join: Args empty or holding a NUL byte; an Env name that is empty,
// holds '=' or NUL, or is reserved (ReservedEnv); an Env value with a NUL
// byte. Run refuses the same Command (a permanent error), except that there
// the reserved variables simply override Env (the supervisor's are left
// out).
func (c *Command) Validate() error {
	if c == nil {
		return &FieldError{Field: "Args", Index: -1, Err: errors.New("nil *Command")}
	}
	return errors.Join(c.problems(true)...)
}

// problems lists what is wrong with c; strict adds what Run tolerates.
func (c *Command) problems(strict bool) problems {
	var p problems
	if len(c.Args) == 0 {
		p.add("Args", "", -1, "must not be empty: the first entry is the program to run")
	}
	for i, a := range c.Args {
		switch {
		case i == 0 && a == "":
			p.add("Args", "", i, "the program to run must not be empty")
		case strings.IndexByte(a, 0) >= 0:
			p.add("Args", "", i, "must not contain a NUL byte")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			p.add("Env", k, -1, "%q is not an environment variable name", clip(k))
		case strict && slices.Contains(supervisorEnv, k):
			p.add("Env", k, -1, "is the scheduler's own: it marks the job supervisor's process, and no program is given it")
		case strict && ReservedEnv(k):
			p.add("Env", k, -1, "is set by the scheduler for every run")
		case strings.IndexByte(c.Env[k], 0) >= 0:
			p.add("Env", k, -1, "must not contain a NUL byte")
		}
	}
	return p
}

// Validate reports every problem with h, as *FieldError values joined with
// errors.Join: a URL that is not an absolute http or https URL; a Method
// that is not a token, or a standard method not in upper case; a header
// name that is not a token or is reserved (ReservedHeader), a header value
// with a line break or NUL byte; an ExpectStatus entry outside 100..599; an
// unknown FollowRedirects. Run refuses a bad URL or FollowRedirects too (a
// permanent error), and leaves the rest to the HTTP client.
//
// Messages never repeat the URL: its query may hold a secret.
func (h *HTTP) Validate() error {
	if h == nil {
		return &FieldError{Field: "URL", Index: -1, Err: errors.New("nil *HTTP")}
	}
	return errors.Join(h.problems(true)...)
}

func (h *HTTP) problems(strict bool) problems {
	var p problems
	if err := checkURL(h.URL); err != nil {
		p.add("URL", "", -1, "%w", err)
	}
	switch h.FollowRedirects {
	case "", RedirectSameHost, RedirectAll, RedirectNone:
	default:
		p.add("FollowRedirects", "", -1, "%q is not one of same_host, all, none", clip(h.FollowRedirects))
	}
	if !strict {
		return p
	}
	if h.Method != "" {
		if err := checkMethod(h.Method); err != nil {
			p.add("Method", "", -1, "%w", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
		switch {
		case !httpToken(k):
			p.add("Headers", k, -1, "%q is not a valid header name", clip(k))
		case ReservedHeader(k):
			p.add("Headers", k, -1, "is set by the scheduler on every request")
		case strings.ContainsAny(h.Headers[k], "\r\n\x00"):
			// Not quoted: header values are where tokens live.
			p.add("Headers", k, -1, "must not contain a line break or NUL byte")
		}
	}
	for i, code := range h.ExpectStatus {
		if code < 100 || code > 599 {
			p.add("ExpectStatus", "", i, "%d is not an HTTP status code (100 to 599)", code)
		}
	}
	return p
}

// checkURL checks an absolute http or https URL. Messages do not repeat
// the URL: its query may hold a secret.
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("is required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("is not a valid URL")
	case u.Scheme == "":
		return errors.New("must be an absolute URL starting with http:// or https://")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q is not http or https", clip(u.Scheme))
	case u.Host == "":
		return errors.New("has no host")
	}
	return nil
}

// checkMethod refuses what is not a token, and a standard method not in
// upper case (the server would take "post" for an unknown method).
func checkMethod(m string) error {
	if !httpToken(m) {
		return fmt.Errorf("%q is not an HTTP method", clip(m))
	}
	switch up := strings.ToUpper(m); up {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT":
		if up != m {
			return fmt.Errorf("%q: methods are case-sensitive; write %s", m, up)
		}
	}
	return nil
}

// httpToken reports whether s is an RFC 9110 token (a method or header name).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// clip shortens a value quoted in a message to 40 bytes, on a rune
// boundary.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
