package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// Defaults filled into a File for fields the file leaves out.
const (
	DefaultMode         = "standalone"
	DefaultKeyPrefix    = "solocron"
	DefaultMaxClockSkew = 2 * time.Second
	// DefaultMinReplicasAckTimeout is how long a claim waits for its
	// replicas' acknowledgement when min_replicas_ack is set.
	DefaultMinReplicasAckTimeout = time.Second
	// DefaultKillGrace is a command job's kill_grace when the table does
	// not say, unless a third of the job's lease is shorter.
	DefaultKillGrace = 10 * time.Second
)

// MaxFileSize is the largest job table Load and Parse accept. A real table of
// a few thousand jobs is well under a megabyte; the limit keeps a wrong path
// (a log file, a device) from being read into memory whole.
const MaxFileSize = 16 << 20

// redactedSecret replaces passwords and tokens in Redacted and String; it is
// what net/url's URL.Redacted uses too.
const redactedSecret = "xxxxx"

// File is a loaded job table.
type File struct {
	// Path is the name the file was loaded under, as given to Load or Parse.
	Path string
	// ReplicaID is the file's replica_id, or "" when unset; the command line
	// then fills in SOLOCRON_REPLICA_ID, --replica-id or <hostname>-<pid>.
	ReplicaID string
	Store     Store
	Admin     Admin
	// Notifications are the targets jobs name in notify:; pass them to
	// scheduler.WithNotifications.
	Notifications []notify.Target
	// Pools are the sizes of the pools jobs name in pool: (each job's
	// scheduler.Job carries its pool's size already).
	Pools map[string]int
	// Jobs are the file's jobs in file order, with defaults: merged in and
	// each Handler built. Fields the file leaves out are zero, which
	// scheduler.Job reads as its documented default.
	Jobs []scheduler.Job
}

// Store says where runs are coordinated.
type Store struct {
	// URL is a redis:// or rediss:// URL; "" means the embedded in-process
	// store (one replica only).
	URL string
	// Mode is standalone (the default), sentinel, cluster or redlock.
	Mode     string
	Sentinel Sentinel
	Cluster  Cluster
	Redlock  Redlock
	// KeyPrefix starts every key; default "solocron". It never contains '{',
	// '}' or whitespace, so it cannot break a Redis Cluster hash tag.
	KeyPrefix string
	// MaxClockSkew is the clock difference between replicas under which
	// every run still starts at most once; default 2s.
	MaxClockSkew time.Duration
	// TLS configures TLS; nil when the file has no tls section. TLS is on
	// for a rediss:// URL, and in sentinel and cluster mode also when this
	// section is given.
	TLS *TLS
	// MinReplicasAck, when above 0, makes every claim and lease renewal wait
	// until that many replicas of the primary acknowledged it (WAIT), for at
	// most MinReplicasAckTimeout (default 1s when MinReplicasAck is set); a
	// claim too few acknowledged is taken back and its run not started.
	MinReplicasAck        int
	MinReplicasAckTimeout time.Duration
	// DataDir is where the embedded store (no URL) keeps its state, as
	// written in the file with a relative path made relative to the file's
	// directory; "" when the file does not say, and the daemon picks the
	// default (storeconn.DefaultDataDir: $STATE_DIRECTORY, else
	// "<table name>.data" beside the table).
	DataDir string
}

// TLS is how the store's connections use TLS. Paths are read when the store
// is opened.
type TLS struct {
	// CAFile holds the PEM certificates that sign the servers'; default:
	// the system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key, for servers
	// that require one (tls-auth-clients yes).
	CertFile, KeyFile string
	// ServerName is the name the servers' certificates must carry; default:
	// the host each connection dials.
	ServerName string
	// InsecureSkipVerify accepts any server certificate. For tests only.
	InsecureSkipVerify bool
}

