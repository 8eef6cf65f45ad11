//go:build linux

package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// modes runs f once with the program started directly and once under a
// supervisor: every behaviour of Command must hold in both.
func modes(t *testing.T, f func(t *testing.T, ctx context.Context)) {
	t.Helper()
	for _, supervised := range []bool{false, true} {
		name := "direct"
		if supervised {
			name = "supervised"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.WithValue(t.Context(), superviseKey{}, supervised)
			ctx = WithLogger(ctx, slog.New(slog.DiscardHandler))
			f(t, ctx)
		})
	}
}

func TestCommandExitStatus(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		if err := helper(t, "exit", "0").Run(ctx); err != nil {
			t.Errorf("exit 0: %v, want nil", err)
		}

		err := helper(t, "exit", "3").Run(ctx)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || ee.Signal != "" {
			t.Errorf("exit 3: %v, want *ExitError with code 3", err)
		}
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != 3 {
			t.Errorf("exit 3: %v does not unwrap to *exec.ExitError with code 3", err)
		}
		if IsPermanent(err) {
			t.Errorf("exit 3: %v is permanent; a failed run may be retried", err)
		}

		err = helper(t, "kill-self").Run(ctx)
		if !errors.As(err, &ee) || ee.Signal != "killed" || ee.Code != -1 {
			t.Errorf("killed: %v (%+v), want *ExitError with signal killed", err, ee)
		}
	})
}

func TestCommandBadInput(t *testing.T) {
	ctx := WithLogger(t.Context(), slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name string
		cmd  *Command
		is   error
	}{
		{"nil args", &Command{}, nil},
		{"empty program", &Command{Args: []string{""}}, nil},
		{"not found", &Command{Args: []string{"solocron-no-such-program"}}, exec.ErrNotFound},
		{"no such path", &Command{Args: []string{"/nonexistent/solocron"}}, os.ErrNotExist},
		{"no such dir", &Command{Args: []string{"/bin/sh", "-c", "true"}, Dir: "/nonexistent/dir"}, os.ErrNotExist},
		{"not executable", &Command{Args: []string{"/etc/passwd"}}, os.ErrPermission},
		{"bad env name", &Command{Args: []string{"/bin/sh"}, Env: map[string]string{"A=B": "c"}}, nil},
		{"NUL in arg", &Command{Args: []string{"/bin/sh", "a\x00b"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cmd.Run(ctx)
			if err == nil || !IsPermanent(err) {
				t.Fatalf("Run: %v, want a permanent error", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Run: %v, want errors.Is %v", err, tc.is)
			}
		})
	}
	// Through the supervisor the start error must be the same.
	t.Run("not executable supervised", func(t *testing.T) {
		ctx := context.WithValue(ctx, superviseKey{}, true)
		err := (&Command{Args: []string{"/etc/passwd"}}).Run(ctx)
		if !IsPermanent(err) || !errors.Is(err, os.ErrPermission) {
			t.Errorf("Run: %v, want a permanent permission error", err)
		}
	})
}

func TestCommandEnvironment(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		scheduled := time.Date(2026, 11, 22, 4, 0, 0, 0, time.FixedZone("CST", 8*3600))
		ctx = NewContext(ctx, Info{
			Job: "lottery", RunID: "lottery@2026-11-21T20:00:00Z", ScheduledAt: scheduled,
			FencingToken: 42, Slot: 3, Attempt: 2, ReplicaID: "replica-a",
		})
		inheritedKey := "PATH" // a variable of ours the child must see
		inherited := inheritedKey + "=" + os.Getenv(inheritedKey)
		c := helper(t, "env", "SOLOCRON_JOB", "SOLOCRON_RUN_ID", "SOLOCRON_SCHEDULED_AT",
			"SOLOCRON_FENCING_TOKEN", "SOLOCRON_ATTEMPT", "SOLOCRON_REPLICA_ID", "SOLOCRON_SLOT",
			"EXTRA", inheritedKey, envSupervisor)
		c.Env["EXTRA"] = "from Env"
		c.Env["SOLOCRON_FENCING_TOKEN"] = "1" // the run's value must win
		c.Dir = dir
		var out syncBuffer
		if err := c.Run(WithOutput(ctx, &out)); err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{
			"SOLOCRON_JOB=lottery",
			"SOLOCRON_RUN_ID=lottery@2026-11-21T20:00:00Z",
			"SOLOCRON_SCHEDULED_AT=2026-11-21T20:00:00Z",
			"SOLOCRON_FENCING_TOKEN=42",
			"SOLOCRON_ATTEMPT=2",
			"SOLOCRON_REPLICA_ID=replica-a",
			"SOLOCRON_SLOT=3",
			"EXTRA=from Env",
			inherited,
			envSupervisor + " unset",
			"cwd=" + dir,
		}, "\n") + "\n"
		if got := out.String(); got != want {
			t.Errorf("child saw:\n%s\nwant:\n%s", got, want)
		}
	})
}

