// The batch example is a job table for the standalone daemon; these tests
// check that it says what its README says, and that it does it.
package batch_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func load(t *testing.T, redisURL string) *config.File {
	t.Helper()
	f, err := config.Load("solocron.yaml", config.WithLookupEnv(func(name string) (string, bool) {
		return redisURL, name == "REDIS_URL"
	}))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The file loads, and says what the README says it does.
func TestTable(t *testing.T) {
	f := load(t, "redis://127.0.0.1:1/0")
	if f.Store.URL != "redis://127.0.0.1:1/0" {
		t.Errorf("store.url = %q; want ${REDIS_URL} expanded", f.Store.URL)
	}
	if len(f.Jobs) != 2 {
		t.Fatalf("%d jobs; want export and flaky-upload", len(f.Jobs))
	}
	export, flaky := f.Jobs[0], f.Jobs[1]
	if export.Name != "export" || export.Schedule != "@every 1s" || export.Concurrency != 3 ||
		export.Overlap != scheduler.OverlapWait || export.MaxWait != 3*time.Second ||
		export.Timeout != 30*time.Second || export.Retries != 2 || export.RetryBackoff != time.Second {
		t.Errorf("export = %+v", export)
	}
	if flaky.Name != "flaky-upload" || flaky.Concurrency != 0 || flaky.Overlap != "" ||
		flaky.Retries != 2 || flaky.RetryBackoff != 500*time.Millisecond {
		t.Errorf("flaky-upload = %+v", flaky)
	}
	for _, j := range f.Jobs {
		cmd, ok := j.Handler.(*jobs.Command)
		if !ok || len(cmd.Args) != 3 || cmd.Args[0] != "/bin/sh" || cmd.Args[1] != "-c" {
			t.Errorf("%s: handler %#v; want /bin/sh -c SCRIPT", j.Name, j.Handler)
			continue
		}
		// $SOLOCRON_... must reach the shell as written, not be expanded at load.
		if !strings.Contains(cmd.Args[2], "$SOLOCRON_FENCING_TOKEN") {
			t.Errorf("%s: script %q lost its $SOLOCRON_FENCING_TOKEN", j.Name, cmd.Args[2])
		}
	}
}

// Three replicas run the table against one redis-server: across all of them,
// never more than 3 exports are in flight; a 4th run waits for a slot instead
// of being skipped; each run starts once; a flaky-upload's second attempt
// succeeds, in the same run with a higher fencing token; commands see their
// SOLOCRON_* variables.
func TestLimitsHoldAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	f := load(t, "redis://"+srv.Addr()+"/0")
	l := newLedger()
	for i := range f.Jobs {
		f.Jobs[i].Handler = l.wrap(f.Jobs[i].Handler) // still the shell command, recorded
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil)) // shown with -v or on failure

	ctx, stop := context.WithCancel(context.Background())
	var replicas sync.WaitGroup
	for _, id := range []string{"a", "b", "c"} {
		s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil)), f.Jobs, scheduler.WithReplicaID(id),
			scheduler.WithLogger(log.With("replica", id)),
			scheduler.WithShutdownGrace(500*time.Millisecond)) // then exports in flight are interrupted
		if err != nil {
			t.Fatal(err)
		}
		replicas.Go(func() { _ = s.Run(ctx) })
	}

	// Run until everything the test checks has happened at least once: all
	// 3 slots busy at the same time, an export that queued for a slot, an
	// export finished, and a flaky-upload that succeeded on attempt 2.
	deadline := time.Now().Add(20 * time.Second)
	for !l.seenEnough() {
		if time.Now().After(deadline) {
			stop()
			replicas.Wait()
			t.Fatalf("after 20s, not everything happened yet:\n%s", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	replicas.Wait()

	if n := l.maxInFlight("export"); n != 3 {
		t.Errorf("at most %d exports were in flight at once; want exactly the limit, 3", n)
	}
	if n := l.maxInFlight("flaky-upload"); n != 1 {
		t.Errorf("at most %d flaky-uploads were in flight at once; want 1", n)
	}
	seen := map[string]bool{}
	for _, a := range l.all() {
		key := fmt.Sprintf("%s attempt %d", a.runID, a.attempt)
		if seen[key] {
			t.Errorf("%s started twice", key)
		}
		seen[key] = true
	}

	// The commands' output is kept in the run records.
	hist := schedtest.RedisStore(t, srv.Client(t, nil)).Control()
	runs, err := hist.History(t.Context(), "export", 100)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for _, r := range runs {
		if r.Outcome == scheduler.Succeeded {
			out = r.Output
			break
		}
	}
	if !strings.Contains(out, "export: run export@") || !strings.Contains(out, ", fencing token 1") ||
		!strings.Contains(out, "export done") {
		t.Errorf("a succeeded export's output is %q; want its SOLOCRON_* variables and \"export done\"", out)
	}
	t.Logf("\n%s", l)
}

// attempt is one attempt of one run, as the job saw it.
type attempt struct {
	job, runID, replica string
	attempt             int
	token               int64
	scheduled           time.Time
	start, end          time.Time // end is zero while it runs
	err                 error
}

// ledger records every attempt any replica starts: the test's own account
// of what ran when, independent of what the scheduler stores.
type ledger struct {
	mu       sync.Mutex
	attempts []*attempt
	inFlight map[string]int
	max      map[string]int
}

func newLedger() *ledger { return &ledger{inFlight: map[string]int{}, max: map[string]int{}} }

// wrap returns a job that runs h and records each call.
func (l *ledger) wrap(h jobs.Job) jobs.Job {
	return jobs.Func(func(ctx context.Context) error {
		info, _ := jobs.FromContext(ctx)
		a := &attempt{job: info.Job, runID: info.RunID, replica: info.ReplicaID, attempt: info.Attempt,
			token: info.FencingToken, scheduled: info.ScheduledAt, start: time.Now()}
		l.mu.Lock()
		l.attempts = append(l.attempts, a)
		l.inFlight[a.job]++
		l.max[a.job] = max(l.max[a.job], l.inFlight[a.job])
		l.mu.Unlock()

		err := h.Run(ctx)

		l.mu.Lock()
		l.inFlight[a.job]--
		a.end, a.err = time.Now(), err
		l.mu.Unlock()
		return err
	})
}

func (l *ledger) maxInFlight(job string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max[job]
}

func (l *ledger) all() []attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]attempt, len(l.attempts))
	for i, a := range l.attempts {
		out[i] = *a
	}
	return out
}

