package admin

import (
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// Definition is the rest of a job's definition, as the console's job page
// shows it, without what may hold a secret (any value of the table may be
// a ${VAR}): a command's program (its base name) and how many arguments it
// takes, never the arguments; the names of its environment variables and
// of an HTTP job's headers, never their values; an HTTP job's URL without
// its user, password or query; the size of its body.
type Definition struct {
	Program   string   `json:"program,omitempty"` // command: base name of argv[0]
	Args      int      `json:"args,omitempty"`    // command: how many arguments follow it
	Env       []string `json:"env,omitempty"`     // command: variable names
	Dir       string   `json:"dir,omitempty"`
	KillGrace string   `json:"kill_grace,omitempty"`
	Method    string   `json:"method,omitempty"` // http
	URL       string   `json:"url,omitempty"`    // http: scheme, host and path only
	Headers   []string `json:"headers,omitempty"`
	BodySize  int      `json:"body_bytes,omitempty"`

	MaxWait       string     `json:"max_wait,omitempty"`
	RetryBackoff  string     `json:"retry_backoff,omitempty"`
	Jitter        string     `json:"jitter,omitempty"`
	CatchupWindow string     `json:"catchup_window,omitempty"`
	OnLeaseLost   string     `json:"on_lease_lost"`
	Pool          string     `json:"pool,omitempty"`
	PoolSize      int        `json:"pool_size,omitempty"`
	Notify        []string   `json:"notify,omitempty"`
	Blackouts     []Blackout `json:"blackouts,omitempty"`
}

// Blackout is one of a job's blackout windows: every Cron for Duration
// (read in Timezone), or once From To.
type Blackout struct {
	Cron     string    `json:"cron,omitempty"`
	Duration string    `json:"duration,omitempty"`
	Timezone string    `json:"timezone,omitempty"`
	From     time.Time `json:"from,omitzero"`
	To       time.Time `json:"to,omitzero"`
}

func define(j scheduler.Job) *Definition {
	d := &Definition{OnLeaseLost: string(j.OnLeaseLost), Pool: j.Pool, Notify: j.Notify}
	if d.OnLeaseLost == "" {
		d.OnLeaseLost = string(scheduler.LeaseLostCancel)
	}
	if j.Pool != "" {
		d.PoolSize = j.PoolSize
	}
	dur := func(v time.Duration) string {
		if v <= 0 {
			return ""
		}
		return v.String()
	}
	d.MaxWait, d.Jitter, d.CatchupWindow = dur(j.MaxWait), dur(j.Jitter), dur(j.CatchupWindow)
	if j.Retries > 0 {
		d.RetryBackoff = dur(j.RetryBackoff)
		if d.RetryBackoff == "" {
			d.RetryBackoff = scheduler.DefaultRetryBackoff.String()
		}
	}
	switch h := j.Handler.(type) {
	case *jobs.Command:
		if len(h.Args) > 0 {
			d.Program, d.Args = path.Base(h.Args[0]), len(h.Args)-1
		}
		for k := range h.Env {
			d.Env = append(d.Env, k)
		}
		slices.Sort(d.Env)
		d.Dir, d.KillGrace = h.Dir, dur(h.KillGrace)
	case *jobs.HTTP:
		d.Method = strings.ToUpper(h.Method)
		if d.Method == "" {
			d.Method = "GET"
		}
		if u, err := url.Parse(h.URL); err == nil {
			d.URL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
		}
		for k := range h.Headers {
			d.Headers = append(d.Headers, k)
		}
		slices.Sort(d.Headers)
		d.BodySize = len(h.Body)
	}
	for _, b := range j.Blackouts {
		d.Blackouts = append(d.Blackouts, Blackout{Cron: b.Cron, Duration: dur(b.Duration), Timezone: b.Timezone, From: b.From, To: b.To})
	}
	return d
}
