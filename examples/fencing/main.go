// Command fencing shows why a lease alone cannot stop two replicas from
// writing, and how the fencing token does.
//
// Replica A takes the lease for the daily report, checks that it still holds
// it, and then freezes — a GC pause, a VM migration, a SIGSTOP — before its
// write reaches the store. Its lease expires in Redis; replica B takes over,
// with a higher fencing token, and writes its report. Then A wakes up and its
// write goes out too: A cannot know it was frozen between its check and its
// write, so no check in A can help. Only the store, which sees both writes,
// can tell them apart.
//
// The story runs twice: against a store that takes every write (B's report is
// lost), and against one that refuses a token below the highest it accepted
// (A's stale write is refused).
//
//	go run ./examples/fencing
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/lockprovider"
)

const (
	ttl   = 30 * time.Second // the lease's time to live (the scheduler's default)
	stall = 45 * time.Second // how long A is frozen: longer than its lease
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fencing:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	fmt.Fprintln(w, "Without fencing: the store keeps whatever it receives last.")
	if err := story(w, &Store{}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "With fencing: the store refuses a token below the highest it accepted.")
	if err := story(w, &Store{Fenced: true}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "With concurrency: 2, the store keeps the highest token per slot.")
	slots(w, &Store{Fenced: true}, &SlotStore{})
	return nil
}

// slots is the story for a job with concurrency: 2. Each run gets its slot
// and token from the scheduler (SOLOCRON_SLOT, SOLOCRON_FENCING_TOKEN); the
// tokens here are made up, in the order the scheduler would issue them.
func slots(w io.Writer, perJob *Store, perSlot *SlotStore) {
	type write struct {
		who   string
		slot  int
		token int64
		note  string
	}
	for _, wr := range []write{
		{"X", 1, 100, "starts in slot 1"},
		{"Y", 2, 101, "starts in slot 2"},
		{"X", 1, 100, "writes again, still holding slot 1"},
		{"Z", 1, 102, "X froze and lost slot 1; Z took it"},
		{"X", 1, 100, "wakes up; its stale write goes out"},
	} {
		fmt.Fprintf(w, "  %s (slot %d, token %d) %s: one token per job: %s; per slot: %s\n", wr.who, wr.slot, wr.token, wr.note,
			result(perJob.Write(wr.token, wr.who)), result(perSlot.Write(wr.slot, wr.token, wr.who)))
	}
	fmt.Fprintln(w, "  => per job refuses the job's own concurrent run X; per slot refuses only X's stale write")
}

func story(w io.Writer, store *Store) error {
	ctx := context.Background()

	// The Redis both replicas share. Here it is an in-process miniredis whose
	// clock we set by hand, so that A's 45 s freeze takes no time and the
	// output (fencing tokens are Redis' clock in microseconds) is the same on
	// every run. Against a real Redis the story is the same, only slower.
	redisSrv := miniredis.NewMiniRedis()
	noon := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC) // in Shanghai
	redisSrv.SetTime(noon)
	redisSrv.ClockTTL(true) // keys expire as the clock we set moves
	if err := redisSrv.Start(); err != nil {
		return err
	}
	defer redisSrv.Close()

	// Each replica has its own connection and its own view of the lock.
	a, err := newReplica(redisSrv.Addr())
	if err != nil {
		return err
	}
	b, err := newReplica(redisSrv.Addr())
	if err != nil {
		return err
	}

	leaseA, err := a.Mutex("daily-report").TryAcquire(ctx, ttl)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  A: took the lease: fencing token %d, TTL %s\n", leaseA.FencingToken(), ttl)
	if time.Now().Before(leaseA.Until()) {
		fmt.Fprintln(w, "  A: checks its lease: still valid, so it sends its report...")
	}

	// A freezes. Nothing in A runs, not even the watchdog (lockprovider.KeepAlive)
	// that would renew its lease every TTL/3. Time passes for everyone else.
	redisSrv.SetTime(noon.Add(stall))
	fmt.Fprintf(w, "  A: ...frozen for %s (a GC pause) before the write leaves the process\n", stall)

	leaseB, err := b.Mutex("daily-report").TryAcquire(ctx, ttl)
	if err != nil {
		return fmt.Errorf("B could not take the expired lease: %w", err)
	}
	fmt.Fprintf(w, "  B: A's lease expired; took it over: fencing token %d\n", leaseB.FencingToken())
	fmt.Fprintf(w, "  B: writes its report: %s\n", result(store.Write(leaseB.FencingToken(), "report by B")))

	fmt.Fprintf(w, "  A: wakes up; its report goes out: %s\n", result(store.Write(leaseA.FencingToken(), "report by A")))
	report, token := store.Read()
	fmt.Fprintf(w, "  store holds %q (token %d)\n", report, token)
	if token < leaseB.FencingToken() {
		fmt.Fprintln(w, "  => B's report was overwritten by a replica that no longer held the lease")
	} else {
		fmt.Fprintln(w, "  => B's report stands")
	}

	// A finds out at its next renewal, which the watchdog would do on waking:
	// too late to take back a write, but in time to stop doing more.
	fmt.Fprintf(w, "  A: renews its lease: %v\n", leaseA.Refresh(ctx))
	return leaseB.Release(ctx)
}

// newReplica connects one replica to the shared Redis.
func newReplica(addr string) (*lockprovider.Redis, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	return lockprovider.NewRedis(rdb, lockprovider.WithPrefix("fencing-demo"))
}

func result(err error) string {
	if err != nil {
		return "REFUSED (" + err.Error() + ")"
	}
	return "accepted"
}
