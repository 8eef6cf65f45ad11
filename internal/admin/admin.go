// Package admin serves a replica's admin HTTP API: liveness and readiness
// probes, Prometheus metrics, and a JSON API over the job table in force and
// the cluster's run records.
//
// Every request must carry a Host the server knows: its listen address, a
// loopback name, or one of Config.AllowedHosts (421 otherwise), so that a web
// page cannot reach it through DNS rebinding. When a token is configured
// every /api/v1 endpoint, reads included, requires "Authorization: Bearer
// <token>" (or what Config.Authenticate accepts); /healthz, /readyz and
// /metrics stay open. Mutations (trigger, pause, resume, backfill, cancel and retry of a run) refuse cross-origin
// browser requests in any case. Each client (remote IP) gets a rate limit on
// /api/v1. Config.Console, the operator console, answers the other paths
// under the same Host check and rate limit. The command line refuses to
// listen on a non-loopback address without a token or client certificates. Answers never carry secrets: no
// store URL, no token, no command line, URL, header or environment value of
// a job (any of them may hold a ${VAR} secret), and Config.Redactor masks
// the scheduler's secrets in whatever else they hold (run output, errors).
package admin

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/solocron/solocron/internal/hostcheck"
	"github.com/solocron/solocron/internal/redact"
	"github.com/solocron/solocron/internal/routes"
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
	// Token, when not empty, is required as a bearer token by every /api/v1
	// endpoint, reads included.
	Token string
	// Authenticate, when set, is asked about a request that carries no
	// Authorization header while a token is configured; true lets it in as
	// if it carried the token. It is where a console's session (an HttpOnly
	// SameSite=Strict cookie, never a token in a URL) plugs in. Mutations
	// still need a same-origin request.
	Authenticate func(r *http.Request) bool
	// Listen is the address the server listens on (host:port); its host is
	// an allowed Host. When it is an unspecified address (0.0.0.0, ::, "")
	// any IP address is an allowed Host: a rebinding page always sends a
	// name.
	Listen string
	// AllowedHosts are further names a request's Host may carry (port
	// ignored), besides Listen's host and the loopback names (localhost,
	// *.localhost, 127.0.0.0/8, ::1). Others are answered 421.
	AllowedHosts []string
	// RateLimit is the requests per second each client (remote IP) may make
	// to /api/v1 and the Console, with bursts of RateBurst; more are
	// answered 429. 0: no limit.
	RateLimit int
	RateBurst int
	// Redactor masks the scheduler's secrets in every answer; nil masks
	// nothing.
	Redactor *redact.Redactor
	// ReplicaID names the replica in GET /api/v1/jobs.
	ReplicaID string
	// Logger records the mutations asked for. Default slog.Default().
	Logger *slog.Logger
	// StoreTimeout bounds each request's calls to the store. Default 5s.
	StoreTimeout time.Duration
	// Now tells the time for "next"; default time.Now.
	Now func() time.Time
	// ReadOnly refuses trigger, pause, resume, backfill, cancel and retry (403).
	ReadOnly bool
	// Console, when set, serves every path outside /api/ that the API does
	// not (the operator console, package console), behind the Host check,
	// the rate limit and the Redactor. It checks its sign-in itself: give it
	// the same Token, and its Authenticate as Authenticate so that its
	// session opens /api/v1 too.
	Console http.Handler
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
	// Pages of GET /api/v1/jobs.
	defaultPage = 100
	maxPage     = scheduler.MaxStatuses // 500
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
	hosts     *hostcheck.Check
	limiter   *limiter
}

