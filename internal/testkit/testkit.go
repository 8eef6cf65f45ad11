// Package testkit holds what the tests of several packages share: a ledger
// of run starts and ends, a sink that refuses writes carrying a stale
// fencing token, as a downstream store should, a buffer a test can read
// while a process writes it, the waits of tests that poll state other
// goroutines or processes own, and the switch for the long budgets (Full).
package testkit

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/jobs"
)

// Entry is one attempt of one run, as the job itself saw it.
type Entry struct {
	RunID     string
	Job       string
	Replica   string
	Token     int64
	Attempt   int
	Scheduled time.Time
	Start     time.Time
	End       time.Time
	Err       error
}

// Ledger records every attempt any replica starts. It is safe for
// concurrent use.
type Ledger struct {
	mu       sync.Mutex
	entries  []Entry
	inFlight map[string]int
	maxIn    map[string]int
	started  chan Entry
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{inFlight: map[string]int{}, maxIn: map[string]int{}, started: make(chan Entry, 1<<16)}
}

// Job wraps body as a job that records each attempt's start and end; body
// may be nil (the job then returns at once).
func (l *Ledger) Job(body func(ctx context.Context) error) jobs.Func {
	return func(ctx context.Context) error {
		info, _ := jobs.FromContext(ctx)
		e := Entry{RunID: info.RunID, Job: info.Job, Replica: info.ReplicaID, Token: info.FencingToken,
			Attempt: info.Attempt, Scheduled: info.ScheduledAt, Start: time.Now()}
		l.mu.Lock()
		l.inFlight[e.Job]++
		l.maxIn[e.Job] = max(l.maxIn[e.Job], l.inFlight[e.Job])
		idx := len(l.entries)
		l.entries = append(l.entries, e)
		l.mu.Unlock()
		select {
		case l.started <- e:
		default:
		}
		var err error
		if body != nil {
			err = body(ctx)
		}
		l.mu.Lock()
		l.inFlight[e.Job]--
		l.entries[idx].End = time.Now()
		l.entries[idx].Err = err
		l.mu.Unlock()
		return err
	}
}

// Started delivers attempts as they start (buffered; for waiting on a run).
func (l *Ledger) Started() <-chan Entry { return l.started }

// Entries returns every attempt so far, in start order.
func (l *Ledger) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.entries...)
}

// Runs returns the first attempt of each run of job, ordered by scheduled
// instant then run id.
func (l *Ledger) Runs(job string) []Entry {
	var out []Entry
	for _, e := range l.Entries() {
		if e.Job == job && e.Attempt <= 1 {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Scheduled.Equal(out[b].Scheduled) {
			return out[a].Scheduled.Before(out[b].Scheduled)
		}
		return out[a].RunID < out[b].RunID
	})
	return out
}

// Starts counts first attempts per run id.
func (l *Ledger) Starts() map[string]int {
	n := map[string]int{}
	for _, e := range l.Entries() {
		if e.Attempt <= 1 {
			n[e.RunID]++
		}
	}
	return n
}

// Duplicates lists run ids started more than once, with the replicas that
// started them.
func (l *Ledger) Duplicates() []string {
	return DuplicateStarts(l.Entries(), func(e Entry) (string, string, int) { return e.RunID, e.Replica, e.Attempt })
}

// DuplicateStarts lists the run ids whose first attempt started more than
// once among runs, with the replicas that started them, sorted. start
// tells a record's run id, replica and attempt number.
func DuplicateStarts[T any](runs []T, start func(T) (runID, replica string, attempt int)) []string {
	by := map[string][]string{}
	for _, r := range runs {
		if id, replica, attempt := start(r); attempt <= 1 {
			by[id] = append(by[id], replica)
		}
	}
	var out []string
	for id, rs := range by {
		if len(rs) > 1 {
			out = append(out, fmt.Sprintf("%s by %v", id, rs))
		}
	}
	sort.Strings(out)
	return out
}

// SyncBuffer collects a process's output while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// MaxInFlight is the most attempts of job that ever ran at once.
func (l *Ledger) MaxInFlight(job string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxIn[job]
}

// Sink is a downstream store that accepts a write only if its fencing token
// is at least the highest it has accepted: what makes a lost lease harmless.
type Sink struct {
	mu       sync.Mutex
	high     int64
	accepted int
	rejected []int64
}

// Write offers a write with token; it reports whether it was accepted.
func (s *Sink) Write(token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.high {
		s.rejected = append(s.rejected, token)
		return false
	}
	s.high = token
	s.accepted++
	return true
}

// Counts returns the accepted and rejected writes.
func (s *Sink) Counts() (accepted, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, len(s.rejected)
}

// WaitFor polls cond every 10 ms until it holds, failing the test after
// timeout: for state that other goroutines or processes own, where there is
// nothing to wait on.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HTTPStatus returns the status of GET url, or 0 when nothing answers
// within 5 s.
func HTTPStatus(url string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// CommandCounter counts the commands a client sends (round-trip-level
// work, before any script runs them on the server): add it with AddHook.
type CommandCounter struct{ n atomic.Int64 }

// Load returns the commands counted so far.
func (c *CommandCounter) Load() int64 { return c.n.Load() }

func (c *CommandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *CommandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *CommandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// RoundTripCounter counts a client's round trips to Redis: a command alone,
// or a pipeline of them as one (CommandCounter counts each command of a
// pipeline): add it with AddHook.
type RoundTripCounter struct{ CommandCounter }

func (c *RoundTripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// Full reports whether the long budgets run: SOLOCRON_FULL=1, as CI sets.
// Without it, the README's `go test -race ./...` plays fewer simulation
// seeds and leaves out the slowest scenarios (each marked by Long), so a
// newcomer's run ends in minutes; CI runs all of them.
func Full() bool { return os.Getenv("SOLOCRON_FULL") == "1" }

// Long skips t unless SOLOCRON_FULL=1: a scenario slow enough (tens of
// seconds under -race on two cores) to be left to CI and to whoever asks
// for the full suite. What it asserts is asserted there, unchanged.
func Long(t testing.TB) {
	t.Helper()
	if !Full() {
		t.Skip("long scenario: SOLOCRON_FULL=1 runs it (as CI does)")
	}
}

// RaiseParallel sets go test's -parallel to n (or GOMAXPROCS, if larger)
// unless the command line gives -parallel. A package's TestMain calls it,
// after flag.Parse, when its t.Parallel tests are bound by real time, not
// CPU: each starts its own redis-server or daemon processes and waits for
// replicas polling, leases and retry windows running out, using a tenth of
// a core at most. go test's default, GOMAXPROCS (2 on a two-core machine),
// would run them two at a time.
func RaiseParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0)))); err != nil {
		panic(err)
	}
}
