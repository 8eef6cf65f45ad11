package jobs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const supervisorSupported = true

// parentDeathSignal is the supervisor's parent-death signal. It is caught,
// not fatal, so that the supervisor can kill the whole group (the kernel
// would only kill the supervisor) and can ignore it when getppid shows the
// parent is in fact alive (a thread of the parent ended, go.dev/issue/27505).
const parentDeathSignal = syscall.SIGUSR2

// forwardedSignals are passed on from the supervisor to the rest of the
// job's process group.
var forwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1}

// SupervisorMain makes whole-group cleanup on replica death available to
// Command. Call it first thing in main, before flag parsing or any other
// work:
//
//	func main() {
//		jobs.SupervisorMain()
//		...
//	}
//
// In a process started by Command as a job supervisor (a re-execution of the
// same binary marked by the SOLOCRON_JOB_SUPERVISOR environment variable)
// it runs the supervisor and exits with the job's status; it never returns.
// In any other process it returns at once and from then on Command.Run
// starts programs under a supervisor. See the package documentation for what
// that buys. Outside Linux it does nothing.
func SupervisorMain() {
	parent, ok := os.LookupEnv(envSupervisor)
	if !ok {
		if _, err := os.Stat(selfExe); err == nil { // no /proc, no re-execution
			supervisorAvailable.Store(true)
		}
		return
	}
	os.Exit(supervise(parent, os.Args[1:]))
}

// supervise is the supervisor: started by Command.Run as the leader of a new
// process group, with fd 3 a pipe to report a failure to start, and args
// the path to execute followed by the program's argv. It returns the exit
// status to exit with, or dies by the signal that killed the program.
func supervise(parent string, args []string) int {
	// Catch signals before anything else. A SIGTERM that arrives earlier
	// kills the supervisor, which is fine: nothing is started yet.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append([]os.Signal{parentDeathSignal}, forwardedSignals...)...)

	syscall.CloseOnExec(3) // the program must not hold the report pipe open
	report := os.NewFile(3, "report")
	syscall.CloseOnExec(4) // nor the stop-by pipe
	stopBy := os.NewFile(4, "stop-by")
	fail := func(err error) int {
		var errno syscall.Errno
		errors.As(err, &errno)
		_, _ = fmt.Fprintf(report, "%d %v", int(errno), err)
		_ = report.Close()
		return 127
	}
	ppid, err := strconv.Atoi(parent)
	if err != nil || len(args) < 2 {
		return fail(errors.New("bad invocation"))
	}
	orphaned := func() bool { return os.Getppid() != ppid }
	if orphaned() {
		// The parent died before the parent-death signal was armed, or
		// before it could be caught: nobody is left to wait for the job.
		_ = syscall.Kill(0, syscall.SIGKILL)
		return 128 + int(syscall.SIGKILL)
	}

	var (
		mu      sync.Mutex
		started bool
		pending syscall.Signal // a forwardable signal received before the start
		fwd     sync.Mutex     // one signal passed on to the group at a time
		termed  atomic.Bool    // a SIGTERM was passed on: the program was asked to stop
	)
	// toGroup gives every other member of the group sig exactly once: it is
	// ignored here while kill(0, sig) runs, so the supervisor does not
	// receive (and forward) its own copy. No fork happens in this process
	// any more, so the ignored disposition cannot leak into a child.
	toGroup := func(sig syscall.Signal) {
		fwd.Lock()
		defer fwd.Unlock()
		signal.Ignore(sig)
		_ = syscall.Kill(0, sig)
		signal.Notify(sigs, sig)
		if sig == syscall.SIGTERM {
			termed.Store(true)
		}
	}
	go func() {
		for s := range sigs {
			sig := s.(syscall.Signal)
			if sig == parentDeathSignal {
				if orphaned() {
					_ = syscall.Kill(0, syscall.SIGKILL) // the whole group, us included
				}
				continue // a thread of the parent ended, or a stray signal
			}
			mu.Lock()
			if !started {
				if pending == 0 {
					pending = sig
				}
				mu.Unlock()
				continue
			}
			mu.Unlock()
			toGroup(sig)
		}
	}()

	env := programEnv(os.Environ())
	// The program's own parent-death signal (SIGKILL, if the supervisor is
	// killed) is tied to this thread. This goroutine ends the process, so
	// it never unlocks.
	runtime.LockOSThread()
	mu.Lock()
	if pending != 0 {
		mu.Unlock()
		dieBySignal(pending)
	}
	p, err := os.StartProcess(args[0], args[1:], &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		mu.Unlock()
		return fail(err)
	}
	started = true
	mu.Unlock()
	_ = report.Close()
	go watchStopBy(stopBy, toGroup, &termed)

	state, err := p.Wait()
	if err != nil {
		_, _ = fmt.Fprintf(os.Stderr, "%s: %v\n", supervisorArg0, err)
		return 127
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		dieBySignal(ws.Signal())
	}
	return state.ExitCode()
}

