// Package lockprovider offers locks, leases and semaphores kept in Redis,
// built for code that runs as many replicas and must not do the same work
// twice at the same time.
//
// # The safety model, plainly
//
// A Redis lock is a lease: it holds for a TTL unless renewed, and it can be
// lost at any moment — Redis may expire it while the holder is paused by the
// garbage collector, stopped by a debugger or a VM stall, or cut off from
// Redis. No client library can prevent that. What this package gives you:
//
//   - Every operation is one atomic Lua script, one round trip: acquire,
//     refresh and release compare the owner token on the server. Nothing is
//     a bare SET NX, EXPIRE or DEL, so a holder can never extend or delete a
//     lock that has passed to someone else, and a refresh racing a release
//     never resurrects the key.
//   - Acquire is idempotent for the same owner token: go-redis retries a
//     command that timed out, and the retry finds our own lock instead of
//     reporting it taken.
//   - Expiry of semaphore slots and read locks is scored on the server's TIME,
//     never on a client's clock.
//   - Each lease knows its own deadline (Lease.Until) on the local monotonic
//     clock: the send time of the last successful grant or renewal plus the
//     TTL, minus a drift margin. Redis starts the TTL when it receives the
//     request, after it was sent, so a holder that stops at Until stops
//     before Redis can give the lease to anyone else. KeepAlive renews every
//     TTL/3 and cancels a context, with cause ErrLeaseLost, when the lease is
//     lost — on its own timer, even if a renewal call hangs.
//   - Every grant carries a fencing token that strictly increases per name.
//     This is what makes the whole thing safe: pass the token with every
//     write the lease protects, and have the store reject a write whose token
//     is lower than one it has already accepted. A holder that lost its lease
//     without knowing it (it was paused) then cannot do harm.
//
// Fencing tokens are the Redis server's TIME in microseconds, bumped past the
// last token issued for the name. Anchoring them to time keeps them rising
// even when Redis forgets the counter: a restart without persistence, a
// failover to a replica that missed writes, FLUSHALL. The guarantee needs the
// server clock not to step back by more than the time between acquisitions.
// It is the scheduler's rule too, written once (internal/fencing).
//
// All keys of one primitive share a Redis Cluster hash tag,
// "<prefix>:{<name>}:<kind>", so every primitive works on standalone Redis,
// Sentinel and Cluster. Names must be non-empty and must not contain '{' or
// '}'. Memory is bounded: every key expires with the last lease it holds; the
// fencing counter, one per name, lives on for WithFenceRetention (default 7
// days) after its last use. The Mutex is kept inside that counter, so that
// an acquire+release costs Redis as few calls as a plain SET NX lock.
//
// # Which primitive
//
//   - Mutex: one holder at a time. The default choice.
//   - Semaphore: up to N holders at once, each with its own lease; a holder
//     that dies frees its slot within its TTL. Waiting acquirers are
//     admitted first come, first served. All holders must agree on N.
//   - ReentrantMutex: a mutex its owner may take again while holding it, as
//     Redisson's RLock; the owner is a string you choose.
//   - RWMutex: many readers, each with its own lease, or one writer, in a
//     single hash key. A waiting writer holds back new readers.
//   - Redlock: a mutex over N independent masters (a majority must grant it).
//     Read its documentation for what it cannot guarantee. Mutex only.
//
// Each of them is a Locker: TryAcquire tries once; Acquire retries with a
// RetryStrategy (NoRetry, LinearBackoff, ExponentialBackoff with jitter,
// LimitRetry) until the context is done.
//
// # Errors
//
// Losing a race is an outcome, not a failure: TryAcquire returns
// ErrNotAcquired. ErrLeaseLost says a lease is gone. Store failures are
// returned wrapped, as they came from go-redis. Redlock returns a
// *QuorumError when too few masters answered. Invalid names and prefixes
// wrap ErrInvalidName; semaphore holders that disagree on the limit get an
// error wrapping ErrLimitMismatch.
//
// # Clients
//
// The package needs only go-redis's Scripter interface (Client), which every
// go-redis client satisfies. Give the client ContextTimeoutEnabled so that
// calls honour their context deadlines. Scripts are run with EVALSHA and
// reloaded transparently after SCRIPT FLUSH or a restart (NOSCRIPT).
//
// # Its place, and where things are
//
// lockprovider is a general-purpose lock library for code that runs as many
// replicas. The scheduler does not take its runs through it — it claims them
// with scripts of its own — but shares its design: the same fencing tokens
// (internal/fencing), the same Redlock quorum and drift (internal/redlock),
// and Lease and KeepAlive for its run leases (its claims are a LeaseStore).
// redis.go holds the provider, its options, keys and script loading;
// mutex.go, semaphore.go, reentrant.go and rwmutex.go one primitive each,
// with their scripts in lua/ (lua/common.lua: the name's fencing counter,
// which also holds the Mutex); redlock.go the Redlock mutex; lease.go the
// Lease every primitive hands out and the LeaseStore behind it;
// keepalive.go renewal and the loss deadline; retry.go Locker, the retry
// strategies and the retry loop; errors.go the errors.
package lockprovider