// A job's Env cannot set the supervisor's markers: Validate refuses them
// like the run's variables, and Run (which tolerates them) leaves them out.
// Set, SOLOCRON_JOB_SUPERVISOR would make this program (which calls
// SupervisorMain) take itself for a supervisor, or give the real
// supervisor a wrong parent (a Go program reads the first of two), and
// SOLOCRON_JOB_SUPERVISOR_GORACE would have the supervisor drop the job's
// own GORACE. Either way the program runs as asked, and sees neither.
func TestCommandSupervisorMarkersInEnv(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		c := helper(t, "env", envSupervisor, envSupervisorGorace, "GORACE")
		c.Env[envSupervisor] = "1"
		c.Env[envSupervisorGorace] = "1"
		err := c.Validate()
		for _, k := range []string{envSupervisor, envSupervisorGorace} {
			want := `Env["` + k + `"]: is the scheduler's own`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Validate: %v, want %s", err, want)
			}
		}
		var out syncBuffer
		if err := c.Run(WithOutput(ctx, &out)); err != nil {
			t.Fatalf("Run: %v\noutput: %s", err, out.String())
		}
		want := envSupervisor + " unset\n" + envSupervisorGorace + " unset\nGORACE=" + goraceEnv() + "\n"
		if got := out.String(); !strings.HasPrefix(got, want) {
			t.Errorf("child saw:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestCommandOutputAndLogs(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		var out, logs syncBuffer
		ctx = WithLogger(WithOutput(ctx, &out), slog.New(slog.NewJSONHandler(&logs, nil)))
		c := helper(t, "lines")
		c.LogOutput = slog.LevelInfo // log_output: info
		if err := c.Run(ctx); err != nil {
			t.Fatal(err)
		}

		// Output gets every byte; each stream's bytes in order.
		long := strings.Repeat("a", 4096) + strings.Repeat("b", 4096) + strings.Repeat("c", 1808) + "\n"
		stdout := "out one\nout two\r\n" + long + "no newline at the end"
		got := out.String()
		if withoutErr := strings.Replace(got, "err one\n", "", 1); withoutErr != stdout {
			t.Errorf("output without stderr's line = %q, want %q", withoutErr, stdout)
		}
		if !strings.Contains(got, "err one\n") {
			t.Errorf("output %q lacks stderr's line", got)
		}

		// Logs get one record per line, long lines in 4 KiB pieces.
		type rec struct{ Level, Msg, Stream string }
		var recs []rec
		for line := range strings.Lines(logs.String()) {
			var r rec
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			recs = append(recs, r)
		}
		want := map[rec]bool{
			{"INFO", "out one", "stdout"}:                 true,
			{"INFO", "out two", "stdout"}:                 true,
			{"INFO", strings.Repeat("a", 4096), "stdout"}: true,
			{"INFO", strings.Repeat("b", 4096), "stdout"}: true,
			{"INFO", strings.Repeat("c", 1808), "stdout"}: true,
			{"INFO", "no newline at the end", "stdout"}:   true,
			{"INFO", "err one", "stderr"}:                 true,
		}
		for _, r := range recs {
			if !want[r] {
				t.Errorf("unexpected log record %+.60v", r)
			}
			delete(want, r)
		}
		for r := range want {
			t.Errorf("missing log record %+.60v", r)
		}
	})
}

