package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redact"
	"github.com/solocron/solocron/jobs"
)

// Exit codes.
const (
	exitOK      = 0 // success
	exitFailure = 1 // runtime failure: the store is unreachable, a port is taken...
	exitUsage   = 2 // usage or configuration error
)

func main() {
	// First: in a process started as a command job's supervisor this runs
	// the supervisor and never returns.
	jobs.SupervisorMain()
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand of the CLI.
type command struct {
	name    string
	args    string // after the name in the usage line
	summary string
	// flags registers the command's own flags and returns what runs it
	// once they are parsed, with the positional arguments.
	flags func(fs *flag.FlagSet, c *cli) func(pos []string) int
}

var commands []command

func init() {
	commands = []command{
		{"run", "", "run a replica until SIGINT/SIGTERM; SIGHUP reloads the table", runFlags},
		{"validate", "", "check the table; print every problem as FILE:LINE:COL: path: message", validateFlags},
		{"next", "[JOB]", "print the next scheduled instants of each job, in UTC and the job's zone", nextFlags},
		{"status", "[JOB]", "show each job's cluster-wide state: paused, running, last runs", statusFlags},
		{"history", "JOB", "show a job's run records, newest first", historyFlags},
		{"trigger", "JOB", "ask the cluster to run JOB now, once", triggerFlags},
		{"backfill", "JOB", "run every instant of JOB's schedule in a range once (--from, --to, --parallel)", backfillFlags},
		{"cancel", "RUN_ID", "stop a running run, on whichever replica runs it; its record ends cancelled", cancelFlags},
		{"retry", "RUN_ID", "run an ended run's job again now, as a manual run linked to it", retryFlags},
		{"pause", "JOB", "stop every replica from starting JOB", pauseFlags},
		{"resume", "JOB", "undo pause", resumeFlags},
		{"replicas", "", "list the live replicas: version, heartbeat, clock offset, job table", replicasFlags},
		{"schema", "", "print the JSON Schema of the job table (for editors)", schemaFlags},
		{"version", "", "print the version and build information", versionFlags},
	}
}

// cli holds what every command shares: the common flags and the output.
type cli struct {
	stdout, stderr io.Writer
	// rawStdout is the stdout Main was given (is it a terminal?).
	rawStdout io.Writer
	config    string
	logFormat string
	logLevel  string
	log       *slog.Logger
	where     string // the store or admin API, without secrets, once opened
	admin     string // --admin URL
	// redact masks the scheduler's secrets in everything printed or
	// logged; learnSecrets fills it when a table is loaded.
	redact *redact.Redactor
	// pauseReason is pause's --reason.
	pauseReason string
}

// learnSecrets adds f's secrets to the redactor, and warns about those too
// short to be masked.
func (c *cli) learnSecrets(f *config.File) {
	before := c.redact.Short()
	c.redact.Add(secrets(f)...)
	if n := c.redact.Short() - before; n > 0 && c.log != nil {
		c.log.Warn("some secrets of the table (admin.token, a store password) are shorter than 4 characters: too short to be masked in logs and answers; use long random secrets", "count", n)
	}
}

// Main runs the command line with args (without the program name) and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	args = commandFirst(args)
	name := args[0]
	switch name {
	case "-v", "-version", "--version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "scheduler %s: unexpected arguments %q\n", name, args[1:])
			return exitUsage
		}
		printVersion(stdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			if cmd, ok := lookup(args[1]); ok {
				fs, _ := newFlagSet(cmd, &cli{stdout: stdout, stderr: stderr})
				commandUsage(stdout, cmd, fs)
				return exitOK
			}
			fmt.Fprintf(stderr, "scheduler: unknown command %q%s\n", args[1], didYouMean(args[1]))
			usage(stderr)
			return exitUsage
		}
		usage(stdout)
		return exitOK
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "scheduler: unknown command %q%s\n\n", name, didYouMean(name))
		usage(stderr)
		return exitUsage
	}
	// Everything the command prints goes through the redactor, which learns
	// the scheduler's secrets once the table is loaded.
	red := redact.New()
	c := &cli{stdout: red.Writer(stdout), stderr: red.Writer(stderr), redact: red, rawStdout: stdout}
	fs, run := newFlagSet(cmd, c)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		commandUsage(stdout, cmd, fs)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "scheduler %s: %v\nRun 'scheduler help %s' for usage.\n", name, err, name)
		return exitUsage
	}
	if err := c.setupLog(); err != nil {
		fmt.Fprintf(stderr, "scheduler %s: %v\n", name, err)
		return exitUsage
	}
	return run(pos)
}

// commandFirst moves the command in front of the flags every command
// takes, so that "scheduler --config t.yaml status" works as "scheduler
// status --config t.yaml" does. Only --config, --log-format and --log-level
// (each with its value, or as --flag=value) may come before it; anything
// else leaves args as they are, for Main to report.
func commandFirst(args []string) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		name, _, withValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if name != "config" && name != "log-format" && name != "log-level" {
			return args
		}
		i++
		if !withValue {
			i++
		}
	}
	if i == 0 || i >= len(args) {
		return args
	}
	if _, ok := lookup(args[i]); !ok {
		return args
	}
	return slices.Concat(args[i:i+1], args[:i], args[i+1:])
}

// commandAliases are the words a newcomer reaches for, from other tools,
// that name a command of ours.
var commandAliases = map[string]string{
	"check": "validate", "lint": "validate", "verify": "validate",
	"list": "status", "ls": "status", "jobs": "status", "show": "status",
	"runs": "history", "log": "history", "logs": "history",
	"start": "run", "serve": "run", "daemon": "run",
	"exec": "trigger", "run-now": "trigger", "now": "trigger",
	"unpause": "resume", "suspend": "pause", "stop": "pause",
	"kill": "cancel", "rerun": "retry",
}

