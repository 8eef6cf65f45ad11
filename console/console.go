package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solocron/solocron/internal/hostcheck"
	"github.com/solocron/solocron/internal/routes"
	"github.com/solocron/solocron/scheduler"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// Config is what a console serves.
type Config struct {
	// Control reads and changes the cluster's state. Required.
	Control *scheduler.Control
	// Jobs returns the table in force; it is called on every request, so
	// a reload shows at once. Required.
	Jobs func() []scheduler.Job
	// Prefix is the path the console is mounted under, without a trailing
	// slash ("/ops/solocron"); "" for the root. The handler expects the
	// full path (do not wrap it in http.StripPrefix).
	Prefix string
	// Token, when not empty, is required for every page: a sign-in form
	// exchanges it for a session cookie (or a request carries it as
	// "Authorization: Bearer <token>").
	Token string
	// ReadOnly hides the actions (Run now, Pause, Resume, Cancel, Retry,
	// backfill) and refuses them.
	ReadOnly bool
	// AllowedHosts, when not empty, turns on the Host check the daemon's
	// admin listener makes (a defence against DNS rebinding): a request
	// whose Host is none of these names (port ignored), not a loopback name
	// (localhost, *.localhost) and not an IP address is answered 421.
	// []string{"localhost"} allows loopback names and IP addresses only.
	// Leave it empty only when whatever serves the console checks Host
	// itself (the daemon does, before the console sees a request).
	AllowedHosts []string
	// TraceURL, when set, links a run's trace id to a trace viewer: every
	// "{trace_id}" in it is replaced by the id
	// ("https://tempo.example/trace/{trace_id}"). It must be an http:// or
	// https:// URL.
	TraceURL string
	// Redact masks the scheduler's secrets (its admin token, its store's
	// password) in everything the console shows: run output and errors
	// before they are escaped, then the whole page. nil masks nothing.
	Redact func(string) string
	// Replica names the replica serving the console, shown in the header.
	Replica string
	// SessionTTL is how long a sign-in lasts. Default 12h.
	SessionTTL time.Duration
	// CacheTTL is how long one read of the store serves every viewer of
	// the jobs page. Default 1s.
	CacheTTL time.Duration
	// StoreTimeout bounds each request's calls to the store. Default 5s.
	StoreTimeout time.Duration
	// Logger records sign-ins and actions. Default slog.Default().
	Logger *slog.Logger
	// Now tells the time; default time.Now.
	Now func() time.Time
}

// Console is the operator console: an http.Handler serving the pages
//
//	GET  {prefix}/                   every job (?q=name&outcome=failed)
//	GET  {prefix}/jobs/{name}        a job: timeline, next instants, history (?page=N)
//	GET  {prefix}/runs/{id}          one run's record
//	GET  {prefix}/replicas           the live replicas
//	GET  {prefix}/runs               every job's latest runs (?outcome=failed&since=1h)
//	GET  {prefix}/pools              the pools: size, in use, holders, waiting
//	POST {prefix}/jobs/{name}/trigger|pause|resume
//	POST {prefix}/runs/{id}/cancel|retry
//	GET, POST {prefix}/signin; POST {prefix}/signout
//	GET  {prefix}/assets/...         the style sheet and script
//
// (GET also answers HEAD.) Another method on one of these addresses is
// 405 with an Allow header naming those it takes; any other address is 404.
type Console struct {
	cfg        Config
	mux        *http.ServeMux
	pages      map[string]*template.Template
	tokenHash  [sha256.Size]byte
	sessionKey []byte // signs session cookies
	csrfKey    []byte // signs the forms' anti-forgery field
	log        *slog.Logger
	hosts      *hostcheck.Check // nil: no Host check here

	cacheMu  sync.Mutex
	cached   []scheduler.Overview
	replicas []scheduler.Replica // read with it; nil when the store keeps none
	cachedAt time.Time
	cachedOf string // the job names it was read for
	// The runs page's read (more runs per job), shared the same way, under
	// a lock of its own: its slower read does not hold up the jobs page's.
	runsMu       sync.Mutex
	runsCached   []scheduler.Overview
	runsCachedAt time.Time
	runsCachedOf string

	failMu   sync.Mutex
	failures map[string][]time.Time // failed sign-ins in the last minute, per client address
}