// TestCommandHugeOutput proves memory stays bounded however much a job
// prints: 200 MB go through a command while the heap grows by far less, and
// the Tail ends with the last bytes written.
func TestCommandHugeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB through a pipe")
	}
	// Not parallel: the memory statistics are the whole process's.
	const total = 200 << 20
	for _, supervised := range []bool{false, true} {
		ctx := context.WithValue(t.Context(), superviseKey{}, supervised)
		tail := NewTail(1024)
		ctx = WithLogger(WithOutput(ctx, tail), slog.New(slog.DiscardHandler))

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := helper(t, "spam", strconv.Itoa(total), "1024").Run(ctx); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)

		allocated := after.TotalAlloc - before.TotalAlloc
		growth := int64(after.HeapInuse) - int64(before.HeapInuse)
		t.Logf("supervised=%v: %d MB in %v; allocated %d KB, heap in use grew %d KB",
			supervised, total>>20, elapsed.Round(time.Millisecond), allocated>>10, growth>>10)
		if allocated > 8<<20 {
			t.Errorf("allocated %d bytes while streaming %d: not bounded", allocated, total)
		}
		if growth > 8<<20 {
			t.Errorf("heap in use grew by %d bytes while streaming %d: not bounded", growth, total)
		}
		got := tail.String()
		if len(got) != 1024 || !strings.HasSuffix(got, "x\nEND-MARKER\n") {
			t.Errorf("tail = %d bytes ending %q, want 1024 ending with the marker", len(got), got[max(0, len(got)-30):])
		}
		if want := int64(total + len("END-MARKER\n") - 1024); tail.Dropped() != want {
			t.Errorf("tail dropped %d bytes, want %d", tail.Dropped(), want)
		}
	}
}

// startTree runs a Command whose program starts a grandchild, waits until
// both are up, and returns them with the channel Run's error arrives on.
func startTree(t *testing.T, ctx context.Context, c *Command, dir string) (child, grandchild proc, errc chan error) {
	t.Helper()
	errc = make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	child = readPid(t, filepath.Join(dir, "child"))
	grandchild = readPid(t, filepath.Join(dir, "grandchild"))
	return child, grandchild, errc
}

func waitRun(t *testing.T, errc chan error, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(timeout):
		t.Fatalf("Run did not return within %v", timeout)
		return nil
	}
}

func TestCommandTimeoutKillsGroup(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		// Long enough for the tree to start under -race on a busy machine.
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		child, grandchild, errc := startTree(t, ctx, helper(t, "tree", dir), dir)
		err := waitRun(t, errc, 30*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run: %v, want it to wrap context.DeadlineExceeded", err)
		}
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Signal != "terminated" {
			t.Errorf("Run: %v, want an *ExitError for SIGTERM joined", err)
		}
		waitDead(t, child, grandchild)
	})
}

func TestCommandCancelCause(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		myCause := errors.New("lease lost")
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		child, grandchild, errc := startTree(t, ctx, helper(t, "tree", dir), dir)
		cancel(myCause)
		err := waitRun(t, errc, 30*time.Second)
		if !errors.Is(err, myCause) {
			t.Errorf("Run: %v, want it to wrap the cause", err)
		}
		if IsPermanent(err) {
			t.Errorf("Run: %v is permanent", err)
		}
		waitDead(t, child, grandchild)
	})
}

func TestCommandNotStartedWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	myCause := errors.New("shutting down")
	cancel(myCause)
	dir := t.TempDir()
	err := helper(t, "tree", dir).Run(ctx)
	if !errors.Is(err, myCause) {
		t.Errorf("Run: %v, want it to wrap the cause", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "child")); statErr == nil {
		t.Error("the program ran although the context was done")
	}
}

func TestCommandKillGrace(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		const grace = 500 * time.Millisecond
		var out syncBuffer
		ctx, cancel := context.WithCancel(WithOutput(ctx, &out))
		defer cancel()
		c := helper(t, "trap")
		c.KillGrace = grace
		errc := make(chan error, 1)
		go func() { errc <- c.Run(ctx) }()
		waitFor(t, 30*time.Second, "the trap to be set", func() bool { return strings.Contains(out.String(), "ready") })

		cancel()
		start := time.Now()
		err := waitRun(t, errc, 30*time.Second)
		elapsed := time.Since(start)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Signal != "killed" {
			t.Errorf("Run: %v, want an *ExitError for SIGKILL", err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v, want it to wrap context.Canceled", err)
		}
		if elapsed < grace-50*time.Millisecond {
			t.Errorf("SIGKILL after %v, before the %v grace", elapsed, grace)
		}
		if elapsed > grace+10*time.Second {
			t.Errorf("Run returned %v after cancel; grace was %v", elapsed, grace)
		}
		// SIGTERM came first, and exactly once (the supervisor must not
		// deliver a second copy).
		if n := strings.Count(out.String(), "TERM"); n != 1 {
			t.Errorf("program saw SIGTERM %d times, want 1; output %q", n, out.String())
		}
	})
}

