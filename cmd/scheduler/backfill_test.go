package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// syncBuffer is a bytes.Buffer safe to read while Main writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The backfill command, with stdout not a terminal: plain progress lines,
// then what ran; a second backfill over the range runs nothing again; bad
// input exits 2 with a clear message; --cancel drops the rest.
func TestBackfillCommand(t *testing.T) {
	srv := redistest.Start(t)
	release, release2 := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	ran := map[string]int{}
	s, err := scheduler.New(schedtest.RedisStore(t, srv.Client(t, nil), scheduler.WithKeyPrefix("bfcli")), []scheduler.Job{{
		Name: "bf", Schedule: "@every 1m", Concurrency: 2,
		Handler: jobs.Func(func(ctx context.Context) error {
			if time.Since(jobs.ScheduledAt(ctx)) < time.Hour {
				return nil
			}
			mu.Lock()
			ran[jobs.RunID(ctx)]++
			mu.Unlock()
			switch day := jobs.ScheduledAt(ctx).UTC().Format(time.DateOnly); {
			case strings.HasPrefix(day, "2026-01"):
				select { // the range cancelled below
				case <-release:
				case <-ctx.Done():
				}
			case strings.HasPrefix(day, "2026-02"):
				select { // the range interrupted below
				case <-release2:
				case <-ctx.Done():
				}
			}
			return nil
		}),
	}}, scheduler.WithSyncInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	runInProcess(t, s)

	table := filepath.Join(t.TempDir(), "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://%s/0
  key_prefix: bfcli
jobs:
  - name: bf
    schedule: "@every 1m"
    concurrency: 2
    command: ["true"]
`, srv.Addr()))
	backfillLineEvery = 0 // a line at every poll
	run := func(code int, args ...string) (string, string) {
		t.Helper()
		var out, errb syncBuffer
		got := Main(append(args, "--config", table), &out, &errb)
		if got != code {
			t.Fatalf("scheduler %v exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, got, code, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	from := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	fromS, toS := from.Format(time.RFC3339), from.Add(19*time.Minute).Format(time.RFC3339)
	out, _ := run(0, "backfill", "bf", "--from", fromS, "--to", toS, "--parallel", "2")
	if strings.Contains(out, "\r") || strings.Contains(out, "\x1b") {
		t.Errorf("terminal control characters in non-terminal output:\n%q", out)
	}
	if !regexp.MustCompile(`(?m)^\[[#-]{30}\] \d+/20 +\d+%`).MatchString(out) {
		t.Errorf("no progress line:\n%s", out)
	}
	if !strings.Contains(out, "bf: backfill done: 20 of 20 instants ran (20 succeeded, 0 failed), 0 had run before, 0 skipped, 0 dropped") {
		t.Errorf("report:\n%s", out)
	}
	out, _ = run(0, "backfill", "bf", "--from", fromS, "--to", from.Add(24*time.Minute).Format(time.RFC3339))
	if !strings.Contains(out, "5 of 25 instants ran (5 succeeded, 0 failed), 20 had run before") {
		t.Errorf("second backfill:\n%s", out)
	}
	mu.Lock()
	if len(ran) != 25 {
		t.Errorf("%d instants ran, want 25", len(ran))
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	mu.Unlock()

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backfill", "bf", "--to", toS}, "--from and --to are both required"},
		{[]string{"backfill", "bf", "--from", "yesterday", "--to", toS}, "is not a time"},
		{[]string{"backfill", "bf", "--from", toS, "--to", fromS}, "is after to"},
		{[]string{"backfill", "bf", "--from", "2020-01-01", "--to", toS}, "more than 100000 instants"},
		{[]string{"backfill", "bf", "--from", fromS, "--to", toS, "--parallel", "0"}, "--parallel must be within 1..100"},
		{[]string{"backfill", "nope", "--from", fromS, "--to", toS}, `no job "nope"`},
	} {
		_, stderr := run(2, c.args...)
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: %q, want %q", c.args, stderr, c.want)
		}
	}

	// Cancel from another command while one follows: the two runs in
	// flight finish, the rest is dropped, the exit code says not all ran.
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var followOut string
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		var out, errb syncBuffer
		if got := Main([]string{"backfill", "bf", "--from", jan.Format(time.RFC3339), "--to", jan.Add(59 * time.Minute).Format(time.RFC3339),
			"--parallel", "2", "--config", table}, &out, &errb); got != 1 {
			t.Errorf("cancelled backfill exited %d, want 1; stderr %s", got, errb.String())
		}
		followOut = out.String()
	}()
	ctl := schedtest.RedisStore(t, srv.Client(t, nil), scheduler.WithKeyPrefix("bfcli")).Control()
	for limit := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := ctl.BackfillStatus(context.Background(), "bf")
		if err != nil {
			t.Fatal(err)
		}
		if b != nil && b.InFlight == 2 && b.From.Equal(jan) {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("backfill never had 2 in flight: %+v", b)
		}
	}
	_, stderr := run(1, "backfill", "bf", "--from", fromS, "--to", toS)
	if !strings.Contains(stderr, "a backfill of the job is going on already") {
		t.Errorf("second backfill: %q", stderr)
	}
	out, _ = run(0, "status", "bf")
	if !regexp.MustCompile(`(?m)^backfill: +2/60 instants decided \(2 ran, 0 had run before, 0 skipped, 0 dropped; 2 running\) from 2026-01-01T00:00:00Z to 2026-01-01T00:59:00Z, parallel 2: going on$`).MatchString(out) {
		t.Errorf("status:\n%s", out)
	}
	out, _ = run(0, "backfill", "bf", "--cancel")
	if !strings.Contains(out, "bf: backfill cancelled: 2 of 60 instants decided, 58 dropped; 2 runs in flight go on to their end") {
		t.Errorf("cancel:\n%s", out)
	}
	close(release)
	<-followed
	if !strings.Contains(followOut, "bf: backfill cancelled: 2 of 60 instants ran (2 succeeded, 0 failed), 0 had run before, 0 skipped, 58 dropped") {
		t.Errorf("followed cancelled backfill:\n%s", followOut)
	}
	run(1, "backfill", "bf", "--cancel")

	// Ctrl-C (SIGINT to the command's process) cancels the same way.
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	p := start(t, &transcript{}, "backfill", os.Environ(), "backfill", "bf", "--from", feb.Format(time.RFC3339),
		"--to", feb.Add(59*time.Minute).Format(time.RFC3339), "--parallel", "2", "--config", table)
	testkit.WaitFor(t, 60*time.Second, "2 runs in flight", func() bool {
		b, _ := ctl.BackfillStatus(context.Background(), "bf")
		return b != nil && b.From.Equal(feb) && b.InFlight == 2
	})
	p.signal(os.Interrupt)
	testkit.WaitFor(t, 30*time.Second, "cancelling", func() bool { return strings.Contains(p.stdout.String(), "cancelling: 2 runs in flight") })
	close(release2)
	if code := p.wait(60 * time.Second); code != 1 {
		t.Errorf("interrupted backfill exited %d, want 1\n%s", code, p.output())
	}
	if !strings.Contains(p.stdout.String(), "bf: backfill cancelled: 2 of 60 instants ran (2 succeeded, 0 failed), 0 had run before, 0 skipped, 58 dropped") {
		t.Errorf("interrupted backfill:\n%s", p.output())
	}
}

