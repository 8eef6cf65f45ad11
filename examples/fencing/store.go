package main

import (
	"errors"
	"fmt"
	"sync"
)

// ErrStaleToken is the store's answer to a writer whose lease has passed to
// someone else.
var ErrStaleToken = errors.New("stale fencing token")

// Store stands for whatever a job writes to: a database row, an object in a
// bucket, another service's API. It holds one value and the fencing token of
// the write that put it there.
//
// A fenced store accepts a write only if its token is at least the highest it
// has accepted (equal, so one holder may write several times). The check and
// the write must be one atomic step, as they are here under the mutex; in SQL:
//
//	UPDATE reports SET body = $1, fence = $2 WHERE id = $3 AND fence <= $2
//	-- no row updated: a newer holder already wrote; the caller is stale
type Store struct {
	// Fenced turns the token check on.
	Fenced bool

	mu      sync.Mutex
	value   string
	token   int64 // the token value was written with
	highest int64 // the highest token accepted so far
}

// Write stores value on behalf of the holder of token.
func (s *Store) Write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fenced && token < s.highest {
		return fmt.Errorf("%w %d: %d already accepted", ErrStaleToken, token, s.highest)
	}
	s.value, s.token = value, token
	s.highest = max(s.highest, token)
	return nil
}

// Read returns the value and the token it was written with.
func (s *Store) Read() (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.token
}

// SlotStore is the fenced store for a job with concurrency: N > 1. Its N
// runs in flight hold slots 1..N (SOLOCRON_SLOT, the Solocron-Fencing-Slot
// header, jobs.Info.Slot), and a run's token is above every earlier
// holder's of its slot. One highest token per job would refuse the job's
// own concurrent runs (a run in slot 1 writes after the run in slot 2
// started with a higher token); one per slot refuses exactly the stale
// holders. In SQL, with the slot in the key:
//
//	UPDATE exports SET body = $1, fence = $2 WHERE job = $3 AND slot = $4 AND fence <= $2
type SlotStore struct {
	mu      sync.Mutex
	highest map[int]int64 // slot -> highest token accepted
	values  map[int]string
}

// Write stores value on behalf of the holder of slot with token.
func (s *SlotStore) Write(slot int, token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.highest == nil {
		s.highest, s.values = map[int]int64{}, map[int]string{}
	}
	if token < s.highest[slot] {
		return fmt.Errorf("%w %d in slot %d: %d already accepted", ErrStaleToken, token, slot, s.highest[slot])
	}
	s.highest[slot], s.values[slot] = token, value
	return nil
}
