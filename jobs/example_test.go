package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/solocron/solocron/jobs"
)

// A Go function becomes a Job with Func. Everything the run knows about
// itself is in the context.
func ExampleFunc() {
	reindex := jobs.Func(func(ctx context.Context) error {
		fmt.Println("run", jobs.RunID(ctx), "attempt", jobs.Attempt(ctx), "token", jobs.FencingToken(ctx))
		// Pass jobs.FencingToken(ctx) along with every write, so the store
		// can refuse a run whose lease has already passed to someone else.
		return nil
	})

	// The scheduler builds this context for each run.
	ctx := jobs.NewContext(context.Background(), jobs.Info{
		Job:          "reindex",
		RunID:        "reindex@2026-11-22T04:00:00Z",
		ScheduledAt:  time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC),
		FencingToken: 42,
		Attempt:      1,
		ReplicaID:    "web-1",
	})
	if err := reindex.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: run reindex@2026-11-22T04:00:00Z attempt 1 token 42
}

// A panic in a Func fails the run instead of crashing the replica.
func ExampleFunc_panic() {
	bad := jobs.Func(func(ctx context.Context) error {
		var m map[string]int
		m["boom"]++ // assignment to entry in nil map
		return nil
	})
	err := bad.Run(context.Background())
	var pe *jobs.PanicError
	if errors.As(err, &pe) {
		fmt.Println(err)
		fmt.Println("stack recorded:", len(pe.Stack) > 0)
	}
	// Output:
	// jobs: panic: assignment to entry in nil map
	// stack recorded: true
}

// A Tail keeps only the end of what is written to it.
func ExampleTail() {
	tail := jobs.NewTail(14)
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(tail, "line %d\n", i)
	}
	fmt.Printf("%q\n", tail.String())
	fmt.Println("dropped", tail.Dropped(), "bytes")
	// Output:
	// "line 4\nline 5\n"
	// dropped 21 bytes
}

// An HTTP job sends the run's id as Idempotency-Key and its fencing token as
// Solocron-Fencing-Token; the first bytes of the response go to the run's
// output.
func ExampleHTTP() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s key=%s token=%s body=%s",
			r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Solocron-Fencing-Token"), body)
	}))
	defer srv.Close()

	ctx := jobs.NewContext(context.Background(), jobs.Info{Job: "notify", RunID: "notify@2026-11-22T04:00:00Z", FencingToken: 7})
	ctx = jobs.WithOutput(ctx, os.Stdout)
	job := &jobs.HTTP{Method: http.MethodPost, URL: srv.URL + "/hook", Body: "ping", ExpectStatus: []int{200}}
	if err := job.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: POST /hook key=notify@2026-11-22T04:00:00Z token=7 body=ping
}

// Permanent tells the retry policy not to try again; the error stays
// visible to errors.Is and errors.As.
func ExamplePermanent() {
	errNoSuchAccount := errors.New("no such account")
	job := jobs.Func(func(ctx context.Context) error {
		return jobs.Permanent(fmt.Errorf("charge: %w", errNoSuchAccount))
	})
	err := job.Run(context.Background())
	fmt.Println(err)
	fmt.Println("permanent:", jobs.IsPermanent(err), "is no such account:", errors.Is(err, errNoSuchAccount))
	fmt.Println("plain error permanent:", jobs.IsPermanent(errors.New("timeout")))
	// Output:
	// charge: no such account
	// permanent: true is no such account: true
	// plain error permanent: false
}
