package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/scheduler"
)

// storeTimeout bounds each command's work with the store.
const storeTimeout = 15 * time.Second

// withControl loads the table and calls fn with the cluster's controls:
// those of the store the table names or, for a daemon on the embedded
// store (which lives inside its daemon) or with --admin URL, the daemon's
// admin API, at admin.listen with admin.token.
func (c *cli) withControl(cmd string, pos []string, needJob bool, fn func(ctx context.Context, f *config.File, ctl controls, job string) int) int {
	f, code := c.loadTable()
	if code != exitOK {
		return code
	}
	job := ""
	if needJob {
		if job, code = c.oneJob(cmd, f, pos); code != exitOK {
			return code
		}
	} else if len(pos) > 1 {
		return c.usageError(cmd, "want at most one JOB, got %d arguments", len(pos))
	} else if len(pos) == 1 {
		if job, code = c.oneJob(cmd, f, pos); code != exitOK {
			return code
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.admin != "" || f.Store.URL == "" && f.Store.Mode == config.DefaultMode {
		raw := c.admin
		if raw == "" {
			var err error
			if raw, err = adminURL(f); err != nil {
				fmt.Fprintf(c.stderr, "scheduler %s: %s names no store.url: its store is embedded in the daemon (scheduler run), which this command reaches through its admin API, and %v.\n"+
					"Set admin.listen in the table (the daemon serves it there), or pass --admin http://HOST:PORT.\n", cmd, f.Path, err)
				return exitUsage
			}
		}
		ctl, err := newAdminControl(raw, f.Admin.Token)
		if err != nil {
			return c.usageError(cmd, "%v", err)
		}
		c.where = "the daemon's admin API at " + ctl.base.Redacted()
		return fn(ctx, f, ctl, job)
	}
	conn, err := storeconn.Open(f.Store)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", f.Path, err)
		return exitUsage
	}
	defer conn.Close()
	c.where = "store " + conn.Where
	ctl, err := conn.NewControl()
	if err != nil {
		fmt.Fprintf(c.stderr, "scheduler %s: %v\n", cmd, err)
		return exitFailure
	}
	ctl.UseTable(f.Jobs) // pooled jobs' keys are under their pool's tag
	return fn(ctx, f, ctl, job)
}

// adminFlag registers --admin, for the commands that reach the cluster.
func (c *cli) adminFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.admin, "admin", "", "reach the cluster through the daemon's admin API at `URL` (http://HOST:PORT) instead of the store; the default for a table on the embedded store is its admin.listen; the token is the table's admin.token")
}

