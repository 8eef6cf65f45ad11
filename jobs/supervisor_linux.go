package jobs

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
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
	)
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
			// Every other member of the group gets sig exactly once: it is
			// ignored here while kill(0, sig) runs, so the supervisor does
			// not receive (and forward) its own copy. No fork happens in
			// this process any more, so the ignored disposition cannot leak
			// into a child.
			signal.Ignore(sig)
			_ = syscall.Kill(0, sig)
			signal.Notify(sigs, sig)
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
