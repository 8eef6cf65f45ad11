// Package jobs holds what a Solocron run executes: an external command, an
// HTTP request or a Go function, all behind one small interface, Job. It
// needs only the standard library; the scheduler decides when a run happens
// and which replica runs it, and this package runs it.
//
// # Jobs and runs
//
// A Job is anything with Run(ctx) error. The scheduler calls Run once per
// attempt of a run; nil means success, an error means failure, and the
// context ending means the run must stop. What a run knows about itself
// travels in that context as an Info (read it with FromContext or the
// accessors RunID, ScheduledAt, FencingToken, Attempt and ReplicaID), with
// two more values set per run:
//
//   - Output(ctx), an io.Writer for what the job prints (the scheduler passes
//     a Tail, so the run record keeps the last few KiB), io.Discard if unset;
//   - Logger(ctx), a *slog.Logger that already names the job and run,
//     slog.Default() if unset.
//
// There are three kinds of job:
//
//   - Func adapts a Go function, as http.HandlerFunc does. The function gets
//     the context and everything in it. A panic is recovered and returned as
//     a *PanicError with the stack, so a bad job fails its run instead of
//     taking the replica (and every other job on it) down.
//   - Command runs a program: argv, no shell (write sh -c yourself if you
//     want one), in a process group of its own, stdin /dev/null, with an
//     environment built from a short allowlist of the scheduler's variables
//     plus Env. See below for its environment, output, and how it is stopped.
//   - HTTP sends one request and checks the status (any 2xx, or
//     ExpectStatus). Timeout (default DefaultHTTPTimeout, 1m) and the
//     context bound it. Redirects are followed to the same host only, never
//     from https to http, unless FollowRedirects says all (or none); a
//     refused redirect fails the run with a *RedirectError. The first 4 KiB
//     of the response go to Output(ctx); up to 64 KiB more are read and
//     discarded so the connection can be reused, and no more is read.
//
// # What a job is told
//
// A command's environment is built, never copied from the scheduler's, which
// holds the scheduler's own secrets (its admin token, its store's password):
//
//  1. the scheduler's PATH, HOME, USER, LOGNAME, SHELL, TMPDIR, TZ, LANG,
//     LANGUAGE and LC_* (see Inherited), when set;
//  2. Env, over those: whatever else the job needs, credentials included,
//     named there;
//  3. the run's identity, over both.
//
// A command finds the run in its environment; these win over Env and over
// the inherited variables:
//
//	SOLOCRON_JOB             the job's name
//	SOLOCRON_RUN_ID          <job>@<scheduled time, UTC, RFC 3339>, or <job>@manual-<id>
//	SOLOCRON_SCHEDULED_AT    the scheduled instant, RFC 3339 in UTC, whole seconds
//	SOLOCRON_FENCING_TOKEN   the fencing token, a decimal integer
//	SOLOCRON_ATTEMPT         1 for the first attempt, 2 for the first retry, ...
//	SOLOCRON_REPLICA_ID      the replica running it
//	SOLOCRON_SLOT            the concurrency slot it holds, 1..the job's concurrency
//
// An HTTP request carries Idempotency-Key: <run id>, Solocron-Fencing-Token:
// <token> and Solocron-Fencing-Slot: <slot>, replacing configured headers of
// the same name. ReservedEnv and ReservedHeader report these names;
// Command.Validate and HTTP.Validate (which the scheduler runs on every job,
// and config reports at the YAML line) refuse them in Env and Headers. (Without an Info in the context, as when a program calls Run
// itself, neither the variables nor the headers are added.)
//
// When the run's span is traced, the job also gets the run's trace context
// (WithTraceContext): an HTTP request carries traceparent and tracestate, a
// command finds TRACEPARENT and TRACESTATE in its environment
// (OpenTelemetry's environment carrier), and a Go function reads
// TraceContext(ctx). Whatever the job does next joins the run's trace.
//
// # The fencing token
//
// Solocron's lease lives in Redis and can be lost at any moment: a network
// partition, a long GC pause, a Redis failover. The scheduler cancels the
// run's context when it notices, but a job may already be past its last
// check of ctx, and by then another replica may legitimately be running the
// next attempt. Timing alone cannot prevent two writers; the fencing token
// can. It strictly increases per job across runs and attempts, so a store
// that remembers the highest token it has accepted and refuses anything
// lower (UPDATE ... SET token = $t WHERE token <= $t, a conditional put, a check in
// the receiving service) turns a stale run into a rejected write instead of a
// lost update. The run id as Idempotency-Key lets a receiver de-duplicate
// the attempts of one run.
//
// # Errors and retries
//
// A run's retry policy retries any error except one marked Permanent
// (test with IsPermanent). The package marks as permanent what another
// attempt cannot fix: empty Args, a program that cannot be found or executed,
// a bad Dir, a malformed URL, and an HTTP status other than 5xx, 408 and 429.
// A command's non-zero exit is a *ExitError (the code, or the signal that
// killed it); an unexpected HTTP status is a *StatusError (with a snippet of
// the body). When the context ends a run, the error wraps
// context.Cause(ctx), so errors.Is tells a timeout (context.DeadlineExceeded)
// from a lost lease or a shutdown by the cause the scheduler gave.
//
// # A command's output
//
// Stdout and stderr are read as they are written, never accumulated: each
// line goes to Logger(ctx) at Command.LogOutput's level (Debug by default: a
// job's output may carry what it should not, and stays out of an Info log
// unless asked for), the line as the message and
// stream=stdout or stream=stderr, and the raw bytes go to Output(ctx). Lines
// longer than 4 KiB are logged in 4 KiB pieces. Memory stays at a few KiB
// per run however much the program prints; the writer and logger you supply
// decide the rest (a Tail is bounded; a disabled logger costs nothing).
//
// # Stopping a command
//
// When the run's context ends (timeout, lost lease, shutdown, a replacing
// run), Run sends SIGTERM to the program's whole process group, waits
// KillGrace (default 10s), then sends SIGKILL to the group.
//
// When the program exits by itself, anything it left running in its process
// group (a background "worker &") is the run's too and must not keep working
// after the run is recorded as finished: the group gets SIGTERM, then
// SIGKILL once the output pipes are closed or KillGrace has passed, whichever
// is first, much as systemd treats a service's leftovers. A process that deliberately
// left the group (setsid, a daemon) is not touched; if it keeps the output
// pipes open, Run stops reading 2s after the group is gone and logs a warning.
//
// Run returns only after all this: the program has exited, its group has
// been killed and its output read. Signalling a group by number is safe only
// while that number cannot name another group; Run keeps the program (the
// group's leader) unreaped until it is done signalling (waitid with
// WNOWAIT), so its pid stays reserved.
//
// # When the replica dies
//
// A replica killed with SIGKILL cannot clean up, so the kernel has to. On
// Linux every program is started with a parent-death signal
// (PR_SET_PDEATHSIG): SIGKILL to the program when the replica dies. The
// kernel delivers it to the direct child only: a grandchild (the program of
// a shell script, the workers of a process pool) would survive.
//
// For the whole group, call SupervisorMain first thing in main, as
// cmd/scheduler does:
//
//	func main() {
//		jobs.SupervisorMain()
//		// flags, config, scheduler.New(...), ...
//	}
//
// Command then starts each program through a small supervisor: the same
// binary re-executed from /proc/self/exe (so it works even after a deploy
// replaced the file) with SOLOCRON_JOB_SUPERVISOR in its environment, which
// SupervisorMain recognises. The tree is
//
//	replica
//	└── supervisor   (process group leader; parent-death signal SIGUSR2)
//	    └── program  (same group; parent-death signal SIGKILL)
//	        └── ...  (same group)
//
// The supervisor passes stdio through, starts the program with exactly the
// environment and directory it would have had, forwards SIGTERM, SIGINT,
// SIGHUP, SIGQUIT and SIGUSR1 to the rest of the group exactly once, and exits
// with the program's status, or dies by the same signal, so Run reports the
// same *ExitError either way. When the replica dies the supervisor gets
// SIGUSR2, checks with getppid that its parent really is gone, and SIGKILLs
// the whole group, itself included. It checks getppid at start-up too, in case
// the replica died before the signal was armed. SIGUSR2 sent to a supervisor
// whose parent is alive is ignored. Under WithStopBy (the scheduler sets it
// to just before the run's lease ends, moved at every renewal) the parent
// also sends the supervisor that deadline on CLOCK_MONOTONIC through a pipe,
// and the supervisor stops the program on its own when it comes — SIGTERM to
// the group kill_grace before it (unless it passed one on from the replica
// already: no program gets two), SIGKILL at it — even while the replica is
// frozen (SIGSTOP, a paused VM) and cannot. The supervisor is a whole Go process: the
// runtime and every package's init functions run in it before main, so keep
// init functions free of side effects. Programs that do not want the
// supervisor's extra process do not call SupervisorMain and keep the
// direct-child guarantee.
//
// Limits. Linux only: elsewhere there is no parent-death signal, no
// supervisor, and leftovers are not killed after the program exits (the leader
// is reaped at once, so its group number could already be reused); Command is
// unsupported on Windows. Processes that left the group (setsid, daemons) are
// never covered. The kernel clears the parent-death signal when it executes a
// set-user-ID, set-group-ID or file-capability program, so such a program
// started directly loses it; under a supervisor (which is not such a program)
// the group is still killed. If the supervisor itself is SIGKILLed (the OOM
// killer) the program dies with it and the replica, which is still alive,
// kills the rest of the group; if replica and supervisor die together,
// grandchildren can survive.
//
// # Parent death and OS threads (go.dev/issue/27505)
//
// Linux sends the parent-death signal when the thread that forked the child
// exits, not when the process does. Go ends a thread whenever a goroutine
// locked to it (runtime.LockOSThread) returns without unlocking, which some
// libraries do on purpose. Locking the OS thread only around the fork is not
// enough: after unlocking, the thread goes back to the runtime's pool, a
// goroutine elsewhere in the replica can later lock onto it and return, and
// the kernel then kills the still-running job. So Command forks from a
// goroutine that locks its thread before the fork and unlocks only after the
// program has been reaped; no other goroutine can run on that thread in
// between, and the goroutine never returns while locked. (The thread would be
// blocked in wait anyway: it costs nothing.) The supervisor adds a second
// line of defence: its parent-death signal is catchable, and a signal that
// arrives while getppid still names the replica (a thread ended, the process
// lives) is ignored.
package jobs
