package console

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The job's definition as its page shows it. A table's values may hold
// secrets (${VAR} expands when it is loaded), so what could carry one is
// masked: environment and header values are never shown (their names
// are), nor an HTTP body; a URL shows no password and no query values; an
// argument that names a credential (--password=x, TOKEN=x, or the word
// after --token) shows its name only. The scheduler's own secrets are
// masked on the whole page as everywhere (Config.Redact).

// masked stands for a value not shown.
const masked = "•••"

// secretName matches a flag or variable name that holds a credential.
var secretName = regexp.MustCompile(`(?i)(pass|pwd|secret|token|key|auth|credential|cookie|session|private|signature)`)

type definition struct {
	Kind      string   // command, http, func
	Argv      []string // command: the argv, credentials masked
	Dir       string
	Env       []string // command: the names of its variables
	KillGrace string
	Method    string // http
	URL       string // http: no password, no query values
	Headers   []string
	Body      string // http: its size, never its text
	Expect    string
	Facts     []fact
	Blackouts []string
}

type fact struct{ Name, Value string }

func defineJob(j scheduler.Job) definition {
	d := definition{Kind: kindOf(j)}
	switch h := j.Handler.(type) {
	case *jobs.Command:
		d.Argv = maskArgs(h.Args)
		d.Dir = h.Dir
		for k := range h.Env {
			d.Env = append(d.Env, k)
		}
		slices.Sort(d.Env)
		if h.KillGrace > 0 {
			d.KillGrace = h.KillGrace.String()
		}
	case *jobs.HTTP:
		d.Method = strings.ToUpper(h.Method)
		if d.Method == "" {
			d.Method = "GET"
		}
		d.URL = maskURL(h.URL)
		for k := range h.Headers {
			d.Headers = append(d.Headers, k)
		}
		slices.Sort(d.Headers)
		if h.Body != "" {
			d.Body = fmt.Sprintf("%d bytes (not shown)", len(h.Body))
		}
		if len(h.ExpectStatus) > 0 {
			d.Expect = strings.Trim(fmt.Sprint(h.ExpectStatus), "[]")
		}
	}
	or := func(d time.Duration, none string) string {
		if d <= 0 {
			return none
		}
		return d.String()
	}
	overlap := string(j.Overlap)
	if overlap == "" {
		overlap = string(scheduler.OverlapSkip)
	}
	if j.Overlap == scheduler.OverlapWait {
		overlap += " (max_wait " + or(j.MaxWait, "0s") + ")"
	}
	retries := fmt.Sprint(j.Retries)
	if j.Retries > 0 {
		retries += " (backoff " + or(j.RetryBackoff, scheduler.DefaultRetryBackoff.String()) + ", doubling)"
	}
	d.Facts = []fact{
		{"Timeout", or(j.Timeout, "none")},
		{"Retries", retries},
		{"Lease", or(j.Lease, scheduler.DefaultLease.String())},
		{"Overlap", overlap},
		{"Concurrency", fmt.Sprint(max(j.Concurrency, 1))},
		{"Pool", cmpOr(j.Pool, "none")},
		{"Starting deadline", or(j.StartingDeadline, scheduler.DefaultStartingDeadline.String())},
		{"Jitter", or(j.Jitter, "none")},
		{"Catch-up", or(j.CatchupWindow, "none")},
		{"On lease lost", cmpOr(string(j.OnLeaseLost), string(scheduler.LeaseLostCancel))},
		{"Pause after failures", pauseAfter(j.PauseAfterFailures)},
		{"History kept", fmt.Sprint(cmpOrInt(j.HistoryLimit, scheduler.DefaultHistoryLimit)) + " runs"},
	}
	if len(j.Notify) > 0 {
		d.Facts = append(d.Facts, fact{"Notify", strings.Join(j.Notify, ", ")})
	}
	for _, b := range j.Blackouts {
		if b.Cron != "" {
			d.Blackouts = append(d.Blackouts, fmt.Sprintf("%s for %s (%s)", b.Cron, b.Duration, cmpOr(b.Timezone, "UTC")))
		} else {
			d.Blackouts = append(d.Blackouts, b.From.UTC().Format(time.RFC3339)+" to "+b.To.UTC().Format(time.RFC3339))
		}
	}
	return d
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cmpOrInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func pauseAfter(n int) string {
	if n <= 0 {
		return "never"
	}
	return fmt.Sprintf("%d failures in a row", n)
}

// maskArgs masks the value of every argument that names a credential.
func maskArgs(args []string) []string {
	out := make([]string, len(args))
	next := false
	for i, a := range args {
		switch {
		case next:
			out[i], next = masked, false
			continue
		case strings.Contains(a, "://"):
			out[i] = maskURL(a)
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case hasValue && secretName.MatchString(name):
			out[i] = name + "=" + masked
		case !hasValue && strings.HasPrefix(a, "-") && secretName.MatchString(a):
			out[i], next = a, true
		default:
			out[i] = a
		}
	}
	return out
}

// maskURL drops a URL's password and its query values.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return masked
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxx"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return u.String()
}