// Limits.
const (
	historyPage       = 25 // runs per page of a job's history
	timelineRuns      = 60 // runs drawn on a job's timeline
	jobsRecent        = 3  // runs per job the jobs page reads: the last one not a backfill's, likely
	nextInstants      = 10
	backfillRereads   = 20 // jobs per refresh of the jobs page read further past a backfill's runs
	signinFailures    = 10 // failed sign-ins per minute before 429
	sessionCookieName = "solocron_session"
)

// New returns the console for cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Control == nil || cfg.Jobs == nil {
		return nil, errors.New("console: Control and Jobs are required")
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix != "" && !strings.HasPrefix(cfg.Prefix, "/") {
		return nil, errors.New("console: Prefix must start with /")
	}
	if err := checkTraceURL(cfg.TraceURL); err != nil {
		return nil, err
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Second
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, log: cfg.Logger, failures: map[string][]time.Time{}}
	if len(cfg.AllowedHosts) > 0 {
		// Not told the listen address: any IP literal is allowed, since a
		// rebinding page always sends a name.
		c.hosts = hostcheck.New("", cfg.AllowedHosts)
	}
	if cfg.Token != "" {
		c.tokenHash = sha256.Sum256([]byte(cfg.Token))
		// Derived from the token: every replica sharing the token accepts
		// the others' sessions (behind a load balancer), and changing the
		// token ends every session.
		k := hmac.New(sha256.New, []byte(cfg.Token))
		k.Write([]byte("solocron console session"))
		c.sessionKey = k.Sum(nil)
		k.Reset()
		k.Write([]byte("solocron console forms"))
		c.csrfKey = k.Sum(nil)
	} else {
		c.csrfKey = make([]byte, 32)
		_, _ = rand.Read(c.csrfKey)
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}

	assets, _ := fs.Sub(assetFiles, "assets")
	files := http.FileServerFS(assets)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusForbidden, "Cross-origin request refused.")
	}))
	post := func(h http.HandlerFunc) http.Handler { return c.writable(cop.Handler(c.checkForm(h))) }

	m := http.NewServeMux()
	p := cfg.Prefix
	// Every route goes through the table: a request for one of these paths
	// with a method none of its routes takes is answered 405 with Allow
	// (routes.Table.NotAllowed), not 404 by the catch-all below.
	rt := routes.New(m)
	rt.Handle("GET", p+"/assets/", http.StripPrefix(p+"/assets", cacheAssets(files)))
	// The icon where a browser looks for it by itself (a page of the JSON
	// API, /metrics): without it each such page logs a failed load.
	rt.HandleFunc("GET", p+"/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/favicon.svg"
		cacheAssets(files).ServeHTTP(w, r2)
	})
	rt.HandleFunc("GET", p+"/signin", c.signinForm)
	rt.Handle("POST", p+"/signin", cop.Handler(http.HandlerFunc(c.signin)))
	rt.Handle("POST", p+"/signout", cop.Handler(http.HandlerFunc(c.signout)))
	rt.Handle("GET", p+"/{$}", c.reader(http.HandlerFunc(c.jobsPage)))
	rt.Handle("GET", p+"/jobs/{name}", c.reader(http.HandlerFunc(c.jobPage)))
	rt.Handle("GET", p+"/runs/{id}", c.reader(http.HandlerFunc(c.runPage)))
	rt.Handle("GET", p+"/replicas", c.reader(http.HandlerFunc(c.replicasPage)))
	rt.Handle("GET", p+"/runs", c.reader(http.HandlerFunc(c.runsPage)))
	rt.Handle("GET", p+"/pools", c.reader(http.HandlerFunc(c.poolsPage)))
	// The actions, each a path of its own (not /jobs/{name}/{action}): a
	// GET of an action's path is 405, of a path that is no action 404.
	for _, action := range jobActions {
		rt.Handle("POST", p+"/jobs/{name}/"+action, c.reader(post(withAction(action, c.act))))
	}
	for _, action := range runActions {
		rt.Handle("POST", p+"/runs/{id}/"+action, c.reader(post(withAction(action, c.actOnRun))))
	}
	if p != "" {
		rt.HandleFunc("GET", p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		})
	}
	rt.NotAllowed(func(w http.ResponseWriter, r *http.Request, allow string) {
		c.fail(w, r, http.StatusMethodNotAllowed, "This address takes "+allow+" only.")
	})
	m.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		if to, ok := withoutTrailingSlash(m, p+"/", r); ok {
			// /jobs/ or /runs/sweep@x/ typed by hand: the page it means.
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		c.fail(w, r, http.StatusNotFound, "No such page.")
	})
	c.mux = m
	return c, nil
}

