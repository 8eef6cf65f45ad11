package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Store is where the replicas of one cluster coordinate: one Redis
// deployment (NewRedisStore) or independent Redlock masters
// (NewRedlockStore), with what every replica and Control must agree on
// about it (its key prefix) and how to talk to it (acknowledgements,
// timeouts). Hand it to New for a replica, or ask it for Control. A Store
// is safe for concurrent use and may back many schedulers (one per
// replica, in tests) and controls.
type Store struct {
	clients []redis.UniversalClient // one, or Redlock's masters
	redlock bool
	cfg     storeConfig
}

// StoreOption configures NewRedisStore and NewRedlockStore.
type StoreOption func(*storeConfig)

type storeConfig struct {
	prefix         string
	minAck         int
	ackTimeout     time.Duration
	redlockTimeout time.Duration
	pools          *store.PoolPlace
	ephemeral      bool
}

// WithKeyPrefix sets the prefix of every Redis key. Every replica and
// Control of a cluster must use the same. Default "solocron".
func WithKeyPrefix(p string) StoreOption { return func(c *storeConfig) { c.prefix = p } }

// WithMinReplicasAck makes claims, admissions and lease renewals count only
// once n replicas of the Redis primary acknowledged them (WAIT n timeout),
// so that a failover to one of those replicas keeps them. A claim too few
// replicas acknowledged is taken back and its run not started (fail
// closed); it is retried until the run's starting deadline. A renewal too
// few acknowledged counts as failed. A run's end (its record closed, its
// slot freed) is sent again until enough replicas have it, for up to the
// close timeout, so that a failover does not leave the slot held until
// the lease runs out. timeout 0 means 1s; it is also capped
// at half of what is left of each call's deadline. Default: off (n = 0).
// For NewRedisStore only (a *redis.Client or *redis.ClusterClient);
// Redlock's masters have no replicas to wait for. Control does not wait:
// it writes nothing a run depends on.
func WithMinReplicasAck(n int, timeout time.Duration) StoreOption {
	return func(c *storeConfig) { c.minAck, c.ackTimeout = n, timeout }
}

// WithRedlockTimeout bounds each call to one Redlock master: a master that
// has not answered by then counts as failed. Default 1s. For
// NewRedlockStore only.
func WithRedlockTimeout(d time.Duration) StoreOption {
	return func(c *storeConfig) { c.redlockTimeout = d }
}

// WithEphemeralStore says that the Redis behind the store lives and dies
// with this process — an in-process store such as miniredis, the daemon's
// embedded default: it began empty, nothing else writes to it, and it
// cannot lose data while the process runs. A job without state in it is
// then a new job, and its first instants run. Without this option a job
// without state may be one whose state Redis lost, and its runs due within
// max clock skew + claim ahead of that moment are recorded missed (they may
// have run before the loss). For NewRedisStore only; never for a Redis
// that outlives the process or that other processes share.
func WithEphemeralStore() StoreOption { return func(c *storeConfig) { c.ephemeral = true } }

func newStoreConfig(opts []StoreOption) (storeConfig, error) {
	c := storeConfig{prefix: "solocron", pools: &store.PoolPlace{}}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch {
	case CheckKeyPrefix(c.prefix) != nil:
		return c, fmt.Errorf("scheduler: key prefix: %w", CheckKeyPrefix(c.prefix))
	case c.minAck < 0:
		return c, fmt.Errorf("scheduler: negative min replicas ack %d", c.minAck)
	case c.ackTimeout < 0:
		return c, fmt.Errorf("scheduler: negative replicas ack timeout %s", c.ackTimeout)
	case c.redlockTimeout < 0:
		return c, fmt.Errorf("scheduler: negative redlock timeout %s", c.redlockTimeout)
	}
	if c.ackTimeout == 0 {
		c.ackTimeout = time.Second
	}
	return c, nil
}

