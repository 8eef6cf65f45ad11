// Package store opens, from Go, the store a job table's store section
// describes — every mode (standalone, Sentinel, Cluster, Redlock), TLS,
// min_replicas_ack, and the embedded store with its data directory —
// exactly as the daemon does; and gives tests and local development an
// in-memory store (NewMemory) that needs neither Redis nor the miniredis
// import.
//
//	table, err := config.Load("solocron.yaml", config.WithFuncs(funcs))
//	...
//	st, err := store.OpenFile(table)
//	...
//	defer st.Close()
//	sched, err := st.NewScheduler(table.Jobs, scheduler.WithReplicaID(id))
//
// The clients it opens are the scheduler's own (claims and renewals never
// queue behind the program's other Redis traffic): give the rest of the
// program clients of its own.
package store

import (
	"os"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/storeconn"
)

// Conn is an open store: its clients, and the scheduler's Store over them
// (Store, NewScheduler, NewControl). Close it when done.
type Conn = storeconn.Conn

// Open opens the store s describes. It does not talk to Redis (a store down
// at start is retried by the scheduler) but reads the TLS files s names.
// Errors never show a password. With no URL it opens the embedded store:
// in s.DataDir when set (locked: a second process on the directory gets an
// error), else in memory only.
func Open(s config.Store) (*Conn, error) { return storeconn.Open(s) }

// OpenFile opens the store of table f as the daemon does: an embedded store
// (no store.url) without data_dir keeps its state in $STATE_DIRECTORY, else
// "<table name>.data" beside the table file.
func OpenFile(f *config.File) (*Conn, error) {
	s := f.Store
	if s.URL == "" && (s.Mode == "" || s.Mode == config.DefaultMode) && s.DataDir == "" {
		s.DataDir = storeconn.DefaultDataDir(f.Path, os.Getenv)
	}
	return storeconn.Open(s)
}

// NewMemory opens an empty in-memory store that lives as long as the
// returned Conn: one process, no Redis, nothing persisted — for an
// embedding program's unit tests and local development. Its scheduler
// runs a new job's first instants (the store began empty with the
// process).
//
//	st, err := store.NewMemory()
//	...
//	defer st.Close()
//	sched, err := st.NewScheduler([]scheduler.Job{{Name: "reindex", Schedule: "@every 1s", Handler: jobs.Func(reindex)}})
func NewMemory() (*Conn, error) {
	return storeconn.Open(config.Store{Mode: config.DefaultMode, KeyPrefix: config.DefaultKeyPrefix, MaxClockSkew: config.DefaultMaxClockSkew})
}