// seenEnough reports whether every behaviour the test checks has shown up.
func (l *ledger) seenEnough() bool {
	all := l.all()
	var queued, exported, retried bool
	firstToken := map[string]int64{}
	for _, a := range all {
		switch {
		case a.job == "export" && !a.end.IsZero() && a.err == nil:
			exported = true
		case a.job == "flaky-upload" && a.attempt == 1:
			firstToken[a.runID] = a.token
		case a.job == "flaky-upload" && a.attempt == 2 && !a.end.IsZero() && a.err == nil:
			retried = firstToken[a.runID] > 0 && a.token > firstToken[a.runID]
		}
		if a.job == "export" && busyAt(all, a.scheduled, a.runID) >= 3 {
			// Due while all 3 slots were taken, and started all the same:
			// it waited for a slot (overlap: skip would have skipped it).
			queued = true
		}
	}
	return queued && exported && retried && l.maxInFlight("export") >= 3
}

// busyAt counts the exports other than runID that were running at t.
func busyAt(all []attempt, t time.Time, runID string) int {
	n := 0
	for _, a := range all {
		if a.job == "export" && a.runID != runID && !a.start.After(t) && (a.end.IsZero() || a.end.After(t)) {
			n++
		}
	}
	return n
}

func (l *ledger) String() string {
	var b strings.Builder
	for _, a := range l.all() {
		fmt.Fprintf(&b, "%s attempt %d on %s, token %d: started %s after its instant, ",
			a.runID, a.attempt, a.replica, a.token, a.start.Sub(a.scheduled).Round(10*time.Millisecond))
		if a.end.IsZero() {
			b.WriteString("still running\n")
		} else {
			fmt.Fprintf(&b, "ran %s, error: %v\n", a.end.Sub(a.start).Round(10*time.Millisecond), a.err)
		}
	}
	return b.String()
}
