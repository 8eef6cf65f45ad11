package main

import (
	"errors"
	"os"
	"testing"
)

// The whole story, as `go run ./examples/fencing` prints it. The tokens are
// the frozen Redis clock in microseconds: 04:00:00 and 04:00:45 UTC.
func Example() {
	if err := run(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// Without fencing: the store keeps whatever it receives last.
	//   A: took the lease: fencing token 1795320000000000, TTL 30s
	//   A: checks its lease: still valid, so it sends its report...
	//   A: ...frozen for 45s (a GC pause) before the write leaves the process
	//   B: A's lease expired; took it over: fencing token 1795320045000000
	//   B: writes its report: accepted
	//   A: wakes up; its report goes out: accepted
	//   store holds "report by A" (token 1795320000000000)
	//   => B's report was overwritten by a replica that no longer held the lease
	//   A: renews its lease: lockprovider: lease lost: "daily-report" is no longer held by this lease
	//
	// With fencing: the store refuses a token below the highest it accepted.
	//   A: took the lease: fencing token 1795320000000000, TTL 30s
	//   A: checks its lease: still valid, so it sends its report...
	//   A: ...frozen for 45s (a GC pause) before the write leaves the process
	//   B: A's lease expired; took it over: fencing token 1795320045000000
	//   B: writes its report: accepted
	//   A: wakes up; its report goes out: REFUSED (stale fencing token 1795320000000000: 1795320045000000 already accepted)
	//   store holds "report by B" (token 1795320045000000)
	//   => B's report stands
	//   A: renews its lease: lockprovider: lease lost: "daily-report" is no longer held by this lease
	//
	// With concurrency: 2, the store keeps the highest token per slot.
	//   X (slot 1, token 100) starts in slot 1: one token per job: accepted; per slot: accepted
	//   Y (slot 2, token 101) starts in slot 2: one token per job: accepted; per slot: accepted
	//   X (slot 1, token 100) writes again, still holding slot 1: one token per job: REFUSED (stale fencing token 100: 101 already accepted); per slot: accepted
	//   Z (slot 1, token 102) X froze and lost slot 1; Z took it: one token per job: accepted; per slot: accepted
	//   X (slot 1, token 100) wakes up; its stale write goes out: one token per job: REFUSED (stale fencing token 100: 102 already accepted); per slot: REFUSED (stale fencing token 100 in slot 1: 102 already accepted)
	//   => per job refuses the job's own concurrent run X; per slot refuses only X's stale write
}

// A fenced store accepts equal and higher tokens and refuses lower ones; an
// unfenced store accepts everything.
func TestStore(t *testing.T) {
	fenced := &Store{Fenced: true}
	for _, w := range []struct {
		token int64
		stale bool
	}{{5, false}, {5, false}, {7, false}, {6, true}, {1, true}, {8, false}} {
		err := fenced.Write(w.token, "v")
		if stale := errors.Is(err, ErrStaleToken); stale != w.stale || (err != nil && !stale) {
			t.Errorf("fenced Write(%d) = %v; want stale %v", w.token, err, w.stale)
		}
	}
	if _, tok := fenced.Read(); tok != 8 {
		t.Errorf("fenced store holds token %d; want 8", tok)
	}

	plain := &Store{}
	for _, tok := range []int64{7, 3} {
		if err := plain.Write(tok, "v"); err != nil {
			t.Errorf("unfenced Write(%d) = %v; want nil", tok, err)
		}
	}
	if _, tok := plain.Read(); tok != 3 {
		t.Errorf("unfenced store holds token %d; want the last write's, 3", tok)
	}
}

// A slot store refuses a token below its slot's highest only: other slots'
// tokens do not count.
func TestSlotStore(t *testing.T) {
	var s SlotStore
	for _, w := range []struct {
		slot  int
		token int64
		stale bool
	}{{1, 5, false}, {2, 7, false}, {1, 5, false}, {1, 6, false}, {1, 5, true}, {2, 6, true}, {3, 1, false}} {
		err := s.Write(w.slot, w.token, "v")
		if stale := errors.Is(err, ErrStaleToken); stale != w.stale || (err != nil && !stale) {
			t.Errorf("Write(slot %d, %d) = %v; want stale %v", w.slot, w.token, err, w.stale)
		}
	}
}
