package scheduler

import (
	"testing"
	"time"
)

// By default a replica claims further ahead when its big batches take long
// to decide (twice the last round trip, slowly forgotten), within half a
// second; a claim ahead set by the user is kept as it is.
func TestClaimAheadFollowsBatchRoundTrips(t *testing.T) {
	c, err := newConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{cfg: c}
	if got := s.ahead(); got != 250*time.Millisecond {
		t.Fatalf("ahead with no batch yet = %s, want 250ms", got)
	}
	s.batchTook(200 * time.Millisecond)
	if got := s.ahead(); got != 400*time.Millisecond {
		t.Fatalf("ahead after a 200ms batch = %s, want 400ms", got)
	}
	s.batchTook(3 * time.Second)
	if got := s.ahead(); got != maxDefaultAhead {
		t.Fatalf("ahead after a 3s batch = %s, want %s", got, maxDefaultAhead)
	}
	for range 40 {
		s.batchTook(10 * time.Millisecond)
	}
	if got := s.ahead(); got != 250*time.Millisecond {
		t.Fatalf("ahead after quick batches = %s, want back to 250ms", got)
	}

	c, err = newConfig([]Option{WithClaimAhead(100 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	s = &Scheduler{cfg: c}
	s.batchTook(time.Second)
	if got := s.ahead(); got != 100*time.Millisecond {
		t.Fatalf("ahead set to 100ms became %s", got)
	}
}