// Sentinel names the Redis Sentinel servers and the master they watch.
// Username and Password authenticate to the sentinels; the master's own
// credentials come from Store.URL.
type Sentinel struct {
	Master             string
	Addrs              []string
	Username, Password string
}

// Cluster lists seed addresses (host:port) of a Redis Cluster.
type Cluster struct {
	Addrs []string
}

// Redlock lists the independent Redis servers of redlock mode (at least 3).
type Redlock struct {
	URLs []string
}

// Defaults of the admin section.
const (
	// DefaultAdminRateLimit is admin.rate_limit: requests per second one
	// client (one remote IP address) may make.
	DefaultAdminRateLimit = 20
	// DefaultAdminRateBurst is admin.rate_burst: requests one client may
	// make at once before rate_limit applies.
	DefaultAdminRateBurst = 40
)

// Admin configures the admin HTTP server (health, metrics, JSON API).
type Admin struct {
	// Listen is host:port; "" turns the server off.
	Listen string
	// Token, when set, is required as "Authorization: Bearer <token>" by
	// every /api/v1 endpoint, reads included (/healthz, /readyz and
	// /metrics stay open), and by the console, whose sign-in form exchanges
	// it for a session. String, GoString and LogValue never show it.
	Token string
	// ReadOnly refuses every action (trigger, pause, resume) on the JSON API
	// and hides them on the console.
	ReadOnly bool
	// TraceURL, when set, links each run's page on the console to its
	// trace: "{trace_id}" in it is replaced by the run's trace id
	// ("https://tempo.example/trace/{trace_id}").
	TraceURL string
	// AllowedHosts are the names, besides the listen address and the
	// loopback names (localhost, 127.0.0.1, ::1), that a request's Host
	// header may carry; any other Host is answered 421 (a DNS rebinding
	// defence). Names only, no port.
	AllowedHosts []string
	// RateLimit is how many requests per second one client (remote IP) may
	// make to /api/v1 and the console; more are answered 429. Default
	// DefaultAdminRateLimit (20); 0 turns the limit off.
	RateLimit int
	// RateBurst is how many requests a client may make at once; default
	// DefaultAdminRateBurst (40).
	RateBurst int
	// TLS, when set, serves the admin API over HTTPS; nil serves plain HTTP.
	TLS *AdminTLS
}

// AdminTLS is the admin listener's TLS. Paths are read at start.
type AdminTLS struct {
	// CertFile and KeyFile are the server's certificate (chain) and key, in
	// PEM. Both required.
	CertFile, KeyFile string
	// ClientCAFile, when set, holds the PEM certificates of the CAs that
	// sign client certificates: every connection must then present one
	// (mutual TLS).
	ClientCAFile string
}

// Redacted returns a copy of s with every password replaced by "xxxxx": in
// URL, in each of Redlock.URLs and in Sentinel.Password. Use it for anything
// that leaves the process (logs, API answers). A URL that does not parse is
// replaced whole, since where its password is cannot be told.
func (s Store) Redacted() Store {
	s.URL = redactURL(s.URL)
	if s.Redlock.URLs != nil {
		urls := make([]string, len(s.Redlock.URLs))
		for i, u := range s.Redlock.URLs {
			urls[i] = redactURL(u)
		}
		s.Redlock.URLs = urls
	}
	if s.TLS != nil {
		t := *s.TLS
		s.TLS = &t
	}
	s.Sentinel.Addrs = slices.Clone(s.Sentinel.Addrs)
	s.Cluster.Addrs = slices.Clone(s.Cluster.Addrs)
	if s.Sentinel.Password != "" {
		s.Sentinel.Password = redactedSecret
	}
	return s
}

func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redactedSecret
	}
	return u.Redacted()
}

