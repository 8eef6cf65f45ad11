package jobs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// defaultKillGrace is the time between SIGTERM and SIGKILL when
	// Command.KillGrace is 0.
	defaultKillGrace = 10 * time.Second
	// maxLine is the longest line logged as one record; longer lines are
	// split. It is also all the memory a stream's reader holds.
	maxLine = 4096
	// drainWait bounds how long Run keeps reading output after every
	// process of the job's group is gone. Only a process that left the
	// group (setsid) can still hold the pipes then; Run stops reading rather
	// than wait for it.
	drainWait = 2 * time.Second
)

// Names of the variables a command job finds in its environment.
const (
	envJob          = "SOLOCRON_JOB"
	envRunID        = "SOLOCRON_RUN_ID"
	envScheduledAt  = "SOLOCRON_SCHEDULED_AT"
	envFencingToken = "SOLOCRON_FENCING_TOKEN"
	envAttempt      = "SOLOCRON_ATTEMPT"
	envReplicaID    = "SOLOCRON_REPLICA_ID"
	envSlot         = "SOLOCRON_SLOT"
	// envSupervisor marks a process started as a job supervisor; its value
	// is the pid of the process that started it. See SupervisorMain.
	envSupervisor = "SOLOCRON_JOB_SUPERVISOR"
)

// Command is a Job that runs an external program: argv, no shell. Write
// Args: []string{"sh", "-c", "..."} to get one.
//
// The program runs in a process group of its own. Its environment is
// built, never copied: the few variables of the scheduler's that Inherited
// allows (PATH, HOME, LANG, TZ, ...), then Env, then the run's identity
// (SOLOCRON_JOB, SOLOCRON_RUN_ID, SOLOCRON_SCHEDULED_AT,
// SOLOCRON_FENCING_TOKEN, SOLOCRON_ATTEMPT, SOLOCRON_REPLICA_ID) and its
// trace context (TRACEPARENT, TRACESTATE; see WithTraceContext). Its stdout
// and stderr go, line by line, to Logger(ctx) (at LogOutput's level, Debug by
// default) and to Output(ctx); stdin is /dev/null. See the package
// documentation for the kill sequence and for what
// happens when the replica dies.
type Command struct {
	// Args is the argv. Args[0] is looked up in the scheduler's PATH unless
	// it contains a slash; a relative path with a slash is resolved against
	// Dir.
	Args []string
	// Env is added to the variables inherited from the scheduler (see
	// Inherited), overriding those of the same name. The SOLOCRON_* run
	// variables (ReservedEnv) override Env, and the supervisor's markers
	// (SOLOCRON_JOB_SUPERVISOR, SOLOCRON_JOB_SUPERVISOR_GORACE) in Env are
	// left out; Validate, which the scheduler runs on every job, refuses
	// both. A secret a job needs goes here, by name.
	Env map[string]string
	// Dir is the working directory; "" means the scheduler's.
	Dir string
	// KillGrace is how long the process group has between SIGTERM and
	// SIGKILL once the run's context is done; 0 (or less) means 10s. The
	// scheduler declares a run's lease lost that long (plus a margin) before
	// it runs out (StopGrace), and refuses a KillGrace above half the lease.
	KillGrace time.Duration
	// LogOutput is the level the program's output lines are logged at; nil
	// means slog.LevelDebug, so that what a job prints stays out of a
	// production log unless the table asks for it (log_output: info).
	LogOutput slog.Leveler
}

// logLevel is the level output lines are logged at.
func (c *Command) logLevel() slog.Level {
	if c.LogOutput == nil {
		return slog.LevelDebug
	}
	return c.LogOutput.Level()
}

// Run starts the program and waits for it. It returns only after the
// program has exited, every process left in its process group has been
// killed, and its output has been read (see the package documentation for
// the one bounded exception).
//
// It returns nil when the program exits with status 0 before ctx is done;
// a *ExitError for another status or a death by signal; an error wrapping
// context.Cause(ctx) (joined with the *ExitError, if any) when ctx was done
// before the program exited; and a Permanent error when the Command is
// unusable (no Args, a program that cannot be found or executed, a bad
// variable name).
func (c *Command) Run(ctx context.Context) error {
	if c == nil {
		return Permanent(errors.New("jobs: nil *Command"))
	}
	argv, env, err := c.prepare(ctx)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("jobs: command %s not started: %w", argv[0], context.Cause(ctx))
	}
	return c.run(ctx, argv, env)
}