// NewRedisStore returns the store of one Redis deployment: a *redis.Client
// for a standalone server or (from redis.NewFailoverClient) a
// Sentinel-managed primary, or a *redis.ClusterClient for Redis Cluster,
// where all keys of a job share one hash slot. The client should be
// dedicated to the scheduler (not shared with the program's other Redis
// work) so that claims and renewals never queue behind it; give it
// ContextTimeoutEnabled.
//
// Options and defaults: WithKeyPrefix("solocron"), WithMinReplicasAck(0:
// off).
func NewRedisStore(client redis.UniversalClient, opts ...StoreOption) (*Store, error) {
	if client == nil {
		return nil, errors.New("scheduler: nil Redis client")
	}
	cfg, err := newStoreConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.redlockTimeout != 0 {
		return nil, errors.New("scheduler: WithRedlockTimeout is for NewRedlockStore")
	}
	if _, err := store.NewRedisConn(client, cfg.minAck, cfg.ackTimeout); err != nil {
		return nil, err
	}
	return &Store{clients: []redis.UniversalClient{client}, cfg: cfg}, nil
}

// NewRedlockStore returns the store of independent Redis masters — at
// least three, an odd number in practice — that replicas coordinate
// through by majority, in the manner of Redlock. Each client is one master
// (a *redis.Client; not a cluster), dedicated to the scheduler, with
// ContextTimeoutEnabled and, ideally, MaxRetries: -1: a dead master is
// skipped, not retried.
//
// Redlock mode coordinates mutexes only: every job must have concurrency 1,
// and none a pool (ValidateRedlockTable, which New and Reload apply).
// Control's writes (pause, resume, trigger) succeed when a quorum of
// masters took them. What it cannot promise is in the package
// documentation.
//
// Options and defaults: WithKeyPrefix("solocron"), WithRedlockTimeout(1s):
// the bound of each call to one master.
func NewRedlockStore(clients []redis.UniversalClient, opts ...StoreOption) (*Store, error) {
	cfg, err := newStoreConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.ephemeral {
		return nil, errors.New("scheduler: WithEphemeralStore is not for Redlock: its masters outlive a replica")
	}
	if cfg.minAck != 0 {
		return nil, errors.New("scheduler: WithMinReplicasAck is not for Redlock: its masters have no replicas; a quorum of masters is its acknowledgement")
	}
	st := &Store{clients: clients, redlock: true, cfg: cfg}
	c, err := newConfig(nil)
	if err != nil {
		return nil, err
	}
	if _, err := st.open(c, false); err != nil {
		return nil, err
	}
	return st, nil
}

// Control returns the cluster-wide controls (pause, trigger, status...) of
// this store. They need no running replica.
func (st *Store) Control() *Control {
	c, _ := newConfig(nil) // the defaults are valid
	// Controls write nothing a run depends on: they wait for no replicas.
	b, err := st.open(c, false)
	if err != nil {
		panic(err) // checked by the store's constructor
	}
	return &Control{store: b}
}

// open returns the backend of one scheduler (or Control) with cfg, and
// the store's options; acks: it waits for replicas (WithMinReplicasAck).
// Each gets its own: a Redlock combinator keeps what it learns per replica.
func (st *Store) open(cfg config, acks bool) (store.Backend, error) {
	cfg.prefix, cfg.pools = st.cfg.prefix, st.cfg.pools
	cfg.ackTimeout, cfg.redlockTimeout = st.cfg.ackTimeout, st.cfg.redlockTimeout
	cfg.ephemeral = st.cfg.ephemeral
	cfg.minAck = 0
	if acks {
		cfg.minAck = st.cfg.minAck
	}
	if st.redlock {
		return store.NewRedlock(st.clients, cfg.backend())
	}
	return store.NewRedis(st.clients[0], cfg.backend())
}

// backend is what the store reads of cfg.
func (c config) backend() store.BackendConfig {
	return store.BackendConfig{Prefix: c.prefix, Pools: c.pools, Skew: c.skew, MaxAhead: c.maxAhead, MinAck: c.minAck,
		AckTimeout: c.ackTimeout, RedlockTimeout: c.redlockTimeout, Ephemeral: c.ephemeral}
}
