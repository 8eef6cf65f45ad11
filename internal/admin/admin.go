// Package admin serves a replica's admin HTTP API: liveness and readiness
// probes, Prometheus metrics, and a JSON API over the job table in force and
// the cluster's run records.
//
// Reads are open to anyone who can reach the listener; the mutating
// endpoints (trigger, pause, resume) require "Authorization: Bearer <token>"
// when a token is configured, and refuse cross-origin browser requests in
// any case. The command line refuses to listen on a non-loopback address
// without a token. Answers never carry secrets: no store URL, no token, no
// command line, URL, header or environment value of a job (any of them may
// hold a ${VAR} secret).
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/internal/schedule"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// Config is what the API serves.
type Config struct {
	// Jobs returns the table in force; it is called on every request, so a
	// reload shows at once.
	Jobs func() []scheduler.Job
	// Control reads and changes the cluster's state.
	Control *scheduler.Control
	// Ready reports whether the replica can coordinate (nil: ready).
	Ready func() error
	// Metrics serves GET /metrics; nil answers 404.
	Metrics http.Handler
	// Token, when not empty, is required as a bearer token by the mutating
	// endpoints.
	Token string
	// ReplicaID names the replica in GET /api/v1/jobs.
	ReplicaID string
	// Logger records the mutations asked for. Default slog.Default().
	Logger *slog.Logger
	// StoreTimeout bounds each request's calls to the store. Default 5s.
	StoreTimeout time.Duration
	// Now tells the time for "next"; default time.Now.
	Now func() time.Time
}

// Server timeouts. Requests are small and answers quick; these keep a slow
// or idle client from holding connections.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
	maxRunsLimit      = 1000
	defaultRunsLimit  = 20
	defaultHistory    = 10
)

// NewServer returns an http.Server for h with the timeouts an exposed admin
// port needs.
func NewServer(h http.Handler, errorLog *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	if errorLog != nil {
		srv.ErrorLog = slog.NewLogLogger(errorLog.Handler(), slog.LevelDebug)
	}
	return srv
}

type api struct {
	cfg       Config
	tokenHash [sha256.Size]byte
	log       *slog.Logger
}

// NewHandler returns the API's handler:
//
//	GET  /healthz                          200 while the process serves
//	GET  /readyz                           200 ready, 503 with the reason
//	GET  /metrics                          Prometheus text
//	GET  /api/v1/jobs                      the table, with cluster state
//	GET  /api/v1/jobs/{name}               one job and its status
//	GET  /api/v1/jobs/{name}/runs?limit=N  its run records, newest first
//	POST /api/v1/jobs/{name}/trigger       202 {"job", "run_id"}; 429 when
//	                                       the job's pending manual runs
//	                                       are at their bound (100)
//	POST /api/v1/jobs/{name}/pause         200 {"job", "paused": true}
//	POST /api/v1/jobs/{name}/resume        200 {"job", "paused": false}
//
// Errors are {"error": "..."} with 400 (bad query), 401 (no bearer token),
// 403 (wrong token, or a cross-origin browser request), 404 (no such job or
// path), 405 (wrong method; Allow says which) or 503 (store unreachable, or
// not ready).
func NewHandler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &api{cfg: cfg, log: cfg.Logger}
	if cfg.Token != "" {
		a.tokenHash = sha256.Sum256([]byte(cfg.Token))
	}

	// A browser on any web page can send a simple POST to 127.0.0.1; this
	// refuses such cross-origin requests, token or not.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused")
	}))
	mutating := func(h http.HandlerFunc) http.Handler { return cop.Handler(a.authorized(h)) }

	mux := http.NewServeMux()
	route := func(method, path string, h http.Handler) {
		mux.Handle(method+" "+path, h)
		// The same path without a method: any other method lands here.
		// (GET patterns also match HEAD.)
		allow := method
		if method == http.MethodGet {
			allow = "GET, HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+allow)
		})
	}
	route("GET", "/healthz", http.HandlerFunc(a.healthz))
	route("GET", "/readyz", http.HandlerFunc(a.readyz))
	route("GET", "/metrics", http.HandlerFunc(a.metrics))
	route("GET", "/api/v1/jobs", http.HandlerFunc(a.listJobs))
	route("GET", "/api/v1/jobs/{name}", http.HandlerFunc(a.getJob))
	route("GET", "/api/v1/jobs/{name}/runs", http.HandlerFunc(a.listRuns))
	route("POST", "/api/v1/jobs/{name}/trigger", mutating(a.trigger))
	route("POST", "/api/v1/jobs/{name}/pause", mutating(a.pause))
	route("POST", "/api/v1/jobs/{name}/resume", mutating(a.resume))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// authorized checks the bearer token, in constant time, when one is set.