// NewHandler returns the API's handler:
//
//	GET  /healthz                          200 while the process serves
//	GET  /readyz                           200 ready, 503 with the reason
//	GET  /metrics                          Prometheus text
//	GET  /api/v1/jobs?limit=N&cursor=C     the table, with cluster state, a page at a time
//	GET  /api/v1/replicas                  the live replicas (registry)
//	GET  /api/v1/jobs/{name}               one job and its status
//	GET  /api/v1/jobs/{name}/runs?limit=N  its run records, newest first
//	POST /api/v1/jobs/{name}/trigger       202 {"job", "run_id"}; 429 when
//	                                       the job's pending manual runs
//	                                       are at their bound (100)
//	POST /api/v1/jobs/{name}/pause         200 {"job", "paused": true, "why"};
//	                                       body {"reason", "by"} (or
//	                                       ?reason=), optional
//	POST /api/v1/jobs/{name}/resume        200 {"job", "paused": false}
//	POST /api/v1/jobs/{name}/backfill      202 the backfill's state; body
//	                                       {"from", "to", "parallel"}; 400
//	                                       bad range, 409 one goes on
//	GET  /api/v1/jobs/{name}/backfill      200 its state; 404 none
//	DELETE /api/v1/jobs/{name}/backfill    200 cancelled; 404 none goes on
//	POST /api/v1/runs/{id}/cancel          202 {"run_id", "cancelled_by"}: its
//	                                       replica stops it at its next
//	                                       renewal; 404 no such run, 409 not
//	                                       running; body {"by"}, optional
//	POST /api/v1/runs/{id}/retry           202 {"run_id", "retry_of"}: a
//	                                       manual run; 404, 409 not ended,
//	                                       429 queue full; body {"by"},
//	                                       optional
//
// Errors are {"error": "..."} with 400 (bad query), 401 (no bearer token),
// 403 (wrong token, or a cross-origin browser request), 404 (no such job or
// path), 405 (wrong method; Allow says which), 421 (a Host the server does
// not answer to), 429 (rate limit; Retry-After says when) or 503 (store
// unreachable, or not ready).
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
	a := &api{cfg: cfg, log: cfg.Logger, hosts: hostcheck.New(cfg.Listen, cfg.AllowedHosts)}
	if cfg.Token != "" {
		a.tokenHash = sha256.Sum256([]byte(cfg.Token))
	}
	if cfg.RateLimit > 0 {
		a.limiter = newLimiter(float64(cfg.RateLimit), max(cfg.RateBurst, 1), time.Now)
	}
	read := func(h http.HandlerFunc) http.Handler { return a.limited(a.authorized(h)) }

	// A browser on any web page can send a simple POST to 127.0.0.1; this
	// refuses such cross-origin requests, token or not.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused")
	}))
	mutating := func(h http.HandlerFunc) http.Handler { return a.limited(cop.Handler(a.authorized(a.writable(h)))) }

	mux := http.NewServeMux()
	// Every route goes through the table: a request for one of these paths
	// with a method none of its routes takes is answered 405 with Allow
	// (routes.Table.NotAllowed), not 404 by the catch-all.
	rt := routes.New(mux)
	route := rt.Handle
	route("GET", "/healthz", http.HandlerFunc(a.healthz))
	route("GET", "/readyz", http.HandlerFunc(a.readyz))
	route("GET", "/metrics", http.HandlerFunc(a.metrics))
	route("GET", "/api/v1/replicas", read(a.listReplicas))
	route("GET", "/api/v1/jobs", read(a.listJobs))
	route("GET", "/api/v1/jobs/{name}", read(a.getJob))
	route("GET", "/api/v1/jobs/{name}/runs", read(a.listRuns))
	route("GET", "/api/v1/summary", read(a.summary))
	route("GET", "/api/v1/runs", read(a.acrossRuns))
	route("GET", "/api/v1/pools", read(a.pools))
	route("POST", "/api/v1/jobs/{name}/trigger", mutating(a.trigger))
	route("POST", "/api/v1/jobs/{name}/pause", mutating(a.pause))
	route("POST", "/api/v1/jobs/{name}/resume", mutating(a.resume))
	route("POST", "/api/v1/runs/{id}/cancel", mutating(a.cancelRun))
	route("POST", "/api/v1/runs/{id}/retry", mutating(a.retryRun))
	// One path, three methods (backfill.go).
	route("GET", "/api/v1/jobs/{name}/backfill", read(a.getBackfill))
	route("POST", "/api/v1/jobs/{name}/backfill", mutating(a.startBackfill))
	route("DELETE", "/api/v1/jobs/{name}/backfill", mutating(a.cancelBackfill))
	rt.NotAllowed(func(w http.ResponseWriter, r *http.Request, allow string) {
		writeError(w, http.StatusMethodNotAllowed, "method "+clipMethod(r.Method)+" not allowed; use "+allow)
	})
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	mux.Handle("/api/", notFound)
	if cfg.Console != nil {
		// The console checks its own sign-in (a page without a session
		// sends the browser to the sign-in form); the Host check below and
		// the rate limit apply to it as to the API.
		mux.Handle("/", a.limited(cfg.Console))
	} else {
		mux.Handle("/", notFound)
	}
	var inner http.Handler = mux
	if cfg.Redactor != nil {
		inner = cfg.Redactor.Handler(mux)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if !a.hosts.Allowed(r.Host) {
			// Not 403: the request reached a server that does not serve
			// that name (a DNS rebinding page, a misrouted proxy).
			writeError(w, http.StatusMisdirectedRequest, "this server does not answer to Host "+strconv.Quote(hostcheck.Clip(r.Host))+"; list the name in admin.allowed_hosts")
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// authorized checks the bearer token, in constant time, when one is set. A
// request without an Authorization header may be let in by Authenticate.
func (a *api) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Token == "" {
			h(w, r)
			return
		}
		authz := r.Header.Get("Authorization")
		if authz == "" && a.cfg.Authenticate != nil && a.cfg.Authenticate(r) {
			h(w, r)
			return
		}
		scheme, cred, ok := strings.Cut(authz, " ")
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
	// PauseAfterFailures is the table's pause_after_failures (0: never).
	PauseAfterFailures int `json:"pause_after_failures,omitempty"`
	// PausedInTable is the table's paused: true; this replica's table keeps
	// the job from starting whatever the cluster flag says.
	PausedInTable bool `json:"paused_in_table"`
	// Paused is the cluster-wide flag set by pause/resume. Filled in by the
	// listing only.
	Paused *bool `json:"paused,omitempty"`
	// PausedWhy says why the cluster paused the job by itself
	// (pause_after_failures). Listing only.
	PausedWhy string `json:"paused_why,omitempty"`
	// ConsecutiveFailures counts the job's latest runs in a row that ended
	// badly. Listing only.
	ConsecutiveFailures *int `json:"consecutive_failures,omitempty"`
	// Running counts runs in flight on any replica. Listing only.
	Running *int `json:"running,omitempty"`
	// Pool is the use of the job's pool (pool:): its size, the slots
	// held and by which runs. Listing only; absent for a job in no pool.
	Pool *scheduler.PoolUse `json:"pool,omitempty"`
	// LastRun is the latest finished run. Listing only.
	LastRun *scheduler.Run `json:"last_run,omitempty"`
	// Definition is the rest of the job's definition, secrets left out.
	// GET /api/v1/jobs/{name} only.
	Definition *Definition `json:"definition,omitempty"`
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
		HistoryLimit: j.HistoryLimit, PausedInTable: j.Paused, PauseAfterFailures: j.PauseAfterFailures,
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
	if s, err := j.Timing(); err == nil {
		in.Next = s.Next(a.cfg.Now()).UTC()
	}
	return in
}

// JobList is the answer of GET /api/v1/jobs: a page of the table, in the
// order of job names. NextCursor, when set, is the cursor of the next page.
type JobList struct {
	Replica    string    `json:"replica"`
	Jobs       []JobInfo `json:"jobs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// listJobs answers a page of the table: ?limit= jobs (default 100, at most
// 500) after the job named by ?cursor= (the last name of the page before),
// in name order, so a reload between pages neither repeats nor skips a job
// that stays. The page's state is read in one round trip (Statuses).
func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	limit, ok := intParam(w, r, "limit", defaultPage, maxPage)
	if !ok {
		return
	}
	cursor := r.URL.Query().Get("cursor")
	tab := slices.Clone(a.cfg.Jobs())
	slices.SortFunc(tab, func(x, y scheduler.Job) int { return strings.Compare(x.Name, y.Name) })
	start, _ := slices.BinarySearchFunc(tab, cursor, func(j scheduler.Job, c string) int {
		if j.Name <= c {
			return -1
		}
		return 1
	})
	page := tab[start:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = page[limit-1].Name
	}
	names := make([]string, len(page))
	for i, j := range page {
		names[i] = j.Name
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	sts, err := a.cfg.Control.Statuses(ctx, names, 1)
	if err != nil {
		a.storeError(w, r, err)
		return
	}
	out := JobList{Replica: a.cfg.ReplicaID, Jobs: make([]JobInfo, 0, len(page)), NextCursor: next}
	for i, j := range page {
		in, st := a.info(j), sts[i]
		running := len(st.Running)
		in.Paused, in.Running = &st.Paused, &running
		in.PausedWhy, in.ConsecutiveFailures = st.PausedWhy, &st.ConsecutiveFailures
		in.Pool = st.Pool
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
		a.storeError(w, r, err)
		return
	}
	in := a.info(j)
	in.Definition = define(j)
	writeJSON(w, http.StatusOK, JobStatus{Job: in, Status: *st})
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
		a.storeError(w, r, err)
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
		a.storeError(w, r, err)
		return
	}
	a.log.Info("admin: manual run requested", "job", j.Name, "run_id", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, Triggered{Job: j.Name, RunID: id})
}

// Paused is the answer of POST /api/v1/jobs/{name}/pause and resume.
type Paused struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
	// Why is what the job's state keeps about the pause: the reason given
	// and who asked (pause only).
	Why string `json:"why,omitempty"`
}

// pauseBody is the optional body of POST /api/v1/jobs/{name}/pause.
type pauseBody struct {
	Reason string `json:"reason"`
	// By names who asks, for a client acting for someone (the command
	// line: "cli user@host"); the record says "<by> via api from <address>".
	By string `json:"by"`
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
	why := ""
	if paused {
		// The reason: {"reason": "..."} in the body, or ?reason=.
		var b pauseBody
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
		if err == nil && len(bytes.TrimSpace(raw)) > 0 {
			err = json.Unmarshal(raw, &b)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, `the body must be empty or {"reason": "..."} (at most 4 KiB)`)
			return
		}
		reason := cmp.Or(b.Reason, r.URL.Query().Get("reason"))
		who := Who("api", r)
		if b.By != "" {
			who = b.By + " via " + who
		}
		do, verb = func(ctx context.Context, job string) error {
			return a.cfg.Control.PauseWithReason(ctx, job, reason, who)
		}, "paused"
	}
	if err := do(ctx, j.Name); err != nil {
		a.storeError(w, r, err)
		return
	}
	if paused {
		if st, err := a.cfg.Control.Status(ctx, j.Name, 1); err == nil {
			why = st.PausedWhy
		}
	}
	a.log.Info("admin: job "+verb+" cluster-wide", "job", j.Name, "remote", r.RemoteAddr, "why", why)
	writeJSON(w, http.StatusOK, Paused{Job: j.Name, Paused: paused, Why: why})
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
	return intParam(w, r, "limit", def, maxRunsLimit)
}

func intParam(w http.ResponseWriter, r *http.Request, name string, def, most int) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		writeError(w, http.StatusBadRequest, name+" must be an integer from 1 to "+strconv.Itoa(most))
		return 0, false
	}
	return n, true
}

// storeError answers 503: every error of Control here is the store's (job
// names were checked against the table first). Whether an action (a
// POST) the store failed to answer was applied is unknown — Redis runs
// what it had read before it stalled, and an answer can be lost — so the
// answer says so, as the console does: a second trigger could be a second
// run.
func (a *api) storeError(w http.ResponseWriter, r *http.Request, err error) {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "store did not answer in time: " + msg
	}
	if r.Method == http.MethodPost {
		msg += "; whether the action was applied is unknown: check the job (or run) once the store answers, before sending it again"
	}
	a.log.Warn("admin: store error", "err", err)
	writeError(w, http.StatusServiceUnavailable, "store unavailable: "+msg)
}

// WriteError answers code with the API's error body, {"error": msg}: for
// a wrapper of the handler (cmd/scheduler's owner check) to answer as the
// API does.
func WriteError(w http.ResponseWriter, code int, msg string) { writeError(w, code, msg) }

// clipMethod is a request's method as an answer may say it back: a method
// is a token of any length, so a long one is cut.
func clipMethod(m string) string {
	if len(m) > 20 {
		return m[:20] + "…"
	}
	return m
}

// maxErrorBytes bounds an error message. Messages say back a job name, a
// run id or a path from the address, which may be as long as the server
// reads (64 KiB): longer than any real one (a job's name is at most 128
// characters), they are cut, as the console cuts them.
const maxErrorBytes = 1 << 10

func writeError(w http.ResponseWriter, code int, msg string) {
	if len(msg) > maxErrorBytes {
		cut := maxErrorBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
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