// String describes s with its passwords redacted.
func (s Store) String() string {
	r := s.Redacted()
	out := fmt.Sprintf("{URL:%s Mode:%s Sentinel:%v Cluster:%v Redlock:%v KeyPrefix:%s MaxClockSkew:%v",
		r.URL, r.Mode, r.Sentinel, r.Cluster, r.Redlock, r.KeyPrefix, r.MaxClockSkew)
	if r.TLS != nil {
		out += fmt.Sprintf(" TLS:%+v", *r.TLS)
	}
	if r.MinReplicasAck > 0 {
		out += fmt.Sprintf(" MinReplicasAck:%d MinReplicasAckTimeout:%v", r.MinReplicasAck, r.MinReplicasAckTimeout)
	}
	if r.DataDir != "" {
		out += " DataDir:" + r.DataDir
	}
	return out + "}"
}

// GoString is String, so %#v cannot print a password either.
func (s Store) GoString() string { return "config.Store" + s.String() }

// LogValue logs s with its passwords redacted.
func (s Store) LogValue() slog.Value {
	r := s.Redacted()
	mode := r.Mode
	if r.URL == "" && mode == DefaultMode {
		mode = "embedded"
	}
	attrs := []slog.Attr{slog.String("mode", mode), slog.String("key_prefix", r.KeyPrefix),
		slog.Duration("max_clock_skew", r.MaxClockSkew)}
	if r.DataDir != "" {
		attrs = append(attrs, slog.String("data_dir", r.DataDir))
	}
	if r.URL != "" {
		attrs = append(attrs, slog.String("url", r.URL))
	}
	if r.TLS != nil {
		attrs = append(attrs, slog.Bool("tls", true))
	}
	if r.MinReplicasAck > 0 {
		attrs = append(attrs, slog.Int("min_replicas_ack", r.MinReplicasAck))
	}
	switch r.Mode {
	case "sentinel":
		attrs = append(attrs, slog.String("master", r.Sentinel.Master), slog.Any("addrs", r.Sentinel.Addrs))
	case "cluster":
		attrs = append(attrs, slog.Any("addrs", r.Cluster.Addrs))
	case "redlock":
		attrs = append(attrs, slog.Any("urls", r.Redlock.URLs))
	}
	return slog.GroupValue(attrs...)
}

// String describes s with its password redacted.
func (s Sentinel) String() string {
	if s.Password != "" {
		s.Password = redactedSecret
	}
	return fmt.Sprintf("{Master:%s Addrs:%v Username:%s Password:%s}", s.Master, s.Addrs, s.Username, s.Password)
}

// GoString is String, so %#v cannot print the password either.
func (s Sentinel) GoString() string { return "config.Sentinel" + s.String() }

// String describes r with the passwords in its URLs redacted.
func (r Redlock) String() string {
	urls := make([]string, len(r.URLs))
	for i, u := range r.URLs {
		urls[i] = redactURL(u)
	}
	return fmt.Sprintf("{URLs:%v}", urls)
}

// GoString is String, so %#v cannot print a password either.
func (r Redlock) GoString() string { return "config.Redlock" + r.String() }

// String describes a; the token shows only as set ("xxxxx") or unset ("").
func (a Admin) String() string {
	out := fmt.Sprintf("{Listen:%s Token:%s AllowedHosts:%v RateLimit:%d RateBurst:%d ReadOnly:%t TraceURL:%s",
		a.Listen, a.maskedToken(), a.AllowedHosts, a.RateLimit, a.RateBurst, a.ReadOnly, a.TraceURL)
	if a.TLS != nil {
		out += fmt.Sprintf(" TLS:%+v", *a.TLS)
	}
	return out + "}"
}

// GoString is String, so %#v cannot print the token either.
func (a Admin) GoString() string { return "config.Admin" + a.String() }

// LogValue logs a without its token.
func (a Admin) LogValue() slog.Value {
	return slog.GroupValue(slog.String("listen", a.Listen), slog.Bool("token_set", a.Token != ""),
		slog.Any("allowed_hosts", a.AllowedHosts), slog.Int("rate_limit", a.RateLimit), slog.Bool("tls", a.TLS != nil),
		slog.Bool("read_only", a.ReadOnly), slog.String("trace_url", a.TraceURL))
}