func (a *api) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Token == "" {
			h(w, r)
			return
		}
		scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || cred == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="solocron"`)
			writeError(w, http.StatusUnauthorized, "this endpoint needs Authorization: Bearer <admin.token>")
			return
		}
		// Hashing first makes the comparison independent of the lengths too.
		got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
		if subtle.ConstantTimeCompare(got[:], a.tokenHash[:]) != 1 {
			a.log.Warn("admin: request with a wrong token refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "wrong token")
			return
		}
		h(w, r)
	}
}

func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Ready(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, "metrics are not enabled")
		return
	}
	a.cfg.Metrics.ServeHTTP(w, r)
}

// JobInfo is one job of the table as the API shows it. It leaves out what
// may hold a secret: a command's argv and environment, an HTTP job's URL,
// headers and body.
type JobInfo struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // command, http or func
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Offset   string `json:"offset,omitempty"`
	// Next is the next scheduled instant after now, in UTC.
	Next             time.Time `json:"next,omitzero"`
	Concurrency      int       `json:"concurrency"`
	Overlap          string    `json:"overlap"`
	Lease            string    `json:"lease"`
	Timeout          string    `json:"timeout,omitempty"`
	Retries          int       `json:"retries"`
	StartingDeadline string    `json:"starting_deadline"`
	HistoryLimit     int       `json:"history_limit"`
	// PausedInTable is the table's paused: true; this replica's table keeps
	// the job from starting whatever the cluster flag says.
	PausedInTable bool `json:"paused_in_table"`
	// Paused is the cluster-wide flag set by pause/resume. Filled in by the
	// listing only.
	Paused *bool `json:"paused,omitempty"`
	// Running counts runs in flight on any replica. Listing only.
	Running *int `json:"running,omitempty"`
	// LastRun is the latest finished run. Listing only.
	LastRun *scheduler.Run `json:"last_run,omitempty"`
}

// Kind names a job's kind: command, http or func.
func Kind(j scheduler.Job) string {
	switch j.Handler.(type) {
	case *jobs.Command:
		return "command"
	case *jobs.HTTP:
		return "http"
	default:
		return "func"
	}
}

func (a *api) info(j scheduler.Job) JobInfo {
	in := JobInfo{
		Name: j.Name, Kind: Kind(j), Schedule: j.Schedule, Timezone: j.Timezone,
		Concurrency: j.Concurrency, Overlap: string(j.Overlap), Lease: j.Lease.String(),
		Retries: j.Retries, StartingDeadline: j.StartingDeadline.String(),
		HistoryLimit: j.HistoryLimit, PausedInTable: j.Paused,
	}
	if in.Timezone == "" {
		in.Timezone = "UTC"
	}
	if j.Offset > 0 {
		in.Offset = j.Offset.String()
	}
	if j.Timeout > 0 {
		in.Timeout = j.Timeout.String()
	}
	if s, err := schedule.Parse(j.Schedule, j.Timezone, j.Offset); err == nil {
		in.Next = s.Next(a.cfg.Now()).UTC()
	}
	return in
}

// JobList is the answer of GET /api/v1/jobs.
type JobList struct {
	Replica string    `json:"replica"`
	Jobs    []JobInfo `json:"jobs"`
}

func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	tab := a.cfg.Jobs()
	out := JobList{Replica: a.cfg.ReplicaID, Jobs: make([]JobInfo, 0, len(tab))}
	for _, j := range tab {
		in := a.info(j)
		st, err := a.cfg.Control.Status(ctx, j.Name, 1)
		if err != nil {
			a.storeError(w, err)
			return
		}
		running := len(st.Running)
		in.Paused, in.Running = &st.Paused, &running
		if len(st.History) > 0 {
			in.LastRun = &st.History[0]
		}
		out.Jobs = append(out.Jobs, in)
	}
	writeJSON(w, http.StatusOK, out)
}

// JobStatus is the answer of GET /api/v1/jobs/{name}.
type JobStatus struct {
	Job    JobInfo          `json:"job"`
	Status scheduler.Status `json:"status"`
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	limit, ok := limitParam(w, r, defaultHistory)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	st, err := a.cfg.Control.Status(ctx, j.Name, limit)
	if err != nil {
		a.storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, JobStatus{Job: a.info(j), Status: *st})
}

// RunList is the answer of GET /api/v1/jobs/{name}/runs.
type RunList struct {
	Job  string          `json:"job"`
	Runs []scheduler.Run `json:"runs"`
}

func (a *api) listRuns(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	limit, ok := limitParam(w, r, defaultRunsLimit)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	runs, err := a.cfg.Control.History(ctx, j.Name, limit)
	if err != nil {
		a.storeError(w, err)
		return
	}
	if runs == nil {
		runs = []scheduler.Run{}
	}
	writeJSON(w, http.StatusOK, RunList{Job: j.Name, Runs: runs})
}

// Triggered is the answer of POST /api/v1/jobs/{name}/trigger.
type Triggered struct {
	Job   string `json:"job"`
	RunID string `json:"run_id"`
}

func (a *api) trigger(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	id, err := a.cfg.Control.Trigger(ctx, j.Name)
	if errors.Is(err, scheduler.ErrQueueFull) {
		writeError(w, http.StatusTooManyRequests, err.Error()+": try again once replicas have picked them up")
		return
	}
	if err != nil {
		a.storeError(w, err)
		return
	}
	a.log.Info("admin: manual run requested", "job", j.Name, "run_id", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, Triggered{Job: j.Name, RunID: id})
}

// Paused is the answer of POST /api/v1/jobs/{name}/pause and resume.
type Paused struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
}

func (a *api) pause(w http.ResponseWriter, r *http.Request)  { a.setPaused(w, r, true) }
func (a *api) resume(w http.ResponseWriter, r *http.Request) { a.setPaused(w, r, false) }

func (a *api) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	do, verb := a.cfg.Control.Resume, "resumed"
	if paused {
		do, verb = a.cfg.Control.Pause, "paused"
	}
	if err := do(ctx, j.Name); err != nil {
		a.storeError(w, err)
		return
	}
	a.log.Info("admin: job "+verb+" cluster-wide", "job", j.Name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, Paused{Job: j.Name, Paused: paused})
}

// lookup finds the job named in the path in the table in force.
func (a *api) lookup(w http.ResponseWriter, r *http.Request) (scheduler.Job, bool) {
	name := r.PathValue("name")
	for _, j := range a.cfg.Jobs() {
		if j.Name == name {
			return j, true
		}
	}
	writeError(w, http.StatusNotFound, "no job "+strconv.Quote(name)+" in the table")
	return scheduler.Job{}, false
}

func limitParam(w http.ResponseWriter, r *http.Request, def int) (int, bool) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxRunsLimit {
		writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to "+strconv.Itoa(maxRunsLimit))
		return 0, false
	}
	return n, true
}

// storeError answers 503: every error of Control here is the store's (job
// names were checked against the table first).
func (a *api) storeError(w http.ResponseWriter, err error) {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "store did not answer in time: " + msg
	}
	a.log.Warn("admin: store error", "err", err)
	writeError(w, http.StatusServiceUnavailable, "store unavailable: "+msg)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