// withoutTrailingSlash returns, for a GET or HEAD of an address ending in
// slashes that no route takes, the same address without them when a page
// (a GET route) answers that one, with the query kept.
func withoutTrailingSlash(m *http.ServeMux, catchAll string, r *http.Request) (string, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "", false
	}
	path := strings.TrimRight(r.URL.EscapedPath(), "/")
	if path == r.URL.EscapedPath() || !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
		return "", false
	}
	u, err := url.Parse(path)
	if err != nil {
		return "", false
	}
	r2 := r.Clone(r.Context())
	r2.URL = u
	if _, pattern := m.Handler(r2); !strings.HasPrefix(pattern, "GET ") || strings.HasSuffix(pattern, " "+catchAll) {
		return "", false // no page there: 404, or 405 for an action's address
	}
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	return path, true
}

// The actions of a job's page (act) and of a run's (actOnRun), each
// answered at {prefix}/jobs/{name}/<action> or {prefix}/runs/{id}/<action>.
var (
	jobActions = []string{"trigger", "pause", "resume", "backfill", "backfill-cancel"}
	runActions = []string{"cancel", "retry"}
)

// withAction gives h the action its route is for as the "action" path
// value.
func withAction(action string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("action", action)
		h(w, r)
	}
}

// cacheAssets serves the embedded files, never a listing of their folder.
func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=300")
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the console.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	// No inline script or style anywhere: a value that escaped escaping
	// still could not run.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if !strings.HasPrefix(r.URL.Path, c.cfg.Prefix+"/assets/") {
		h.Set("Cache-Control", "no-store")
	}
	if c.hosts != nil && !c.hosts.Allowed(r.Host) {
		c.fail(w, r, http.StatusMisdirectedRequest, "This server does not answer to Host "+strconv.Quote(hostcheck.Clip(r.Host))+".")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// Authenticate reports whether r carries a valid console session cookie,
// so that the JSON API next to the console can accept it too: it is what
// the daemon gives its API as the hook for a request without an
// Authorization header. Always true without a token.
func (c *Console) Authenticate(r *http.Request) bool {
	if c.cfg.Token == "" {
		return true
	}
	ck, err := r.Cookie(sessionCookieName)
	return err == nil && c.validSession(ck.Value)
}

// authorized accepts a session cookie or the bearer token.
func (c *Console) authorized(r *http.Request) bool {
	if c.Authenticate(r) {
		return true
	}
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && c.tokenMatches(strings.TrimSpace(cred))
}

func (c *Console) tokenMatches(tok string) bool {
	got := sha256.Sum256([]byte(tok))
	return tok != "" && subtle.ConstantTimeCompare(got[:], c.tokenHash[:]) == 1
}

// reader sends a visitor without a session to the sign-in form.
func (c *Console) reader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.authorized(r) {
			h.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet {
			c.fail(w, r, http.StatusUnauthorized, "Sign in first.")
			return
		}
		next := r.URL.Path
		if r.URL.RawQuery != "" {
			next += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, c.cfg.Prefix+"/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
	})
}

// writable refuses actions on a read-only console, before anything else.
func (c *Console) writable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.ReadOnly {
			c.fail(w, r, http.StatusForbidden, "This console is read-only (admin.read_only).")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// A session cookie is "<expiry unix s>.<nonce>.<hmac>"; it needs no state
// on the server.
func (c *Console) newSession() (string, time.Time) {
	exp := c.cfg.Now().Add(c.cfg.SessionTTL)
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	v := strconv.FormatInt(exp.Unix(), 10) + "." + hex.EncodeToString(nonce[:])
	return v + "." + c.sign(c.sessionKey, v), exp
}

func (c *Console) validSession(v string) bool {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || c.sessionKey == nil {
		return false
	}
	body, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(c.sign(c.sessionKey, body))) {
		return false
	}
	exp, _, _ := strings.Cut(body, ".")
	sec, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && c.cfg.Now().Before(time.Unix(sec, 0))
}

