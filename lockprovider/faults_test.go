package lockprovider

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
)

// lossyClient runs every script on the server but, while drop > 0, throws
// the reply away and reports a timeout — what a caller sees when the
// connection dies after Redis executed the command.
type lossyClient struct {
	redis.Scripter
	drop atomic.Int64
}

func (c *lossyClient) lose(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	if cmd.Err() == nil && c.drop.Add(-1) >= 0 {
		lost := redis.NewCmd(ctx)
		lost.SetErr(os.ErrDeadlineExceeded)
		return lost
	}
	return cmd
}

func (c *lossyClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.lose(ctx, c.Scripter.EvalSha(ctx, sha, keys, args...))
}

func (c *lossyClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return c.lose(ctx, c.Scripter.Eval(ctx, src, keys, args...))
}

func TestAcquireIsIdempotentForOneToken(t *testing.T) {
	_, c := redistest.Mini(t)
	r, err := NewRedis(c)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Mutex("idem")
	first, err := m.acquire(t.Context(), "tok", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The same token again — a retried command — finds its own lock.
	again, err := m.acquire(t.Context(), "tok", time.Second)
	if err != nil {
		t.Fatalf("second acquire with the same token = %v, want the lock", err)
	}
	if again.FencingToken() != first.FencingToken() {
		t.Fatalf("retry changed the fencing token: %d then %d", first.FencingToken(), again.FencingToken())
	}
	if _, err := m.acquire(t.Context(), "other", time.Second); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("another token = %v, want ErrNotAcquired", err)
	}
}

// A blocking Acquire whose first attempt took the lock but lost the reply
// must not lock itself out until the TTL runs down.
func TestAcquireRecoversLockTakenByLostReply(t *testing.T) {
	_, c := redistest.Mini(t)
	lossy := &lossyClient{Scripter: c}
	r, err := NewRedis(lossy)
	if err != nil {
		t.Fatal(err)
	}
	lossy.drop.Store(1)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	lease, err := r.Mutex("lost-reply").Acquire(ctx, time.Minute, LinearBackoff(time.Millisecond))
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %s: locked out by its own lock", el)
	}
	if err := lease.Release(t.Context()); err != nil {
		t.Fatalf("Release = %v", err)
	}
}

// TryAcquire cannot know whether a lost reply took the lock; it releases
// whatever its token may hold, so the lock is not stranded for a whole TTL.
func TestTryAcquireLostReplyLeavesLockFree(t *testing.T) {
	_, c := redistest.Mini(t)
	lossy := &lossyClient{Scripter: c}
	r, err := NewRedis(lossy)
	if err != nil {
		t.Fatal(err)
	}
	lossy.drop.Store(1)
	m := r.Mutex("stranded")
	if _, err := m.TryAcquire(t.Context(), time.Minute); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("TryAcquire = %v, want the timeout", err)
	}
	if _, err := m.TryAcquire(t.Context(), time.Minute); err != nil {
		t.Fatalf("lock stranded after a lost reply: %v", err)
	}
}

// With a real server that stops answering (SIGSTOP) and a client that
// ignores context deadlines, the keep-alive still declares the lease lost on
// time — before Redis could expire it and hand it to someone else.
func TestKeepAliveLosesLeaseWhenRedisHangs(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{
		Addr:        s.Addr(),
		ReadTimeout: time.Minute, // a hung call lasts far past the lease
		MaxRetries:  -1,
		// ContextTimeoutEnabled deliberately left false.
	})
	t.Cleanup(func() { _ = c.Close() })
	r, err := NewRedis(c)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Second
	sent := time.Now()
	lease, err := r.Mutex("hang").TryAcquire(t.Context(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	until := lease.Until()
	ctx, stop := KeepAlive(context.Background(), lease)
	s.Pause()
	defer func() {
		s.Resume()
		stop()
	}()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("keep-alive still alive 10s after Redis stopped answering")
	}
	lostAt := time.Now()
	if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
		t.Fatalf("cause = %v", context.Cause(ctx))
	}
	// The loss fires at the grant's deadline: send time + TTL − drift, which
	// is before Redis could expire the key (it received the grant after we
	// sent it). Timer latency on a loaded machine is the only slack.
	if lostAt.Before(until) {
		t.Fatalf("declared lost %s before its deadline", until.Sub(lostAt))
	}
	if late := lostAt.Sub(until); late > 500*time.Millisecond {
		t.Fatalf("declared lost %s after its deadline", late)
	}
	t.Logf("declared lost %s before the earliest server-side expiry (drift margin %s)", sent.Add(ttl).Sub(lostAt), Drift(ttl))
}
