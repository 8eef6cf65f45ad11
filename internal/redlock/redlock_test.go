package redlock

import (
	"testing"
	"time"
)

func TestQuorum(t *testing.T) {
	for masters, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		if got := Quorum(masters); got != want {
			t.Errorf("Quorum(%d) = %d, want %d", masters, got, want)
		}
		// Two quorums share a master.
		if 2*Quorum(masters) <= masters {
			t.Errorf("two quorums of %d masters can be disjoint", masters)
		}
		// Refusals by more than the masters a quorum can spare end it.
		if Hopeless(masters, masters-Quorum(masters)) || !Hopeless(masters, masters-Quorum(masters)+1) {
			t.Errorf("Hopeless(%d, ·) does not turn at %d refusals", masters, masters-Quorum(masters)+1)
		}
	}
}

func TestValidity(t *testing.T) {
	if got := Drift(10 * time.Second); got != 102*time.Millisecond {
		t.Errorf("Drift(10s) = %s, want 102ms", got)
	}
	if got := Validity(10*time.Second, time.Second); got != 9*time.Second-102*time.Millisecond {
		t.Errorf("Validity(10s, 1s) = %s", got)
	}
	if Validity(time.Second, time.Second-12*time.Millisecond) > 0 {
		t.Error("a grant that took the whole lease less its drift is still valid")
	}
}