// prepare validates c and returns the resolved argv (argv[0] is the path to
// execute; c.Args[0] is kept for the program's own argv[0] by the caller)
// and the environment.
func (c *Command) prepare(ctx context.Context) ([]string, []string, error) {
	if err := c.problems(false).first(); err != nil {
		return nil, nil, Permanent(fmt.Errorf("jobs: command: %w", err))
	}
	path := c.Args[0]
	if !strings.Contains(path, "/") {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, nil, Permanent(fmt.Errorf("jobs: command: %w", err))
		}
		path = lp
	}
	return append([]string{path}, c.Args[1:]...), c.environ(ctx), nil
}

// environ builds the program's environment: the scheduler's variables that
// Inherited allows, then Env, then the run's identity.
func (c *Command) environ(ctx context.Context) []string {
	vars := make(map[string]string)
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !Inherited(k) {
			// Only an allowed few: the scheduler's environment holds its
			// own secrets (the admin token, the store's password). The
			// supervisor marker is never among them.
			continue
		}
		set(k, v)
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env { // checked by prepare
		// Not the supervisor's markers (Validate refuses them): set by a
		// job, SOLOCRON_JOB_SUPERVISOR would come before the supervisor's
		// own (a Go program reads the first) and give it a wrong parent,
		// or make a program that calls SupervisorMain, started directly,
		// take itself for a supervisor.
		if !slices.Contains(supervisorEnv, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // a stable order, whatever the map's
	for _, k := range keys {
		set(k, c.Env[k])
	}
	if info, ok := FromContext(ctx); ok {
		set(envJob, info.Job)
		set(envRunID, info.RunID)
		set(envScheduledAt, info.ScheduledAt.UTC().Format(time.RFC3339))
		set(envFencingToken, strconv.FormatInt(info.FencingToken, 10))
		set(envAttempt, strconv.Itoa(info.Attempt))
		set(envReplicaID, info.ReplicaID)
		if info.Slot > 0 {
			set(envSlot, strconv.Itoa(info.Slot))
		}
	}
	for _, kv := range traceEnv(ctx) { // TRACEPARENT, TRACESTATE
		set(kv[0], kv[1])
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// StopGracer is a Job that needs time to stop once its context is done.
// A scheduler declares a run's lease lost at least that long before Redis
// could give the run's slot away, so that the job has stopped by then.
type StopGracer interface {
	// StopGrace is the longest the job may run on once its context is
	// done.
	StopGrace() time.Duration
}

// StopGrace is KillGrace (default 10s): after it, the process group is
// sent SIGKILL.
func (c *Command) StopGrace() time.Duration { return c.killGrace() }

func (c *Command) killGrace() time.Duration {
	if c.KillGrace <= 0 {
		return defaultKillGrace
	}
	return c.KillGrace
}

// streamer copies a command's output streams to Output(ctx) and, line by
// line, to Logger(ctx). Both streams share one lock so that the writer sees
// whole lines and needs no locking of its own.
type streamer struct {
	ctx    context.Context
	out    io.Writer
	logger *slog.Logger
	level  slog.Level
	mu     sync.Mutex
}

// copy reads r until EOF or error. Memory is bounded by maxLine whatever the
// program writes: a line longer than that is emitted in maxLine pieces.
func (s *streamer) copy(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			s.emit(line, stream)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (s *streamer) emit(line []byte, stream string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.out.Write(line) // a failing Output must not stop the job
	// Checking Enabled first keeps a disabled logger free of allocations,
	// which matters for a job that prints gigabytes.
	if s.logger.Enabled(s.ctx, s.level) {
		text := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
		s.logger.LogAttrs(s.ctx, s.level, text, slog.String("stream", stream))
	}
}
