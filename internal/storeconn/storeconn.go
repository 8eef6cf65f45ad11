// Package storeconn opens the store a job table names: a Redis client for
// standalone, Sentinel or Cluster mode, one client per master in Redlock
// mode, or the embedded in-process store.
package storeconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/embedstore"
	"github.com/solocron/solocron/scheduler"
)

// Conn is an open store.
type Conn struct {
	// Client is dedicated to coordination: the scheduler's claims and
	// renewals never queue behind other Redis work of the process. It is nil
	// in redlock mode, which has no single server: see Masters.
	Client redis.UniversalClient
	// Masters are the independent masters of redlock mode, one client each;
	// nil in the other modes.
	Masters []redis.UniversalClient
	// Embedded is the in-process store when the table names no URL; nil
	// otherwise. It serves this process only, over in-process pipes (no
	// listener): one replica. With store.data_dir (or DefaultDataDir) it
	// keeps its state there.
	Embedded *embedstore.Store
	// Mode is the store mode in use: embedded, standalone, sentinel, cluster
	// or redlock.
	Mode string
	// Where describes the store for logs, without secrets.
	Where string

	store  config.Store
	shared bool // Embedded belongs to another Conn (OpenAdmin)
}

// Close closes the clients and stops the embedded store.
func (c *Conn) Close() error {
	var errs []error
	if c.Client != nil {
		errs = append(errs, c.Client.Close())
	}
	for _, m := range c.Masters {
		errs = append(errs, m.Close())
	}
	if c.Embedded != nil && !c.shared {
		errs = append(errs, c.Embedded.Close())
	}
	return errors.Join(errs...)
}

// Store is the scheduler's store over these clients, as the store section
// says: its key prefix and, when set, min_replicas_ack; a Redlock store
// over Masters, a Redis store over Client.
func (c *Conn) Store() (*scheduler.Store, error) {
	opts := []scheduler.StoreOption{scheduler.WithKeyPrefix(c.store.KeyPrefix)}
	if c.Embedded != nil && c.Embedded.Lost() == "" {
		// Nothing but this process writes to it, and it began empty or
		// from the last state this process's predecessor wrote (every
		// answer waited for the disk): a job without state is new, not
		// lost, and its first instants run. A snapshot found damaged or
		// older is a loss, handled as Redis' (embedstore.MarkLost).
		opts = append(opts, scheduler.WithEphemeralStore())
	}
	if c.store.MinReplicasAck > 0 {
		opts = append(opts, scheduler.WithMinReplicasAck(c.store.MinReplicasAck, c.store.MinReplicasAckTimeout))
	}
	if c.Masters != nil {
		return scheduler.NewRedlockStore(c.Masters, opts...)
	}
	return scheduler.NewRedisStore(c.Client, opts...)
}

// NewScheduler returns a scheduler on this store, with the store section's
// max clock skew first, then opts.
func (c *Conn) NewScheduler(jobs []scheduler.Job, opts ...scheduler.Option) (*scheduler.Scheduler, error) {
	st, err := c.Store()
	if err != nil {
		return nil, err
	}
	return scheduler.New(st, jobs, append([]scheduler.Option{scheduler.WithMaxClockSkew(c.store.MaxClockSkew)}, opts...)...)
}

// NewControl returns the cluster-wide controls of this store.
func (c *Conn) NewControl() (*scheduler.Control, error) {
	st, err := c.Store()
	if err != nil {
		return nil, err
	}
	return st.Control(), nil
}

// Ping checks that the store answers: the server, or in redlock mode a
// majority of the masters.
func (c *Conn) Ping(ctx context.Context) error {
	if c.Mode != "redlock" {
		return c.Client.Ping(ctx).Err()
	}
	errs := make(chan error, len(c.Masters))
	for _, m := range c.Masters {
		go func() { errs <- m.Ping(ctx).Err() }()
	}
	ok, quorum := 0, len(c.Masters)/2+1
	var failed []error
	for range c.Masters {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		} else {
			ok++
		}
	}
	if ok < quorum {
		return fmt.Errorf("%d of %d redlock masters answered, %d needed: %w", ok, len(c.Masters), quorum, errors.Join(failed...))
	}
	return nil
}

// Client timeouts: a claim or renewal that takes longer than this is better
// retried (they are idempotent) than waited for.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 3 * time.Second
)