// unanswered reports whether err is a request that got no answer in time
// (as opposed to one refused, or a connection never made): the store may
// have applied it.
func unanswered(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// storeFailed reports an error of the store and returns exitFailure.
func (c *cli) storeFailed(cmd string, f *config.File, err error) int {
	fmt.Fprintf(c.stderr, "scheduler %s: %s: %s\n", cmd, c.where, errText(err))
	return exitFailure
}

// jobState is status --json's answer for one job: the cluster's state and
// the table's pause flag.
type jobState struct {
	*scheduler.Status
	PausedInTable bool `json:"paused_in_table"`
}

func statusFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON: one object for JOB, an array for every job")
	limit := fs.Int("limit", 5, "how many recent runs to show per job")
	return func(pos []string) int {
		if *limit < 1 {
			return c.usageError("status", "--limit must be at least 1")
		}
		return c.withControl("status", pos, false, func(ctx context.Context, f *config.File, ctl controls, job string) int {
			table := f.Jobs
			if job != "" {
				j, _ := findJob(f, job)
				table = []scheduler.Job{j}
			}
			states := make([]jobState, 0, len(table))
			for _, j := range table {
				tctx, cancel := context.WithTimeout(ctx, storeTimeout)
				st, err := ctl.Status(tctx, j.Name, *limit)
				cancel()
				if err != nil {
					return c.storeFailed("status", f, err)
				}
				states = append(states, jobState{Status: st, PausedInTable: j.Paused})
			}
			switch {
			case *asJSON && job != "":
				return c.printJSON(states[0])
			case *asJSON:
				return c.printJSON(states)
			case job != "":
				printJobStatus(c.stdout, states[0])
			default:
				printStatusTable(c.stdout, states)
			}
			return exitOK
		})
	}
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "scheduler: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// cliUser names who runs the command line, as a pause records it:
// "user@host".
func cliUser() string {
	u := cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"), "unknown")
	if h, err := os.Hostname(); err == nil {
		return u + "@" + h
	}
	return u
}

func pausedText(st jobState) string {
	switch {
	case st.Paused && st.PausedInTable:
		return "yes (cluster and table)"
	case st.Paused && strings.HasPrefix(st.PausedWhy, "paused after "):
		return "yes (after failures)"
	case st.Paused:
		return "yes"
	case st.PausedInTable:
		return "yes (table)"
	}
	return "no"
}

// outcome is what a record says happened: its end, or its decision.
func outcome(r scheduler.Run) string {
	if r.Outcome != "" {
		return string(r.Outcome)
	}
	return string(r.Decision)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dur(r scheduler.Run) string {
	if d := r.Duration(); d > 0 {
		return d.Round(time.Millisecond).String()
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens an error for a table cell.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

func printStatusTable(w io.Writer, states []jobState) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPAUSED\tRUNNING\tWAITING\tLAST RUN\tOUTCOME\tREPLICA\tFINISHED\tDURATION")
	for _, st := range states {
		last := scheduler.Run{}
		if len(st.History) > 0 {
			last = st.History[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", st.Job, pausedText(st), len(st.Running), st.Waiting,
			orDash(last.ID), orDash(outcome(last)), orDash(last.Replica), stamp(last.FinishedAt), dur(last))
	}
	_ = tw.Flush()
	// Who runs what now: the replica, since when, with which fencing token
	// (status JOB says the same for one job).
	var running []scheduler.Run
	for _, st := range states {
		running = append(running, st.Running...)
	}
	if len(running) > 0 {
		fmt.Fprintln(w, "running now:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tREPLICA\tSINCE\tSLOT\tTOKEN\tATTEMPTS")
		for _, r := range running {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\n", r.ID, r.Replica, stamp(r.StartedAt), r.Slot, r.FencingToken, r.Attempts)
		}
		_ = tw.Flush()
	}
	seen := map[string]bool{}
	for _, st := range states {
		if p := st.Pool; p != nil && !seen[p.Name] {
			seen[p.Name] = true
			fmt.Fprintf(w, "pool %s\n", poolText(p))
		}
	}
}

// poolText is a pool's use: "exports: 2 of 3 slots in use, by a@..., b@...".
// The holders are run ids, of any of the pool's jobs: what an operator
// looks up with scheduler history when the pool stays full.
func poolText(p *scheduler.PoolUse) string {
	s := fmt.Sprintf("%s: %d of %d %s in use", p.Name, p.Used, p.Size, plural(p.Size, "slot", "slots"))
	if len(p.Holders) > 0 {
		s += ", by " + strings.Join(p.Holders, ", ")
	}
	return s
}

func printJobStatus(w io.Writer, st jobState) {
	fmt.Fprintf(w, "job:            %s\n", st.Job)
	fmt.Fprintf(w, "paused:         %s\n", pausedText(st))
	if st.Paused && st.PausedWhy != "" {
		fmt.Fprintf(w, "paused why:     %s\n", st.PausedWhy)
	}
	fmt.Fprintf(w, "failures:       %d in a row\n", st.ConsecutiveFailures)
	fmt.Fprintf(w, "last scheduled: %s\n", stamp(st.LastScheduled))
	fmt.Fprintf(w, "waiting:        %d\n", st.Waiting)
	fmt.Fprintf(w, "pending manual: %d\n", st.PendingManual)
	if b := st.Backfill; b != nil {
		fmt.Fprintf(w, "backfill:       %s\n", backfillText(b))
	}
	if p := st.Pool; p != nil {
		fmt.Fprintf(w, "pool:           %s\n", poolText(p))
	}
	fmt.Fprintf(w, "running:        %d\n", len(st.Running))
	if len(st.Running) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tREPLICA\tSINCE\tSLOT\tTOKEN\tATTEMPTS")
		for _, r := range st.Running {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\n", r.ID, r.Replica, stamp(r.StartedAt), r.Slot, r.FencingToken, r.Attempts)
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "last runs:      %d\n", len(st.History))
	if len(st.History) > 0 {
		printRuns(w, st.History, "  ")
	}
}

func printRuns(w io.Writer, runs []scheduler.Run, indent string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, indent+"RUN\tKIND\tOUTCOME\tREPLICA\tSTARTED\tDURATION\tATTEMPTS\tTOKEN\tERROR")
	for _, r := range runs {
		token, attempts := "-", "-"
		if r.FencingToken != 0 {
			token = fmt.Sprint(r.FencingToken)
		}
		if r.Attempts != 0 {
			attempts = fmt.Sprint(r.Attempts)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, r.ID, orDash(string(r.Kind)), orDash(outcome(r)),
			orDash(r.Replica), stamp(r.StartedAt), dur(r), attempts, token, orDash(oneLine(r.Error, 60)))
	}
	_ = tw.Flush()
}

func historyFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	asJSON := fs.Bool("json", false, "print the records as a JSON array")
	limit := fs.Int("limit", 20, "how many records, newest first")
	return func(pos []string) int {
		if *limit < 1 {
			return c.usageError("history", "--limit must be at least 1")
		}
		return c.withControl("history", pos, true, func(ctx context.Context, f *config.File, ctl controls, job string) int {
			ctx, cancel := context.WithTimeout(ctx, storeTimeout)
			defer cancel()
			runs, err := ctl.History(ctx, job, *limit)
			if err != nil {
				return c.storeFailed("history", f, err)
			}
			if *asJSON {
				if runs == nil {
					runs = []scheduler.Run{}
				}
				return c.printJSON(runs)
			}
			if len(runs) == 0 {
				fmt.Fprintf(c.stdout, "%s: no run records\n", job)
				return exitOK
			}
			printRuns(c.stdout, runs, "")
			return exitOK
		})
	}
}

func triggerFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	wait := fs.Duration("wait", 10*time.Second, "wait this long for the run to end and report it; exit 0 only if it succeeded, 1 if it failed, timed out, was not started or has not ended by then; 0 returns at once")
	return func(pos []string) int {
		if *wait < 0 {
			return c.usageError("trigger", "--wait must not be negative")
		}
		return c.withControl("trigger", pos, true, func(ctx context.Context, f *config.File, ctl controls, job string) int {
			tctx, cancel := context.WithTimeout(ctx, storeTimeout)
			id, err := ctl.Trigger(tctx, job)
			cancel()
			if errors.Is(err, scheduler.ErrQueueFull) {
				fmt.Fprintf(c.stderr, "scheduler trigger: %d manual runs of %q are already waiting to be picked up (the most a job may have); try again once replicas have started some (scheduler status %s shows them)\n",
					scheduler.MaxPendingManual, job, job)
				return exitFailure
			}
			if err != nil {
				code := c.storeFailed("trigger", f, err)
				if unanswered(err) {
					// Redis may have queued the request and lost only its
					// answer (a stalled server runs what it had read once it
					// resumes): a second trigger could be a second run.
					fmt.Fprintf(c.stderr, "the request may still have reached the store: check scheduler status %s (or history) once it answers before triggering again\n", job)
				}
				return code
			}
			fmt.Fprintln(c.stdout, id)
			if *wait == 0 {
				return exitOK
			}
			return c.awaitRun(ctx, "trigger", f, ctl, job, id, *wait, scheduler.Succeeded)
		})
	}
}

// awaitRun polls a run's record (for cmd) until it is decided and, if it
// started, ended; or until wait passes. It exits 0 only for a run that
// ended with outcome want.
func (c *cli) awaitRun(ctx context.Context, cmd string, f *config.File, ctl controls, job, id string, wait time.Duration, want scheduler.Outcome) int {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last *scheduler.Run
	var lastErr error
	for {
		gctx, gcancel := context.WithTimeout(ctx, 3*time.Second)
		r, err := ctl.Get(gctx, id)
		gcancel()
		if err != nil {
			lastErr = err // perhaps passing; tried again until wait is over
		} else {
			lastErr = nil
			if r != nil {
				last = r
			}
		}
		if last != nil && last.Outcome != scheduler.Running && last.Outcome != scheduler.Waiting && last.Outcome != "" {
			c.reportRun(*last)
			if last.Outcome == want {
				return exitOK
			}
			return exitFailure // failed, timed out, skipped, missed, cancelled...
		}
		select {
		case <-ctx.Done():
			switch {
			case lastErr != nil && last == nil:
				return c.storeFailed(cmd, f, lastErr)
			case last == nil:
				fmt.Fprintf(c.stdout, "%s: still queued after %s\n", id, wait)
				fmt.Fprintf(c.stderr, "note: the request waits in the store until a replica that has %q in its table claims it; is one running, with this store and key prefix?\n", job)
			case last.Outcome == scheduler.Waiting:
				fmt.Fprintf(c.stdout, "%s: waiting for a free concurrency slot after %s\n", id, wait)
			default:
				fmt.Fprintf(c.stdout, "%s: running on %s since %s (fencing token %d); not finished after %s\n",
					id, last.Replica, stamp(last.StartedAt), last.FencingToken, wait)
			}
			// Not seen succeed: a script must not read this as success.
			// The run itself goes on (scheduler history shows its end).
			return exitFailure
		case <-tick.C:
		}
	}
}

func (c *cli) reportRun(r scheduler.Run) {
	if r.Decision != scheduler.Started {
		fmt.Fprintf(c.stdout, "%s: %s (decided by %s)\n", r.ID, outcome(r), orDash(r.Replica))
		return
	}
	msg := fmt.Sprintf("%s: %s on %s in %s (fencing token %d, %d %s)", r.ID, r.Outcome, r.Replica, dur(r),
		r.FencingToken, r.Attempts, plural(r.Attempts, "attempt", "attempts"))
	if r.Error != "" {
		msg += ": " + oneLine(r.Error, 200)
	}
	if r.CancelledBy != "" {
		msg += " (cancel asked by " + oneLine(r.CancelledBy, 200) + ")"
	}
	fmt.Fprintln(c.stdout, msg)
}

func pauseFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	reason := fs.String("reason", "", "why the job is paused: kept with who paused it, shown by status, the console and the paused notification")
	return func(pos []string) int { c.pauseReason = *reason; return c.setPaused("pause", pos, true) }
}

func resumeFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	return func(pos []string) int { return c.setPaused("resume", pos, false) }
}

func (c *cli) setPaused(cmd string, pos []string, paused bool) int {
	return c.withControl(cmd, pos, true, func(ctx context.Context, f *config.File, ctl controls, job string) int {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		do := ctl.Resume
		if paused {
			do = func(ctx context.Context, job string) error {
				return ctl.PauseWithReason(ctx, job, c.pauseReason, "cli "+cliUser())
			}
		}
		if err := do(ctx, job); err != nil {
			return c.storeFailed(cmd, f, err)
		}
		j, _ := findJob(f, job)
		if paused {
			fmt.Fprintf(c.stdout, "%s: paused on every replica from its next claim on; runs in flight go on\n", job)
		} else {
			fmt.Fprintf(c.stdout, "%s: resumed on every replica\n", job)
			if j.Paused {
				fmt.Fprintf(c.stdout, "note: %s still says paused: true for %s; replicas loading it will not start it\n", f.Path, job)
			}
		}
		return exitOK
	})
}