func TestCommandLeftoversAreKilled(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		var out syncBuffer
		c := helper(t, "orphan", dir)
		c.KillGrace = time.Minute // leftovers die of SIGTERM, long before
		errc := make(chan error, 1)
		go func() { errc <- c.Run(WithOutput(ctx, &out)) }()
		grandchild := readPid(t, filepath.Join(dir, "grandchild"))
		// The grandchild holds stdout open; Run must neither hang on it
		// nor leave it running.
		if err := waitRun(t, errc, 30*time.Second); err != nil {
			t.Errorf("Run: %v", err)
		}
		waitDead(t, grandchild)
		if !strings.Contains(out.String(), "leader done") {
			t.Errorf("output %q lacks the leader's line", out.String())
		}
	})
}

func TestCommandLeftoverIgnoringTerm(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		c := helper(t, "orphan", dir, "ignore-term")
		c.KillGrace = 300 * time.Millisecond
		errc := make(chan error, 1)
		go func() { errc <- c.Run(ctx) }()
		grandchild := readPid(t, filepath.Join(dir, "grandchild"))
		if err := waitRun(t, errc, 30*time.Second); err != nil {
			t.Errorf("Run: %v", err)
		}
		waitDead(t, grandchild)
	})
}

func TestCommandEscapedHolderDoesNotHang(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		dir := t.TempDir()
		var logs syncBuffer
		ctx = WithLogger(ctx, slog.New(slog.NewTextHandler(&logs, nil)))
		errc := make(chan error, 1)
		start := time.Now()
		c := helper(t, "orphan", dir, "setsid")
		c.KillGrace = 300 * time.Millisecond // how long Run waits for group members holding the output
		go func() { errc <- c.Run(ctx) }()
		grandchild := readPid(t, filepath.Join(dir, "grandchild")) // killed by its cleanup
		if err := waitRun(t, errc, c.KillGrace+drainWait+20*time.Second); err != nil {
			t.Errorf("Run: %v", err)
		}
		if elapsed := time.Since(start); elapsed < drainWait {
			t.Errorf("Run returned after %v, before giving the output %v to drain", elapsed, drainWait)
		}
		if !grandchild.alive() {
			t.Error("a process outside the group was killed") // it left the group: not ours
		}
		if !strings.Contains(logs.String(), "output still held open") {
			t.Errorf("no warning logged; logs:\n%s", logs.String())
		}
	})
}

// TestCommandSurvivesThreadExit: the parent-death signal fires when the
// thread that forked the child exits (go.dev/issue/27505), and Go ends a
// thread whenever a goroutine locked to it returns. Threads ending elsewhere
// in the replica must not kill a running job. Not parallel: it sets a hook
// that parks the goroutine that started the program, which leaves the
// forking thread idle for other goroutines unless it is locked.
func TestCommandSurvivesThreadExit(t *testing.T) {
	for _, supervised := range []bool{false, true} {
		dir := t.TempDir()
		ctx := context.WithValue(t.Context(), superviseKey{}, supervised)
		ctx, cancel := context.WithCancel(WithLogger(ctx, slog.New(slog.DiscardHandler)))
		release := make(chan struct{})
		testHookStarted = func() { <-release }
		child, grandchild, errc := startTree(t, ctx, helper(t, "tree", dir), dir)
		for range 20 {
			tid := make(chan int)
			go func() {
				runtime.LockOSThread()
				tid <- syscall.Gettid()
				// Returning while locked makes the runtime end the thread.
			}()
			id := <-tid
			if id == os.Getpid() {
				continue // the main thread is parked, never ended
			}
			waitFor(t, 10*time.Second, "a thread to end", func() bool {
				_, err := os.Stat(filepath.Join("/proc/self/task", strconv.Itoa(id)))
				return err != nil
			})
		}
		close(release)
		if !child.alive() || !grandchild.alive() {
			t.Errorf("supervised=%v: job killed by threads ending: child alive %v, grandchild alive %v",
				supervised, child.alive(), grandchild.alive())
		}
		cancel()
		_ = waitRun(t, errc, 30*time.Second)
		testHookStarted = nil
	}
}