// didYouMean is " (did you mean \"validate\"?)" for a word that names one
// of the commands, or a typo close to one ("statuss"), else "".
func didYouMean(name string) string {
	if len(name) > 64 || strings.HasPrefix(name, "-") {
		return ""
	}
	lower := strings.ToLower(name)
	if to, ok := commandAliases[lower]; ok {
		return fmt.Sprintf(" (did you mean %q?)", to)
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if best := config.Suggest(lower, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func newFlagSet(cmd command, c *cli) (*flag.FlagSet, func([]string) int) {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed by Main, usage on request
	fs.Usage = func() {}
	if takesTable(cmd.name) {
		fs.StringVar(&c.config, "config", "solocron.yaml", "the job table `FILE`")
	} else {
		// Every command takes --config (SPEC), so that a wrapper may pass
		// it to all of them; these two read no table and ignore it.
		fs.StringVar(&c.config, "config", "solocron.yaml", "ignored: this command reads no job table")
	}
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return fs, cmd.flags(fs, c)
}

// takesTable reports whether a command reads the job table (--config):
// every one but schema and version, which answer without one (and accept
// the flag, ignored).
func takesTable(name string) bool { return name != "schema" && name != "version" }

// parseInterspersed parses flags anywhere among the arguments, so that
// "history JOB --limit 5" works as well as "history --limit 5 JOB". After
// "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *cli) setupLog() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch c.logFormat {
	case "text":
		h = slog.NewTextHandler(c.stderr, opts)
	case "json":
		opts.ReplaceAttr = readableDurations
		h = slog.NewJSONHandler(c.stderr, opts)
	default:
		return fmt.Errorf("--log-format %q: want text or json", c.logFormat)
	}
	c.log = slog.New(h)
	slog.SetDefault(c.log)
	// go-redis logs connection trouble on its own: into our log, in its
	// format, at debug level (the scheduler reports an unreachable store
	// itself, once, at error).
	redis.SetLogger(redisLogger{c.log})
	return nil
}

// readableDurations writes durations in JSON logs as Go durations ("30s"),
// as the text format and the table do, not as nanoseconds.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// redisLogger routes go-redis's internal log lines into slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug("redis client: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Solocron runs cron jobs for services with many replicas: exactly one replica
runs each scheduled run, coordinated through Redis.

Usage:
  scheduler <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command takes --config FILE (default ./solocron.yaml), --log-format
text|json and --log-level debug|info|warn|error; all but schema and version
read the job table named by --config. scheduler --version (or -v)
prints the version, commit and build date.
Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.

Run 'scheduler help <command>' for a command's flags.
`)
}

func commandUsage(w io.Writer, cmd command, fs *flag.FlagSet) {
	line := "scheduler " + cmd.name + " [flags]"
	if cmd.args != "" {
		line += " " + cmd.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n\nFlags:\n", line, strings.ToUpper(cmd.summary[:1])+cmd.summary[1:])
	if takesTable(cmd.name) {
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return
	}
	// schema and version accept --config and ignore it: listing it with
	// its default (solocron.yaml) read as if they loaded that table.
	shown := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue // not a value parsed before -h
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
	fmt.Fprintln(w, "\nThis command reads no job table: --config is accepted, and ignored.")
}

// usageError prints a usage problem and returns exitUsage.
func (c *cli) usageError(cmd, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "scheduler %s: %s\nRun 'scheduler help %s' for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// loadTable loads the job table for the commands other than run, printing
// every problem on stderr. The daemon has no Go functions: a func job is an
// error, which config reports.
func (c *cli) loadTable() (*config.File, int) {
	f, err := config.Load(c.config)
	if err == nil {
		c.learnSecrets(f)
		return f, exitOK
	}
	printConfigError(c.stderr, c.config, err)
	return nil, exitUsage
}

func printConfigError(w io.Writer, path string, err error) {
	var es *config.Errors
	var pe *fs.PathError
	switch {
	case errors.As(err, &es):
		for _, e := range *es {
			fmt.Fprintln(w, e)
		}
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "%s: no such file (name the job table with --config FILE)\n", path)
	case errors.Is(err, syscall.EISDIR):
		fmt.Fprintf(w, "%s: is a directory, not a job table (name the file with --config FILE)\n", path)
	case errors.As(err, &pe) && pe.Path == path:
		// "FILE: permission denied", not "FILE: open FILE: permission denied".
		fmt.Fprintf(w, "%s: %v\n", path, pe.Err)
	default:
		fmt.Fprintf(w, "%s: %v\n", path, err)
	}
}

// configProblems returns every problem of a failed load as one line each.
func configProblems(path string, err error) []string {
	var b strings.Builder
	printConfigError(&b, path, err)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// oneJob checks that pos names exactly one job of the table.
func (c *cli) oneJob(cmd string, f *config.File, pos []string) (string, int) {
	if len(pos) != 1 {
		return "", c.usageError(cmd, "want exactly one JOB, got %d arguments", len(pos))
	}
	if _, ok := findJob(f, pos[0]); !ok {
		return "", c.unknownJob(f, pos[0])
	}
	return pos[0], exitOK
}

func (c *cli) unknownJob(f *config.File, name string) int {
	names := make([]string, len(f.Jobs))
	for i, j := range f.Jobs {
		names[i] = j.Name
	}
	fmt.Fprintf(c.stderr, "scheduler: no job %q in %s (jobs: %s)\n", name, f.Path, strings.Join(names, ", "))
	return exitUsage
}
