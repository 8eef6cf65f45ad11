// Package scheduler runs a job table on many replicas of a service, each run
// started at most once across them: at every scheduled instant the replicas
// race for the run in Redis, one wins and runs it under a lease its watchdog
// renews, the others find it decided.
//
//	store, err := scheduler.NewRedisStore(rdb)
//	...
//	s, err := scheduler.New(store, []scheduler.Job{{
//		Name:     "lottery",
//		Schedule: "0 0 12 * * *",
//		Handler:  jobs.Func(draw),
//	}}, scheduler.WithReplicaID("web-1"))
//	...
//	err = s.Run(ctx) // until ctx is done
//
// # The safety model
//
// A claim is one Lua script, one round trip: it checks pause, de-duplicates
// the run, takes a concurrency slot, issues a fencing token and records the
// decision, with Redis' clock. Every renewal and close checks the owner's
// token. A finished run's record is kept long enough that a replica whose
// clock lags cannot claim it again.
//
// Each heartbeat also reads Redis' clock (in the same round trip) and the
// replica carries it forward on its monotonic clock. A replica whose wall
// clock is off from Redis' by more than the max clock skew plus a second (a
// step after a VM resumed, an operator's mistake) claims no scheduled or
// catch-up runs until the two agree again, logging an ERROR when it stops
// and a WARN when it resumes; the winner of a run claimed ahead starts it at
// its instant on Redis' clock, placed by the most certain of the recent
// readings (the one read in the quickest round trip, allowing for its age),
// so a reading taken while Redis was busy does not start runs early.
//
// A lease can be lost at any moment without its holder knowing: the holder
// may be frozen (GC, VM stall), or Redis may fail over. The watchdog cancels
// the job as soon as no renewal succeeded within the lease, measured from
// when the last good renewal was sent; but a process frozen past that point
// cannot know. That is what the fencing token is for: it rises strictly per
// job, and a downstream store that refuses writes with a token lower than one
// it has seen makes a stale holder harmless.
//
// # Stores
//
// NewRedisStore takes one Redis deployment: a *redis.Client for a standalone server,
// the client of redis.NewFailoverClient for a Sentinel-managed primary, or a
// *redis.ClusterClient for Redis Cluster, where every key of a job shares the
// hash tag {<job>} whatever the table says (a pool's slots are a key of
// their own, taken apart on Cluster: pool.go), so each job
// script touches one slot and a batch of claims is one pipeline per node. Replication in all of these is asynchronous: a
// failover can lose a claim and let a run start twice, unless
// WithMinReplicasAck makes each claim (and renewal) count only once enough
// replicas acknowledged it; one they did not is taken back and the run is
// not started.
//
// NewRedlockStore takes N independent masters and combines their answers by
// majority: a run starts when a quorum started it within the lease's
// validity, a lease lives while a quorum renews it. It coordinates mutexes
// only (concurrency 1), assumes the masters' clocks run at about the same
// rate, and its fencing tokens rise in practice but not provably (each
// master issues its own).
//
// docs/deployment.md in the repository says what each mode guarantees and
// what it cannot promise.
//
// # Notifications
//
// WithNotifications names webhook targets (package notify); a Job's Notify
// lists those told of its events: failed, timed_out, lease_lost, missed,
// recovered (the first success after failures) and paused. The script that
// closes a run queues its event in the job's keys in the same round trip;
// replicas take due deliveries with a lease and POST them from their own
// goroutines, so a delivery outlives the replica that was sending it. A
// crash can cause a second POST, always with the same Solocron-Delivery
// key ("<run id>:<event>"), which receivers de-duplicate on. Redlock
// refuses notifications.
//
// # One run, from timer to record
//
// The path of one scheduled run through the files, in order (a file met
// again is named again):
//
//  1. scheduler.go: Run starts the loops below (dispatcher, renewer, closer,
//     heartbeat).
//  2. dispatch.go: dispatch sleeps until the earliest instant (fire, from
//     jobstate.go) less the claim-ahead, and puts every due run in one batch.
//  3. claim.go: newClaim makes the request (its run id, from jobstate.go;
//     the job's settings as values, the job state's store.JobSpec); claim
//     sends the batch to the store.
//  4. The store (package scheduler/internal/store, through its Backend
//     interface): one call decides the whole batch (pool slots first on
//     Redis Cluster, then claim.lua per hash slot, one pipeline) and
//     answers per run. Its package documentation follows the call inside.
//  5. claim.go: handle reads the answer: started goes on to run.go; queued
//     to wait.go; decided, missed or late to misses.go and the retry paths.
//  6. run.go: startAt/execute opens the span (telemetry.go) and the run's
//     lease (runLease), kept alive by lockprovider.KeepAlive; each renewal
//     goes through renewer.go, which batches them into the store's Renew.
//  7. gate.go: a run claimed ahead waits for its instant.
//  8. run.go: the attempts call the job (package jobs); a retry takes a new
//     fencing token first (the store's Attempt); classify names the outcome.
//  9. run.go: closeRun hands the end to the closer, which batches it into
//     the store's Complete: the record, the history and the statistics.
//
// A run that succeeds on its first attempt visits 8 files of this package
// (scheduler, dispatch, jobstate, claim, run, telemetry, renewer, gate) and
// the store three times (claim, renew, complete; four with a retry's
// attempt); then lockprovider/keepalive.go and the job's code in package
// jobs. Inside the store each call visits store.go, protocol.go,
// transport.go and its script with the parts it uses, from lua/parts/
// (storepool.go too for a pooled job on Cluster).
//
// # Where things are
//
// One file per concept, in the order a run meets them: dispatch.go (the
// tick loop), claim.go (claims in batches, and what each answer means),
// wait.go (runs queued for a slot), run.go (one started run: its lease,
// renewed through renewer.go, its attempts, its close), gate.go (runs
// claimed ahead wait for their instant), heartbeat.go (each job's state in
// Redis, every sync interval), misses.go (missed runs, catch-up), clock.go
// (this replica's clock against Redis'), backfill.go (Control.Backfill, and
// the beat that takes a backfill's instants). Beneath them, the store
// (scheduler/internal/store): its Backend interface is what the engine asks
// of a store, answered for one Redis deployment (Redis) or for N masters by
// majority (its Redlock combiner), with the protocol, the transport and the
// Lua scripts. The store reads no engine state and imports nothing of this
// package: a job reaches it as a store.JobSpec, its settings as values
// built with the job state (jobstate.go), in every request, and a claim as
// the store.StoreClaim inside the engine's claimReq (claim.go); the public
// types of its answers (Run, Status, Overview, Backfill, ...) are aliased
// here (types.go). Around them: scheduler.go (New,
// Reload, Run), job.go and jobstate.go (the table), options.go,
// pool.go (pools shared by jobs: where their keys are, their use),
// control.go and statuses.go (Control, with the store's side in
// storecontrol.go), overview.go,
// replicas.go, notify.go, telemetry.go and jobmetrics.go.
package scheduler