// A date as --to includes that day; as --from it starts it.
func TestParseInstantDates(t *testing.T) {
	from, err := parseInstant("2026-11-01", false)
	if err != nil || !from.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("--from 2026-11-01 = %v, %v", from, err)
	}
	to, err := parseInstant("2026-11-25", true)
	if err != nil || !to.Equal(time.Date(2026, 11, 25, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("--to 2026-11-25 = %v, %v; want the day's last second", to, err)
	}
	if to, _ := parseInstant("2026-11-25T10:00:00Z", true); !to.Equal(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("--to RFC 3339 moved: %v", to)
	}
}

// 100% only once every run of the backfill has finished.
func TestProgressTextCountsFinishedRuns(t *testing.T) {
	b := &scheduler.Backfill{Total: 10, Decided: 10, InFlight: 2}
	if p := progressText(b, time.Second); strings.Contains(p, "100%") || !strings.Contains(p, " 80%") {
		t.Errorf("10 decided, 2 still running: %q", p)
	}
	b.InFlight = 0
	if p := progressText(b, time.Second); !strings.Contains(p, "100%") || !strings.Contains(p, "[##############################]") {
		t.Errorf("all finished: %q", p)
	}
}

func TestParallelWarning(t *testing.T) {
	f := &config.File{Pools: map[string]int{"exports": 2}}
	for _, tc := range []struct {
		job      scheduler.Job
		parallel int
		want     string
	}{
		{scheduler.Job{Name: "a"}, 1, ""},
		{scheduler.Job{Name: "a"}, 4, "its concurrency is 1: at most 1 of the backfill's runs"},
		{scheduler.Job{Name: "a", Concurrency: 5}, 5, ""},
		{scheduler.Job{Name: "a", Concurrency: 5, Pool: "exports"}, 3, "its pool exports has 2 slots: at most 2"},
	} {
		got := parallelWarning(f, tc.job, tc.parallel)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v --parallel %d: %q, want %q", tc.job, tc.parallel, got, tc.want)
		}
	}
}

func TestErrTextDropsThePackagePrefix(t *testing.T) {
	err := fmt.Errorf("%w: from is after to", scheduler.ErrBackfillRange)
	if s := "scheduler backfill: " + errText(err); strings.Contains(s, "scheduler: scheduler") || strings.Count(s, "scheduler") != 1 {
		t.Errorf("%q", s)
	}
}

// Through a daemon's admin API (the embedded store) a backfill's error says
// its message once: "bad backfill range: from ... is after to ...", not
// "bad backfill range (bad backfill range: ...)".
func TestBackfillErrFromTheAdminAPI(t *testing.T) {
	for _, tc := range []struct {
		code     int
		msg      string
		sentinel error
	}{
		{400, "bad backfill range: from (2026-11-27T09:40:31Z) is after to (2026-11-27T09:39:31Z)", scheduler.ErrBackfillRange},
		{409, "a backfill of bf goes on already; DELETE it first", scheduler.ErrBackfillBusy},
		{404, "job bf has no backfill going on", scheduler.ErrNoBackfill},
		{501, "backfill needs a Redis store, not Redlock", scheduler.ErrBackfillUnsupported},
	} {
		err := backfillErr(&apiError{code: tc.code, msg: tc.msg})
		if !errors.Is(err, tc.sentinel) || errText(err) != tc.msg {
			t.Errorf("%d %q: %q (is %v: %v)", tc.code, tc.msg, errText(err), tc.sentinel, errors.Is(err, tc.sentinel))
		}
	}
	if err := backfillErr(&apiError{code: 503, msg: "store unavailable"}); errors.Is(err, scheduler.ErrBackfillRange) {
		t.Errorf("503: %v", err)
	}
}
