// Package simhook is the seam between the engine and its simulation
// (scheduler/internal/sim): the few engine internals the simulation needs
// and package scheduler does not export. Package scheduler fills Engine in
// its init (scheduler/simhook.go); being internal to scheduler/, none of
// it is API.
//
// What the simulation needs and why:
//   - NewScheduler: a replica built over a store the simulation wraps (to
//     inject faults and note what the store decided) and with backoff
//     jitter drawn from the seed, so that a seed replays exactly;
//   - Store: Control's store, to ask for a manual run with an id drawn
//     from the seed (Control.Trigger draws it at random);
//   - Instants: which run ids of a job fall due in a period, as the engine
//     computes them (schedule, blackouts, jitter), for the liveness check;
//   - WithDefaults: a job with the engine's defaults applied;
//   - ClaimTimeout: how long one claim call may take.
package simhook

import (
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Replica says how to build one replica of the simulation.
type Replica struct {
	// Jitter draws the random part of a backoff in [0, n), in place of
	// math/rand's; key says what the backoff is for.
	Jitter func(key string, n time.Duration) time.Duration
	// Backend returns the store the replica talks to, given what its
	// options say of the store.
	Backend func(cfg store.BackendConfig) (store.Backend, error)
}

// Hooks are the engine's internals for the simulation. Its type parameters
// are package scheduler's Job, Option, *Scheduler and *Control, which this
// package, imported by scheduler, cannot name.
type Hooks[Job, Option, Scheduler, Control any] struct {
	// NewScheduler is scheduler.New over r's store, with r's jitter.
	NewScheduler func(r Replica, table []Job, opts []Option) (Scheduler, error)
	// Store returns the store c works on.
	Store func(c Control) store.Backend
	// Instants returns the ids of job's runs whose instants are at or after from
	// and that are claimed (instant plus the job's jitter) no later than
	// to, in order; skew is the replicas' max clock skew. The error is
	// what validation says of job's schedule.
	Instants func(job Job, skew time.Duration, from, to time.Time) ([]string, error)
	// WithDefaults returns job with the engine's defaults applied.
	WithDefaults func(job Job) Job
	// ClaimTimeout bounds one claim call.
	ClaimTimeout time.Duration
}

// Engine is package scheduler's *Hooks[scheduler.Job, scheduler.Option,
// *scheduler.Scheduler, *scheduler.Control], set in its init.
var Engine any
