// Package store is Solocron's store: the shared state of a cluster of
// scheduler replicas, kept in Redis. The engine (package scheduler) asks it
// through the Backend interface (backend.go); it reads no engine state and
// imports nothing of the engine: a job reaches it as a JobSpec, its
// settings as values, in every request, and what it learns goes back in
// the answers, whose public types (Run, Status, Overview, Backfill, ...,
// types.go) package scheduler names as aliases.
//
// Two Backends: Redis, one deployment (standalone, Sentinel or Cluster),
// where every operation is one atomic script per job or per batch of runs;
// and the Redlock combiner (redlock.go), N independent masters, which runs
// the same scripts on every master (a Redis each) and combines their
// answers by majority.
//
// # One call, from request to answer
//
// A claim of a batch of runs (Claim, store.go):
//
//  1. storepool.go: on Redis Cluster, a pooled job's pool slot first
//     (pool.lua, on the pool's node).
//  2. protocol.go: the script's arguments (ClaimHeadArgs, AppendClaim),
//     the one place that spells the protocol of every script.
//  3. transport.go: the calls grouped per hash slot, one pipeline (NOSCRIPT
//     reloads, WAIT for min_replicas_ack, batches of at most MaxBatch).
//  4. lua/claim.lua, after the parts of lua/parts/ it uses (protocol.go's script):
//     pause, de-duplication, the slot, the fencing token and the record,
//     on Redis' clock.
//  5. protocol.go: the answers decoded (decodeClaim, through transport.go's
//     scatterRows).
//
// Renew, Attempt and Complete take the same path with their own encoder
// (AppendRenew, AppendComplete) and script (renew.lua, attempt.lua,
// complete.lua). Control's reads and writes are in storecontrol.go,
// storestatus.go, storeoverview.go, storebackfill.go, storereplicas.go,
// storestats.go and storenotify.go.
package store