// TestSupervisorIgnoresSpuriousParentDeath: a parent-death signal while the
// parent is alive (a thread of it ended, go.dev/issue/27505) must not end the
// job.
func TestSupervisorIgnoresSpuriousParentDeath(t *testing.T) {
	dir := t.TempDir()
	ctx := context.WithValue(t.Context(), superviseKey{}, true)
	ctx = WithLogger(ctx, slog.New(slog.DiscardHandler))
	child, grandchild, errc := startTree(t, ctx, helper(t, "tree", dir), dir)
	supervisor := child.ppid
	// The supervisor handles its signals in the order the runtime delivers
	// them, lowest number first: SIGUSR2 (12) is dealt with before SIGTERM
	// (15). Had SIGUSR2 killed the group, Run would report SIGKILL; it must
	// report the forwarded SIGTERM instead.
	for _, sig := range []syscall.Signal{parentDeathSignal, syscall.SIGTERM} {
		if err := syscall.Kill(supervisor, sig); err != nil {
			t.Fatal(err)
		}
	}
	err := waitRun(t, errc, 30*time.Second)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != "terminated" {
		t.Errorf("Run: %v, want the program's death by the forwarded SIGTERM", err)
	}
	waitDead(t, child, grandchild)
}

// waitDead waits until every process in ps has died. A SIGKILL is sent
// before Run returns, but dying takes the target a moment.
func waitDead(t *testing.T, ps ...proc) {
	t.Helper()
	for _, p := range ps {
		waitFor(t, 10*time.Second, "pid "+strconv.Itoa(p.pid)+" to die", func() bool { return !p.alive() })
	}
}

// TestCommandEnvironmentAllowlist: a job inherits only the allowed few of
// the scheduler's variables, never its secrets; Env still passes what the
// table names. (Not parallel: it sets the process's environment.)
func TestCommandEnvironmentAllowlist(t *testing.T) {
	t.Setenv("SOLOCRON_ADMIN_TOKEN", "admin-token-secret")
	t.Setenv("REDIS_URL", "redis://:store-password@127.0.0.1:1/0")
	t.Setenv("LC_TIME", "C")
	t.Setenv("TZ", "UTC")
	// Markers in the scheduler's own environment (a replica started from
	// a job, say) reach neither the supervisor, which would take a wrong
	// parent, nor the program.
	t.Setenv(envSupervisor, "1")
	t.Setenv(envSupervisorGorace, "1")
	for _, supervised := range []bool{false, true} {
		ctx := context.WithValue(t.Context(), superviseKey{}, supervised)
		ctx = WithLogger(ctx, slog.New(slog.DiscardHandler))
		c := helper(t, "env", "SOLOCRON_ADMIN_TOKEN", "REDIS_URL", "LC_TIME", "TZ", "PATH", "NAMED", envSupervisorGorace, envSupervisor)
		c.Env["NAMED"] = "given by the table"
		var out syncBuffer
		if err := c.Run(WithOutput(ctx, &out)); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, want := range []string{"SOLOCRON_ADMIN_TOKEN unset\n", "REDIS_URL unset\n", "LC_TIME=C\n", "TZ=UTC\n",
			"PATH=" + os.Getenv("PATH") + "\n", "NAMED=given by the table\n", envSupervisorGorace + " unset\n", envSupervisor + " unset\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("supervised=%v: child saw\n%s\nwant a line %q", supervised, got, want)
			}
		}
	}
}

// TestCommandOutputLogLevel: by default a job's output is logged at Debug,
// so an Info log never carries it; LogOutput raises it.
func TestCommandOutputLogLevel(t *testing.T) {
	modes(t, func(t *testing.T, ctx context.Context) {
		for _, tc := range []struct {
			level   slog.Leveler
			handler slog.Level
			want    string // the level of "out one", or "" for none
		}{
			{nil, slog.LevelInfo, ""},
			{nil, slog.LevelDebug, "DEBUG"},
			{slog.LevelInfo, slog.LevelInfo, "INFO"},
		} {
			var logs syncBuffer
			ctx := WithLogger(ctx, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: tc.handler})))
			c := helper(t, "lines")
			c.LogOutput = tc.level
			if err := c.Run(ctx); err != nil {
				t.Fatal(err)
			}
			got := ""
			for line := range strings.Lines(logs.String()) {
				var r struct{ Level, Msg string }
				if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "out one" {
					got = r.Level
				}
			}
			if got != tc.want {
				t.Errorf("LogOutput %v, logger at %v: \"out one\" logged at %q, want %q", tc.level, tc.handler, got, tc.want)
			}
		}
	})
}