// Open connects to the store s names. It does not talk to Redis: a store
// that is down at start is retried by the scheduler, not fatal. It reads
// the TLS files s names. Errors never show a password.
//
// The embedded store (no URL) is opened here: with s.DataDir it loads the
// directory's state and locks it (embedstore.ErrLocked when another
// process has it); without, it lives in memory only.
func Open(s config.Store, opts ...Option) (*Conn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return open(s, "", 0, o)
}

// Option configures Open.
type Option func(*options)

type options struct{ log *slog.Logger }

// WithLogger sends the embedded store's persistence trouble to l.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// DefaultDataDir is the embedded store's data directory when the table
// names none: $STATE_DIRECTORY when set (systemd's StateDirectory=; the
// first of a colon-separated list), else "<table name>.data" beside the
// table file (solocron.yaml: solocron.data).
func DefaultDataDir(tablePath string, getenv func(string) string) string {
	if d := getenv("STATE_DIRECTORY"); d != "" {
		d, _, _ = strings.Cut(d, ":")
		return d
	}
	base := filepath.Base(tablePath)
	return filepath.Join(filepath.Dir(tablePath), strings.TrimSuffix(base, filepath.Ext(base))+".data")
}

// AdminClientName is the CLIENT SETNAME of the admin API's connections.
const AdminClientName = "solocron-admin"

// adminPoolSize bounds the admin API's connections to each server: reads
// queue behind each other, never behind or in front of a claim.
const adminPoolSize = 4

// OpenAdmin opens a second, separate connection to the store c was opened
// on, for the admin API's reads: its own pool of at most 4 connections per
// server, named "solocron-admin" (CLIENT LIST shows it), so that however
// many API requests arrive they never take a connection, or a place in a
// pipeline, from the scheduler's claims and renewals. The embedded store is
// shared: it lives in this process.
func (c *Conn) OpenAdmin() (*Conn, error) {
	if c.Embedded != nil {
		a := &Conn{store: c.store, Mode: c.Mode, Where: c.Where, Embedded: c.Embedded, shared: true}
		a.Client = embeddedClient(c.Embedded, AdminClientName, adminPoolSize)
		return a, nil
	}
	return open(c.store, AdminClientName, adminPoolSize, options{})
}

