package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// storeDown is a store whose Redis is down, reached through a client that
// retries dialling (go-redis' MaxRetries) for a while before it gives up: a
// claim fails with the dial's error, having sent nothing — or, when its
// context ends first, with that context's own error, as go-redis returns it
// from the pause between two attempts.
type storeDown struct {
	store.Backend
	calling chan struct{} // a claim is under way
	lost    bool          // the first claim went out and its answer was lost
	mu      sync.Mutex
	errs    []error
}

func (d *storeDown) Claim(ctx context.Context, _ string, _, _ time.Duration, _ []store.StoreClaim) ([]store.ClaimRes, error) {
	select {
	case d.calling <- struct{}{}:
	default:
	}
	err := error(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")})
	d.mu.Lock()
	if d.lost && len(d.errs) == 0 {
		err = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	}
	d.mu.Unlock()
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(1500 * time.Millisecond):
	}
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
	return nil, err
}

// A replica that stops while a round of its misses is trying to reach a
// Redis that is down stops at once: the stop does not cut that round's call
// short, so its failure says what it is (nothing went out), not "cancelled",
// which may have lost an answer and was asked about through the whole
// shutdown grace (TestStopDuringAnOutageIsPrompt's slow stops, one in ten
// under load: the replica stopped as a miss round dialled). A round whose
// call went out and lost its answer is still asked about through the grace.
func TestStopDuringAMissRoundIsPrompt(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("answer_lost=%v", lost), func(t *testing.T) { stopDuringAMissRound(t, lost) })
	}
}

func stopDuringAMissRound(t *testing.T, lost bool) {
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		s, err := New(redisStore(t, c), []Job{{Name: "m", Schedule: "@every 10s",
			Handler: jobs.Func(func(context.Context) error { return nil })}},
			WithReplicaID("r"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			WithShutdownGrace(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		down := &storeDown{Backend: s.store, calling: make(chan struct{}), lost: lost}
		s.store = down
		tab, _ := s.table()
		// A run its claim could not reach Redis for before its starting
		// deadline: nothing went out, nothing to settle.
		s.queueMiss(s.newClaim(tab[0], s.now().Truncate(time.Second), store.RunMiss))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.recordMisses(ctx); close(done) }()
		<-down.calling // a round is under way
		cancel()
		stopping := time.Now()
		<-done
		took := time.Since(stopping)
		down.mu.Lock()
		defer down.mu.Unlock()
		switch {
		case !lost && took > 5*time.Second:
			t.Errorf("the misses' loop stopped %s after the replica began stopping (grace 30 s), though no call went out; its calls failed with %v", took, down.errs)
		case lost && took < 29*time.Second:
			t.Errorf("the misses' loop stopped %s after the replica began stopping, though a call's answer was lost (grace 30 s); its calls failed with %v", took, down.errs)
		}
	})
}
