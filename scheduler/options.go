package scheduler

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Option configures New. What concerns the store (its key prefix,
// acknowledgements, timeouts) is a StoreOption of its constructor.
type Option func(*config)

type config struct {
	replicaID     string
	prefix        string
	pools         *store.PoolPlace // the Store's (stores.go)
	skew          time.Duration
	clock         Clock
	logger        *slog.Logger
	tracer        trace.TracerProvider
	meter         metric.MeterProvider
	propagator    propagation.TextMapPropagator
	shutdownGrace time.Duration
	closeTimeout  time.Duration
	syncInterval  time.Duration
	manualTTL     time.Duration
	waiterTTL     time.Duration
	pollInterval  time.Duration
	claimAhead    time.Duration // how long ahead claims go out at least
	maxAhead      time.Duration // and at most (Redis refuses earlier ones)
	aheadSet      bool

	// The store's (StoreOption), set by Store.open.
	minAck         int
	ackTimeout     time.Duration
	redlockTimeout time.Duration
	ephemeral      bool

	version string              // WithVersion, in replicas.go
	redact  func(string) string // see WithRedactor

	notify notifyConfig // see WithNotifications

	// jitter draws the random part of a backoff in [0, n): math/rand's by
	// default, whatever key says. key names the draw (a run and its
	// attempt, a claim's first run): the seeded simulation hashes it with
	// its seed and the fake time, so that a seed replays exactly
	// (scheduler/internal/sim/replay.go) however the replica's goroutines
	// interleave.
	jitter func(key string, n time.Duration) time.Duration
}

// WithReplicaID names this replica in run records and logs. Default
// "<hostname>-<pid>".
func WithReplicaID(id string) Option { return func(c *config) { c.replicaID = id } }

// WithMaxClockSkew sets the largest clock difference between replicas (and
// Redis) under which every run still starts at most once. Default 2s.
func WithMaxClockSkew(d time.Duration) Option { return func(c *config) { c.skew = d } }

// WithClock sets the clock scheduled instants are computed from. Default:
// the system clock.
func WithClock(clk Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithTracerProvider sets where spans go. Default: the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp != nil {
			c.tracer = tp
		}
	}
}

// WithPropagator sets how a run's trace context is handed to its job
// (traceparent and tracestate headers for HTTP jobs, TRACEPARENT and
// TRACESTATE for command jobs, jobs.TraceContext for Go functions).
// Default: the global propagator (otel.SetTextMapPropagator), which sends
// nothing until the program sets one. Nothing is sent either for a run
// whose span is not sampled into a valid trace (no TracerProvider).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) {
		if p != nil {
			c.propagator = p
		}
	}
}

// WithMeterProvider sets where metrics go. Default: the global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp != nil {
			c.meter = mp
		}
	}
}

// WithShutdownGrace sets how long Run, once its context is done, lets
// running jobs finish before cancelling them. Default 30s.
func WithShutdownGrace(d time.Duration) Option { return func(c *config) { c.shutdownGrace = d } }

// maxDefaultAhead bounds the default claim ahead (see WithClaimAhead).
const maxDefaultAhead = 500 * time.Millisecond

// WithClaimAhead sets how long before a run's instant this replica claims
// it. The winner then starts the job at the instant itself, so a burst of
// runs sharing one instant — thousands of jobs at the top of a minute —
// starts on time however long Redis takes to decide them all. A claim made
// ahead only ever starts a run; if the job is paused or its slots are busy,
// the run is decided at its instant, as without claiming ahead. 0 claims
// at the instant. It may not exceed the max clock skew (Redis refuses
// earlier claims).
//
// By default a replica claims min(250ms, max clock skew / 2) ahead, and
// further ahead — up to min(500ms, max clock skew / 2) — when its batches
// take longer to decide: twice the round trip of its last big batch
// (slowly forgotten), so ten thousand runs that share an instant are
// decided before it. Never more than half a second: a job that fires every
// second must find its previous run closed when its next one is claimed,
// or that claim is answered "not yet" and made again at the instant. Set a
// value to claim exactly that far ahead. The further ahead, the longer a
// replica that dies between claim and instant holds a run it will not
// start (until its lease runs out and the run is closed lease_lost).
func WithClaimAhead(d time.Duration) Option {
	return func(c *config) { c.claimAhead, c.aheadSet = d, true }
}

// WithSyncInterval sets the replica's heartbeat period: how often it checks
// each job's state in Redis (lost data, pause, dead holders, manual runs).
// Default 1s.
func WithSyncInterval(d time.Duration) Option { return func(c *config) { c.syncInterval = d } }

func newConfig(opts []Option) (config, error) {
	host, _ := os.Hostname()
	if host == "" {
		host = "replica"
	}
	c := config{
		replicaID:     fmt.Sprintf("%s-%d", host, os.Getpid()),
		prefix:        "solocron",
		skew:          2 * time.Second,
		clock:         systemClock{},
		logger:        slog.Default(),
		tracer:        otel.GetTracerProvider(),
		meter:         otel.GetMeterProvider(),
		propagator:    otel.GetTextMapPropagator(),
		shutdownGrace: 30 * time.Second,
		closeTimeout:  5 * time.Second,
		syncInterval:  time.Second,
		manualTTL:     time.Hour,
		waiterTTL:     3 * time.Second,
		pollInterval:  100 * time.Millisecond,
		jitter:        func(_ string, n time.Duration) time.Duration { return rand.N(n) },
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if !c.aheadSet {
		c.claimAhead, c.maxAhead = min(250*time.Millisecond, c.skew/2), min(maxDefaultAhead, c.skew/2)
	} else {
		c.maxAhead = c.claimAhead
	}
	switch {
	case c.replicaID == "" || len(c.replicaID) > 256:
		return c, fmt.Errorf("scheduler: replica id must be 1 to 256 bytes (got %q)", c.replicaID)
	case c.skew < 0:
		return c, fmt.Errorf("scheduler: negative max clock skew %s", c.skew)
	case c.shutdownGrace < 0:
		return c, fmt.Errorf("scheduler: negative shutdown grace %s", c.shutdownGrace)
	case c.syncInterval < 10*time.Millisecond:
		return c, fmt.Errorf("scheduler: sync interval %s is below 10ms", c.syncInterval)
	case c.claimAhead < 0 || c.claimAhead > c.skew:
		return c, fmt.Errorf("scheduler: claim ahead %s must be between 0 and the max clock skew %s", c.claimAhead, c.skew)
	}
	if err := c.notify.check(); err != nil {
		return c, err
	}
	return c, nil
}