// checkTraceURL accepts "" or an absolute http(s) URL with {trace_id}.
func checkTraceURL(u string) error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(strings.ReplaceAll(u, traceIDPlaceholder, "0"))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errors.New("console: TraceURL must be an absolute http:// or https:// URL")
	}
	if !strings.Contains(u, traceIDPlaceholder) {
		return errors.New("console: TraceURL must contain " + traceIDPlaceholder)
	}
	return nil
}

// traceIDPlaceholder is what TraceURL's trace id replaces.
const traceIDPlaceholder = "{trace_id}"

// traceLink is the link to a run's trace; "" without TraceURL or trace id.
func (c *Console) traceLink(traceID string) string {
	if c.cfg.TraceURL == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(c.cfg.TraceURL, traceIDPlaceholder, url.PathEscape(traceID))
}

// redact masks the scheduler's secrets in s.
func (c *Console) redact(s string) string {
	if c.cfg.Redact == nil || s == "" {
		return s
	}
	return c.cfg.Redact(s)
}

// clean is r with its error and output masked.
func (c *Console) clean(r scheduler.Run) scheduler.Run {
	r.Error, r.Output = c.redact(r.Error), c.redact(r.Output)
	return r
}

func (c *Console) sign(key []byte, v string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

// csrf is the anti-forgery field of r's forms: bound to the session, so a
// page elsewhere can neither read nor guess it. Cross-origin POSTs are
// refused before it is even checked (http.CrossOriginProtection), and the
// session cookie is SameSite=Strict; this is the third lock.
func (c *Console) csrf(r *http.Request) string {
	sess := ""
	if ck, err := r.Cookie(sessionCookieName); err == nil {
		sess = ck.Value
	}
	return c.sign(c.csrfKey, "form|"+sess)[:32]
}

func (c *Console) checkForm(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(c.csrf(r))) {
			c.fail(w, r, http.StatusForbidden, "This form has expired: reload the page and try again.")
			return
		}
		h(w, r)
	}
}