// watchStopBy stops the program on its own when the time its parent gives
// on in (Command.sendStopBy, jobs.WithStopBy) comes: SIGTERM to the group
// the kill grace before it, SIGKILL to the whole group (the supervisor
// included: its parent then sees the program killed) at it. The parent may
// be frozen meanwhile; this process is not. A later time moves the deadline
// until SIGTERM is sent. Nothing is watched until a first time comes, and
// the last one stands when the parent closes the pipe (the program ended)
// or dies (the parent-death signal ends the group then).
//
// When the parent already had SIGTERM passed on (a live replica stops the
// job itself when it loses the lease, a kill grace before its own SIGKILL),
// no second SIGTERM goes: a program that takes a second one as "quit now"
// would lose the rest of its grace. SIGKILL still comes at the deadline.
func watchStopBy(in *os.File, toGroup func(syscall.Signal), termed *atomic.Bool) {
	var goneBy, grace atomic.Int64
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			a, b, ok := strings.Cut(sc.Text(), " ")
			t, err1 := strconv.ParseInt(a, 10, 64)
			g, err2 := strconv.ParseInt(b, 10, 64)
			if !ok || err1 != nil || err2 != nil || t <= 0 || g < 0 {
				continue
			}
			grace.Store(g)
			goneBy.Store(t)
		}
	}()
	tick := time.NewTicker(stopByCheck)
	defer tick.Stop()
	var killAt int64
	for range tick.C {
		now := monoNow()
		if killAt == 0 {
			if t := goneBy.Load(); t > 0 && now >= t-grace.Load() {
				killAt = t
				if termed.Load() {
					continue // asked to stop already; SIGKILL at the deadline
				}
				_, _ = fmt.Fprintf(os.Stderr, "%s: the run's lease is about to end and its replica has not stopped the job (frozen or stalled?): stopping it (SIGTERM, then SIGKILL after the kill grace)\n", supervisorArg0)
				toGroup(syscall.SIGTERM)
			}
			continue
		}
		if now >= killAt {
			_ = syscall.Kill(0, syscall.SIGKILL)
			return
		}
	}
}

// stopByCheck is how often the supervisor looks at the clock for watchStopBy.
const stopByCheck = 20 * time.Millisecond

// monoNow is CLOCK_MONOTONIC in nanoseconds: one clock for every process of
// the machine, which neither a wall clock step nor a frozen process moves.
func monoNow() int64 {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// dieBySignal ends the process by sig, so the supervisor's parent sees the
// same death as the program's. Go's runtime would otherwise treat some
// signals its own way (SIGQUIT dumps goroutines, a SIGSEGV sent by kill is
// ignored), so the disposition is reset in the kernel directly.
func dieBySignal(sig syscall.Signal) {
	// A program's crash should not leave a core file of the supervisor.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	var act [8]uint64 // an all-zero struct sigaction is SIG_DFL, no flags, empty mask
	const sigsetSize = 8
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, sigsetSize, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	// Still here: the signal does not end a process by default (or could
	// not be reset). Exit the way a shell reports a death by signal.
	time.Sleep(time.Second)
	os.Exit(128 + int(sig))
}