// open is Open, with a client name and a pool size per server when set.
func open(s config.Store, name string, pool int, o options) (*Conn, error) {
	// Redis Enterprise maintenance notifications are not used; their
	// endpoint detection would also resolve host names at construction.
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	conn := &Conn{store: s}
	switch {
	case s.URL == "" && (s.Mode == "" || s.Mode == "standalone"):
		st, err := embedstore.Open(embedstore.Options{Dir: s.DataDir, Logger: o.log})
		if err != nil {
			return nil, err
		}
		conn.Client = embeddedClient(st, name, pool)
		conn.Embedded, conn.Mode = st, "embedded"
		conn.Where = "embedded in-process store (one replica only), in memory only"
		if s.DataDir != "" {
			conn.Where = "embedded in-process store (one replica only), data in " + s.DataDir
		}
		return conn, nil
	case s.Mode == "" || s.Mode == "standalone":
		o, err := parseURL("store.url", s.URL, s.TLS)
		if err != nil {
			return nil, err
		}
		o.MaintNotificationsConfig = maint
		o.ClientName, o.PoolSize = name, pool
		conn.Client, conn.Mode, conn.Where = redis.NewClient(o), "standalone", s.Redacted().URL
		return conn, nil
	case s.Mode == "sentinel":
		fo := &redis.FailoverOptions{
			MasterName:       s.Sentinel.Master,
			SentinelAddrs:    s.Sentinel.Addrs,
			SentinelUsername: s.Sentinel.Username,
			SentinelPassword: s.Sentinel.Password,
		}
		useTLS := s.TLS != nil
		if s.URL != "" {
			o, err := redis.ParseURL(s.URL)
			if err != nil {
				return nil, fmt.Errorf("store.url: %v", redactErr(err, s.URL))
			}
			fo.Username, fo.Password, fo.DB = o.Username, o.Password, o.DB
			useTLS = useTLS || o.TLSConfig != nil
		}
		if useTLS {
			// One configuration for the sentinels and the data nodes: each
			// connection verifies the host it dials unless server_name says
			// otherwise.
			tc, err := tlsConfig(s.TLS, "")
			if err != nil {
				return nil, err
			}
			fo.TLSConfig = tc
		}
		fo.ContextTimeoutEnabled = true
		fo.ClientName, fo.PoolSize = name, pool
		setTimeouts(&fo.DialTimeout, &fo.ReadTimeout, &fo.WriteTimeout)
		conn.Client, conn.Mode = redis.NewFailoverClient(fo), "sentinel"
		conn.Where = fmt.Sprintf("sentinel master %q via %v", s.Sentinel.Master, s.Sentinel.Addrs)
		return conn, nil
	case s.Mode == "cluster":
		co := &redis.ClusterOptions{Addrs: s.Cluster.Addrs, ContextTimeoutEnabled: true, MaintNotificationsConfig: maint}
		useTLS := s.TLS != nil
		if s.URL != "" {
			o, err := redis.ParseURL(s.URL)
			if err != nil {
				return nil, fmt.Errorf("store.url: %v", redactErr(err, s.URL))
			}
			co.Username, co.Password = o.Username, o.Password
			useTLS = useTLS || o.TLSConfig != nil
		}
		if useTLS {
			tc, err := tlsConfig(s.TLS, "")
			if err != nil {
				return nil, err
			}
			co.TLSConfig = tc
		}
		setTimeouts(&co.DialTimeout, &co.ReadTimeout, &co.WriteTimeout)
		co.ClientName, co.PoolSize = name, pool
		conn.Client, conn.Mode, conn.Where = redis.NewClusterClient(co), "cluster", fmt.Sprintf("cluster %v", s.Cluster.Addrs)
		return conn, nil
	case s.Mode == "redlock":
		var where []string
		for i, u := range s.Redlock.URLs {
			o, err := parseURL(fmt.Sprintf("store.redlock.urls[%d]", i), u, s.TLS)
			if err != nil {
				_ = conn.Close()
				return nil, err
			}
			// Redlock asks every master once per operation and moves on: a
			// dead master is outvoted, not retried.
			o.MaxRetries = -1
			o.MaintNotificationsConfig = maint
			o.ClientName, o.PoolSize = name, pool
			conn.Masters = append(conn.Masters, redis.NewClient(o))
			where = append(where, config.Store{URL: u}.Redacted().URL)
		}
		conn.Mode, conn.Where = "redlock", fmt.Sprintf("redlock over %d masters %v", len(where), where)
		return conn, nil
	}
	return nil, fmt.Errorf("store.mode: unknown mode %q", s.Mode)
}

// embeddedClient is a client of the embedded store, over in-process pipes.
func embeddedClient(st *embedstore.Store, name string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "embedded:0", Dialer: st.DialContext, ContextTimeoutEnabled: true,
		ClientName: name, PoolSize: pool,
		// A dial fails only once the store is closed: not worth retrying.
		DialerRetries:            1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// parseURL reads a redis:// or rediss:// URL into client options, with the
// tls section applied to a rediss:// one.
func parseURL(field, raw string, t *config.TLS) (*redis.Options, error) {
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", field, redactErr(err, raw))
	}
	if o.TLSConfig != nil {
		host := ""
		if u, err := url.Parse(raw); err == nil {
			host = u.Hostname()
		}
		if o.TLSConfig, err = tlsConfig(t, host); err != nil {
			return nil, err
		}
	}
	o.ContextTimeoutEnabled = true
	setTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout)
	return o, nil
}

// tlsConfig builds the client TLS configuration from the tls section (nil:
// system roots, no client certificate). host is the name to verify when
// server_name does not say; "" lets each connection verify the host it
// dials.
func tlsConfig(t *config.TLS, host string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if t == nil {
		return tc, nil
	}
	if t.ServerName != "" {
		tc.ServerName = t.ServerName
	}
	tc.InsecureSkipVerify = t.InsecureSkipVerify
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store.tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			// The error names the files, never their contents.
			return nil, fmt.Errorf("store.tls.cert_file, key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func setTimeouts(dial, read, write *time.Duration) {
	if *dial == 0 {
		*dial = dialTimeout
	}
	if *read == 0 {
		*read = ioTimeout
	}
	if *write == 0 {
		*write = ioTimeout
	}
}

// redactErr keeps a URL's password out of a parse error.
func redactErr(err error, raw string) error {
	red := config.Store{URL: raw}.Redacted().URL
	if red == raw && !strings.Contains(err.Error(), "@") {
		return err
	}
	return errors.New("invalid URL " + red)
}