func (c *Console) signinForm(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Token == "" || c.Authenticate(r) {
		http.Redirect(w, r, c.safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", "Sign in", signinView{Next: c.safeNext(r.URL.Query().Get("next"))})
}

type signinView struct {
	Next  string
	Error string
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Token == "" {
		http.Redirect(w, r, c.cfg.Prefix+"/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	next := c.safeNext(r.PostFormValue("next"))
	client := clientOf(r)
	if c.tooManyFailures(client) {
		w.Header().Set("Retry-After", "60")
		c.render(w, r, http.StatusTooManyRequests, "signin", "Sign in", signinView{Next: next, Error: "Too many failed sign-ins: wait a minute."})
		return
	}
	if !c.tokenMatches(strings.TrimSpace(r.PostFormValue("token"))) {
		c.failed(client)
		c.log.Warn("console: sign-in with a wrong token refused", "remote", r.RemoteAddr)
		c.render(w, r, http.StatusUnauthorized, "signin", "Sign in", signinView{Next: next, Error: "That is not the admin token."})
		return
	}
	v, exp := c.newSession()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName, Value: v, Path: c.cookiePath(), Expires: exp, MaxAge: int(c.cfg.SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	c.log.Info("console: signed in", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName, Value: "", Path: c.cookiePath(), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, c.cfg.Prefix+"/signin", http.StatusSeeOther)
}

func (c *Console) cookiePath() string { return c.cfg.Prefix + "/" }

// clientOf is the address a request came from, without its port.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// maxFailingClients bounds the memory the sign-in limit keeps; beyond it,
// every client shares one budget.
const maxFailingClients = 1024

func (c *Console) tooManyFailures(client string) bool {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	cut := time.Now().Add(-time.Minute)
	recent := func(ts []time.Time) []time.Time {
		i := 0
		for i < len(ts) && ts[i].Before(cut) {
			i++
		}
		return ts[i:]
	}
	if len(c.failures) > maxFailingClients {
		for k, ts := range c.failures {
			if ts = recent(ts); len(ts) == 0 {
				delete(c.failures, k)
			} else {
				c.failures[k] = ts
			}
		}
	}
	if len(c.failures) > maxFailingClients {
		client = "*"
	}
	ts := recent(c.failures[client])
	if len(ts) == 0 {
		delete(c.failures, client)
	} else {
		c.failures[client] = ts
	}
	return len(ts) >= signinFailures
}

func (c *Console) failed(client string) {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if len(c.failures) > maxFailingClients {
		client = "*"
	}
	c.failures[client] = append(c.failures[client], time.Now())
}

// safeNext keeps a redirect inside the console: next is parsed and rebuilt
// as a path under the prefix (and its query), never another host. Browsers
// drop TAB, CR and LF from a URL and read a backslash as a slash, so
// "/<TAB>/evil.example" or "/\evil.example" would leave the site: anything with a control
// character or a backslash, raw or percent-encoded, goes home instead, and
// so do "//host", a scheme, and a path that cleans to outside the prefix.
func (c *Console) safeNext(next string) string {
	home := c.cfg.Prefix + "/"
	bad := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' })
	}
	if next == "" || bad(next) || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || bad(u.Path) {
		return home
	}
	p := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && p != "/" {
		p += "/"
	}
	if p != home && !strings.HasPrefix(p, home) {
		return home
	}
	out := &url.URL{Path: p}
	if q, err := url.ParseQuery(u.RawQuery); err == nil && len(q) > 0 {
		out.RawQuery = q.Encode()
	}
	s := out.String()
	if !strings.HasPrefix(s, home) || strings.HasPrefix(s, "//") || bad(s) {
		return home
	}
	return s
}

func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.cfg.StoreTimeout)
}

// overview reads every job's state, shared by every request within the
// cache's TTL: a wall of open tabs refreshing costs the store one read a
// second, not one per tab.
func (c *Console) overview(ctx context.Context, names []string) ([]scheduler.Overview, []scheduler.Replica, error) {
	key := strings.Join(names, "\x00")
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	if c.cached != nil && c.cachedOf == key && time.Since(c.cachedAt) < c.cfg.CacheTTL {
		return c.cached, c.replicas, nil
	}
	ov, err := c.cfg.Control.Overview(ctx, names, jobsRecent)
	if err != nil {
		return nil, nil, err
	}
	// Right after a backfill, a job's latest runs are all the backfill's
	// (instants of last week): read further for its last run of its own,
	// for a few jobs per refresh.
	extra := 0
	for i := range ov {
		if h := ov[i].History; len(h) == jobsRecent && lastRun(h).Kind == scheduler.KindBackfill && extra < backfillRereads {
			extra++
			if more, err := c.cfg.Control.HistoryPage(ctx, names[i], 0, historyChunk); err == nil {
				ov[i].History = more
			}
		}
	}
	// The registry, for the banner when replicas disagree about the table:
	// advisory, so a failure to read it only hides the banner.
	rs, _ := c.cfg.Control.Replicas(ctx)
	c.cached, c.replicas, c.cachedAt, c.cachedOf = ov, rs, time.Now(), key
	return ov, rs, nil
}

// overviewRuns reads every job's latest perJob runs for the runs page,
// shared like overview: at 2,000 jobs it reads 10,000 records (0.4 s), and
// every open tab asked again at each refresh.
func (c *Console) overviewRuns(ctx context.Context, names []string, perJob int) ([]scheduler.Overview, error) {
	key := strconv.Itoa(perJob) + "\x00" + strings.Join(names, "\x00")
	c.runsMu.Lock()
	defer c.runsMu.Unlock()
	if c.runsCached != nil && c.runsCachedOf == key && time.Since(c.runsCachedAt) < c.cfg.CacheTTL {
		return c.runsCached, nil
	}
	ov, err := c.cfg.Control.Overview(ctx, names, perJob)
	if err != nil {
		return nil, err
	}
	c.runsCached, c.runsCachedAt, c.runsCachedOf = ov, time.Now(), key
	return ov, nil
}
