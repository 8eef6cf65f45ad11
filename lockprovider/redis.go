package lockprovider

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/luascript"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script builds a redis.Script with internal/luascript, the loader the
// scheduler uses too: fence.lua, then lua/common.lua and the given shared
// parts, then the named script — or, when it has a line "-- @shared",
// fence.lua and those parts there: a script's fast path above that line
// does not pay for defining functions it never calls (every EVALSHA runs
// the whole chunk, and each local function defined is a closure made
// again). redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT, so
// a SCRIPT FLUSH or a restarted server costs one extra round trip once,
// never an error.
func script(parts ...string) *redis.Script {
	return redis.NewScript(luascript.Source(luaFiles, "lua", append([]string{"common"}, parts...)...))
}

// bare builds a redis.Script from the named script alone: for one that
// needs nothing shared.
func bare(name string) *redis.Script { return redis.NewScript(lua(name)) }

func lua(name string) string { return luascript.Read(luaFiles, "lua", name) }

var (
	mutexAcquire     = script("mutex_acquire")
	mutexRefresh     = script("mutex_refresh")
	mutexRelease     = bare("mutex_release")
	semAcquire       = script("semaphore_common", "semaphore_acquire")
	semRefresh       = script("semaphore_common", "semaphore_refresh")
	semRelease       = script("semaphore_common", "semaphore_release")
	reentrantAcquire = script("reentrant_acquire")
	reentrantRefresh = script("reentrant_refresh")
	reentrantRelease = script("reentrant_release")
	rwAcquire        = script("rw_common", "rw_acquire")
	rwRefresh        = script("rw_common", "rw_refresh")
	rwRelease        = script("rw_common", "rw_release")
)

// Client is the narrow part of a go-redis client this package uses. Every
// go-redis client satisfies it: *redis.Client (standalone and Sentinel),
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient. Wrapping it is
// the way to inject faults in tests.
type Client = redis.Scripter

// Redis hands out mutexes, semaphores, reentrant mutexes and read-write locks
// kept in one Redis deployment. It is safe for concurrent use.
type Redis struct {
	client Client
	cfg    config
}

type config struct {
	prefix         string
	fenceRetention time.Duration
	waiterTTL      time.Duration
	callTimeout    time.Duration
}

// Option configures NewRedis and NewRedlock.
type Option func(*config)

// WithPrefix sets the prefix of every key. Default "lock". It must not
// contain '{' or '}'.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithFenceRetention sets how long a name's fencing counter is kept after its
// last acquisition. Default 7 days. Fencing tokens keep rising past the
// counter's expiry because they are anchored to server time; the counter
// only guards against the server clock stepping back.
func WithFenceRetention(d time.Duration) Option { return func(c *config) { c.fenceRetention = d } }

// WithWaiterTTL sets how long a semaphore waiter keeps its place in the queue
// without polling. Default 2s. Acquire polls at least three times as often.
func WithWaiterTTL(d time.Duration) Option { return func(c *config) { c.waiterTTL = d } }

// WithCallTimeout sets Redlock's deadline for each master's answer. Default
// TTL/20, between 10ms and 500ms.
func WithCallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

func newConfig(opts []Option) (config, error) {
	c := config{prefix: "lock", fenceRetention: 7 * 24 * time.Hour, waiterTTL: 2 * time.Second}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch {
	case c.prefix == "" || strings.ContainsAny(c.prefix, "{}"):
		return c, fmt.Errorf("%w: prefix %q (must be non-empty, without '{' or '}')", ErrInvalidName, c.prefix)
	case c.fenceRetention < time.Second:
		return c, fmt.Errorf("lockprovider: fence retention %s is below 1s", c.fenceRetention)
	case c.waiterTTL < 10*time.Millisecond:
		return c, fmt.Errorf("lockprovider: waiter ttl %s is below 10ms", c.waiterTTL)
	case c.callTimeout < 0:
		return c, fmt.Errorf("lockprovider: negative call timeout %s", c.callTimeout)
	}
	return c, nil
}

// NewRedis returns a lock provider over client.
//
// Options and their defaults: WithPrefix("lock"), WithFenceRetention(7 days),
// WithWaiterTTL(2s).
//
// Give the client ContextTimeoutEnabled: without it go-redis ignores context
// deadlines and a hung call lasts until the socket's read timeout. Leases do
// not depend on it — KeepAlive declares a lease lost on its own clock — but
// callers waiting on a hung call do.
func NewRedis(client Client, opts ...Option) (*Redis, error) {
	if client == nil {
		return nil, errors.New("lockprovider: nil client")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Redis{client: client, cfg: cfg}, nil
}

// key returns "<prefix>:{<name>}:<kind>". Every key of one primitive carries
// the same hash tag, so they live in one Redis Cluster slot and one script
// may touch them all.
func (r *Redis) key(name, kind string) string {
	return r.cfg.prefix + ":{" + name + "}:" + kind
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "{}") {
		return fmt.Errorf("%w: %q (must be non-empty, without '{' or '}')", ErrInvalidName, name)
	}
	return nil
}

func ms(d time.Duration) int64 {
	n := d.Milliseconds()
	if n < 1 {
		n = 1
	}
	return n
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("lockprovider: ttl %s is below 1ms", ttl)
	}
	return nil
}

// newToken returns a random owner token (128 bits).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func isLost(err error) bool { return errors.Is(err, ErrLeaseLost) }

// ints reads a script's array reply of integers.
func ints(v any, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("lockprovider: unexpected script reply %T", v)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		n, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("lockprovider: unexpected script reply element %T", x)
		}
		out[i] = n
	}
	return out, nil
}

// cleanup gives up, with its own short deadline, a lock that an interrupted
// acquire may have taken: the caller's context is usually done by then.
func cleanup(release func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = release(ctx)
}
