//go:build unix

package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// run starts argv (argv[0] is the resolved path) with env and supervises it
// until the end of the kill sequence described in the package documentation:
// the child's files, its start, its output read, its process group stopped
// (phases 1 and 2), the leader reaped (phase 3), and the error it ends with.
func (c *Command) run(ctx context.Context, argv, env []string) error {
	name := c.Args[0]
	supervised := useSupervisor(ctx)
	f, err := openChildFiles(supervised)
	if err != nil {
		return startError(name, err)
	}
	w, err := c.start(argv, env, supervised, f)
	if err != nil {
		return startError(name, err)
	}
	if f.stopBy != nil {
		go c.sendStopBy(stopByFrom(ctx), f.stopBy, w.exited)
	}
	report, drained := c.read(ctx, f, supervised)
	stopped := c.stopGroup(ctx, w, supervised, drained)
	reap(ctx, name, w, f, drained)
	return result(ctx, name, argv[0], w, *report, stopped)
}

// childFiles are a command's files: the child's ends (stdin is /dev/null;
// stdout, stderr and, supervised, the supervisor's fd 3 are pipes), which
// the parent closes once the child started, and ours, the pipes' read ends.
type childFiles struct {
	child []*os.File
	ours  []*os.File // stdout, stderr[, the supervisor's report]
	// stopBy, supervised, is the write end of the supervisor's fd 4, where
	// sendStopBy tells it when to stop the program on its own.
	stopBy *os.File
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// openChildFiles opens a command's files; on an error none stays open.
func openChildFiles(supervised bool) (*childFiles, error) {
	f := &childFiles{}
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	f.child = append(f.child, stdin)
	pipe := func() error {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		f.ours, f.child = append(f.ours, r), append(f.child, w)
		return nil
	}
	err = pipe() // stdout
	if err == nil {
		err = pipe() // stderr
	}
	if err == nil && supervised {
		err = pipe() // the supervisor's fd 3
	}
	if err == nil && supervised {
		var r *os.File
		if r, f.stopBy, err = os.Pipe(); err == nil {
			f.child = append(f.child, r) // the supervisor's fd 4
		}
	}
	if err != nil {
		closeAll(f.child)
		closeAll(f.ours)
		if f.stopBy != nil {
			_ = f.stopBy.Close()
		}
		return nil, err
	}
	return f, nil
}

// start starts the child (through the supervisor when supervised) and
// closes the parent's copies of the child's ends; on an error ours are
// closed too.
func (c *Command) start(argv, env []string, supervised bool, f *childFiles) (*waiter, error) {
	path, args := argv[0], append([]string{c.Args[0]}, argv[1:]...)
	if supervised {
		args = append([]string{supervisorArg0, path}, args...)
		path = selfExe
		env = append(env, envSupervisor+"="+strconv.Itoa(os.Getpid()))
		env = supervisorGorace(env)
	}
	w := startWaiter(path, args, &os.ProcAttr{
		Dir:   c.Dir,
		Env:   env,
		Files: f.child,
		Sys:   sysProcAttr(supervised),
	})
	startErr := <-w.started
	closeAll(f.child)
	if startErr != nil {
		closeAll(f.ours)
		if f.stopBy != nil {
			_ = f.stopBy.Close()
		}
		return nil, startErr
	}
	return w, nil
}

// sendStopBy tells the supervisor (on out, its fd 4) when to stop the
// program on its own (WithStopBy): at once, and each time the time moves, a
// line "<time on CLOCK_MONOTONIC, ns> <kill grace, ns>", until the leader
// exits. Without stopBy it closes out at once and the supervisor watches
// nothing. The clock is read before the time left is: a stall between the
// two makes the deadline earlier, never later.
func (c *Command) sendStopBy(stopBy *StopBy, out *os.File, exited <-chan struct{}) {
	defer out.Close()
	if stopBy == nil {
		return
	}
	grace := c.killGrace()
	var last time.Time
	for {
		t, changed := stopBy.get()
		if !t.IsZero() && !t.Equal(last) {
			last = t
			now := monoNow()
			goneBy := now + int64(time.Until(t))
			if _, err := fmt.Fprintf(out, "%d %d\n", goneBy, int64(grace)); err != nil {
				return // the supervisor is gone
			}
		}
		select {
		case <-exited:
			return
		case <-changed:
		}
	}
}

// read reads the output until every writer has closed it: drained is
// closed then, and only then may *report (the supervisor's start error, if
// any) be read.
func (c *Command) read(ctx context.Context, f *childFiles, supervised bool) (report *[]byte, drained <-chan struct{}) {
	s := &streamer{ctx: ctx, out: Output(ctx), logger: Logger(ctx), level: c.logLevel()}
	var readers sync.WaitGroup
	readers.Go(func() { s.copy(f.ours[0], "stdout") })
	readers.Go(func() { s.copy(f.ours[1], "stderr") })
	report = new([]byte)
	if supervised {
		readers.Go(func() { *report, _ = io.ReadAll(io.LimitReader(f.ours[2], 4096)) })
	}
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	return report, done
}

// stopGroup waits for the leader (the program, or its supervisor) to exit,
// terminating the group if ctx ends first (phase 1), then terminates what
// the leader left in its group (phase 2). It reports whether ctx was done
// before the leader exited.
func (c *Command) stopGroup(ctx context.Context, w *waiter, supervised bool, drained <-chan struct{}) (stopped bool) {
	pid := w.proc.Pid

	// Phase 1: until the leader (the program, or its supervisor) exits.
	// On Linux the leader is not reaped before phase 3, so its pid still
	// names the group and signalling -pid cannot reach anyone else.
	grace := c.killGrace()
	var (
		killTime <-chan time.Time
		done     = ctx.Done()
	)
	timer := time.NewTimer(grace)
	timer.Stop()
	defer timer.Stop()
wait:
	for {
		select {
		case <-done:
			done, stopped = nil, true
			if supervised {
				// The supervisor passes it on to the rest of the group.
				signalPid(pid, syscall.SIGTERM)
			} else {
				signalPid(-pid, syscall.SIGTERM)
			}
			timer.Reset(grace)
			killTime = timer.C
		case <-killTime:
			killTime = nil
			signalPid(-pid, syscall.SIGKILL)
		case <-w.exited:
			break wait
		}
	}

	// Phase 2: the leader is gone; whatever it left in its group is
	// terminated too, so that a finished run leaves nothing behind doing its
	// work. Wait for the output to close (everyone gone) or the grace. Not
	// if the leader could not be waited for unreaped (someone else reaped
	// it): its number may already name another group.
	if canWaitNoReap && w.waitErr == nil {
		if !stopped {
			signalPid(-pid, syscall.SIGTERM)
			timer.Reset(grace)
			killTime = timer.C
		}
		if killTime != nil {
			select {
			case <-drained:
			case <-killTime:
			}
		}
		signalPid(-pid, syscall.SIGKILL)
	}
	return stopped
}

// reap reaps the leader, then stops reading if a process that left the
// group (setsid) still holds the pipes (phase 3).
func reap(ctx context.Context, name string, w *waiter, f *childFiles, drained <-chan struct{}) {
	close(w.reap)
	<-w.done
	select {
	case <-drained:
	case <-time.After(drainWait):
		closeAll(f.ours) // unblocks the readers
		<-drained
		Logger(ctx).WarnContext(ctx, "jobs: command output still held open by a process outside the job's process group; stopped reading",
			"command", name)
	}
	closeAll(f.ours)
}

// result is the error a reaped command ends with: the supervisor's start
// error, else the exit status, wrapped in ctx's cause if it was stopped.
func result(ctx context.Context, name, path string, w *waiter, report []byte, stopped bool) error {
	var exitErr error
	switch {
	case w.err != nil:
		exitErr = fmt.Errorf("jobs: command %s: %w", name, w.err)
	case !w.state.Success():
		exitErr = newExitError(w.state)
	}
	if len(report) > 0 {
		return startError(name, parseReport(path, report))
	}
	if stopped {
		cause := context.Cause(ctx)
		if exitErr != nil {
			return fmt.Errorf("jobs: command %s stopped (%w): %w", name, cause, exitErr)
		}
		return fmt.Errorf("jobs: command %s stopped: %w", name, cause)
	}
	return exitErr
}

// waiter owns a child process on one locked OS thread, from start to reap.
type waiter struct {
	started chan error    // receives nil or the start error, once
	proc    *os.Process   // set before a nil is sent on started
	exited  chan struct{} // closed when the leader has exited
	reap    chan struct{} // closed by Run: the waiter may reap now
	done    chan struct{} // closed once reaped; state and err are set
	waitErr error         // set before exited is closed: waiting without reaping failed
	state   *os.ProcessState
	err     error
}

func startWaiter(path string, args []string, attr *os.ProcAttr) *waiter {
	w := &waiter{
		started: make(chan error, 1),
		exited:  make(chan struct{}),
		reap:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go func() {
		// The parent-death signal is tied to the thread that forks the
		// child, not to the process (go.dev/issue/27505): it fires when that
		// thread exits. Go ends a thread only when a goroutine locked to it
		// returns without unlocking. Locking this goroutine from before the
		// fork until after the reap means no other goroutine ever runs on
		// (and so can end) the forking thread while the child lives, and
		// this one unlocks before returning. The thread would be blocked in
		// wait anyway, so this costs nothing extra.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p, err := os.StartProcess(path, args, attr)
		if err != nil {
			w.started <- err
			return
		}
		w.proc = p
		w.started <- nil
		if testHookStarted != nil {
			testHookStarted()
		}
		if canWaitNoReap {
			w.waitErr = waitExited(p.Pid) // if it fails, Wait below says why
			close(w.exited)
			<-w.reap
			w.state, w.err = p.Wait()
		} else {
			w.state, w.err = p.Wait()
			close(w.exited)
			<-w.reap
		}
		close(w.done)
	}()
	return w
}

// testHookStarted, when set by a test, runs on the waiter's goroutine
// right after the program has started.
var testHookStarted func()

// signalPid sends sig to pid (a group when negative). The caller guarantees
// the leader is not reaped yet, so the number cannot have been reused. ESRCH
// (nobody left) is expected and ignored.
func signalPid(pid int, sig syscall.Signal) { _ = syscall.Kill(pid, sig) }

func newExitError(state *os.ProcessState) *ExitError {
	e := &ExitError{Code: state.ExitCode(), Err: &exec.ExitError{ProcessState: state}}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Code, e.Signal = -1, ws.Signal().String()
	}
	return e
}

// startError wraps an error from starting a program. Running out of
// processes, memory or descriptors may pass; anything else (no such file,
// permission denied, not an executable, a bad Dir) will not, so it is
// Permanent.
func startError(name string, err error) error {
	err = fmt.Errorf("jobs: command %s: %w", name, err)
	for _, transient := range []error{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE} {
		if errors.Is(err, transient) {
			return err
		}
	}
	return Permanent(err)
}

// parseReport turns the supervisor's report ("<errno> <message>") back into
// the error os.StartProcess would have returned without a supervisor.
func parseReport(path string, report []byte) error {
	num, msg, _ := strings.Cut(string(report), " ")
	if n, err := strconv.Atoi(num); err == nil && n > 0 {
		return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	}
	return errors.New(msg)
}