func (a Admin) maskedToken() string {
	if a.Token == "" {
		return ""
	}
	return redactedSecret
}

// Option configures Load and Parse.
type Option func(*options)

type options struct {
	funcs     map[string]jobs.Job
	lookupEnv func(string) (string, bool)
}

// WithFuncs registers the Go functions that "func: <name>" may name. Without
// it every func job is an error: func jobs run only in a program that embeds
// Solocron. Several calls add up; a later name wins. There is no global
// registry.
func WithFuncs(funcs map[string]jobs.Job) Option {
	return func(o *options) {
		if o.funcs == nil {
			o.funcs = make(map[string]jobs.Job, len(funcs))
		}
		maps.Copy(o.funcs, funcs)
	}
}

// WithLookupEnv sets the function ${VAR} is expanded with. Default
// os.LookupEnv; nil keeps the default.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) {
		if f != nil {
			o.lookupEnv = f
		}
	}
}

// CheckReplicaID reports what is wrong with a replica id, wherever it came
// from (replica_id, SOLOCRON_REPLICA_ID, --replica-id): 1 to 256 bytes of
// UTF-8 text without control characters. It names the replica in run
// records, status tables, logs and metric labels, so a newline or an escape
// sequence in it would break (or forge) their lines on an operator's
// terminal.
func CheckReplicaID(id string) error {
	switch {
	case id == "" || len(id) > 256:
		return fmt.Errorf("must be 1 to 256 bytes (got %d)", len(id))
	case !utf8.ValidString(id):
		return fmt.Errorf("must be UTF-8 text (got %q)", id)
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("must not contain control characters such as newlines or escapes (got %q)", id)
	}
	return nil
}

// Load reads the job table at path and parses it as Parse does, naming the
// file as path in every error. A file that cannot be read gives the
// *fs.PathError from the operating system (errors.Is(err, fs.ErrNotExist)
// works); every problem with the contents gives a *Errors.
func Load(path string, opts ...Option) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read one byte past the limit so Parse can tell an oversized file.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return nil, err // it names the file already (a directory: "read DIR: is a directory")
	case err != nil:
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return Parse(path, data, opts...)
}

// Parse parses a job table held in memory. name stands for the file in
// errors and in File.Path.
//
// On any problem Parse returns a nil *File and a *Errors listing every
// problem it found, YAML-level and semantic, sorted by position; each entry
// prints as "NAME:LINE:COL: path: message". Jobs are checked with
// scheduler.ValidateTable, so a table that loads is one the scheduler
// accepts. Parse never panics, whatever data holds.
//
// Options:
//   - WithFuncs: the Go functions func jobs may name; default none, so every
//     func job is an error.
//   - WithLookupEnv: where ${VAR} is looked up; default os.LookupEnv.
func Parse(name string, data []byte, opts ...Option) (*File, error) {
	o := options{lookupEnv: os.LookupEnv}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	d := &decoder{file: name, lookupEnv: o.lookupEnv, funcs: o.funcs}
	f := d.safeParse(data)
	if err := d.result(); err != nil {
		return nil, err
	}
	f.Path = name
	return f, nil
}

// safeParse is parse with a net under it: every input is meant to end in a
// list of problems, but a job table reloaded on SIGHUP must never take a
// replica down, whatever a dependency does with it.
func (d *decoder) safeParse(data []byte) (f *File) {
	defer func() {
		if r := recover(); r != nil {
			f = nil
			d.add(1, 1, "yaml", fmt.Errorf("internal error while reading the file: %v", r))
		}
	}()
	return d.parse(data)
}

// result returns the collected problems as a *Errors, or nil.
func (d *decoder) result() error {
	if len(d.errs) == 0 {
		return nil
	}
	es := d.errs.finish()
	return &es
}
