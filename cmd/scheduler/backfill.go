package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/scheduler"
)

// backfillPoll is how often the backfill command reads the progress;
// backfillLineEvery how often it prints a line when stdout is not a
// terminal (the bar on a terminal is redrawn at every poll).
var (
	backfillPoll      = 250 * time.Millisecond
	backfillLineEvery = 5 * time.Second
	// backfillStuck: no progress for that long prints a hint.
	backfillStuck = 15 * time.Second
)

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseInstant reads a --from/--to value: RFC 3339, or a date. A date
// names the whole day (UTC): as --from its first second, as --to (end)
// its last, so that "--from 2026-11-01 --to 2026-11-25" includes the 25th.
func parseInstant(s string, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			t = t.Add(24*time.Hour - time.Second)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-11-01T00:00:00Z) or a date (2026-11-01: the whole day, UTC)", s)
}

// errText is err's message without the "scheduler: " its package puts
// first: the command prints its own "scheduler <command>:".
func errText(err error) string { return strings.TrimPrefix(err.Error(), "scheduler: ") }

// parallelWarning says when --parallel asks for more runs at a time than
// the job's concurrency or its pool allows ("" when it does not).
func parallelWarning(f *config.File, j scheduler.Job, parallel int) string {
	conc := max(j.Concurrency, 1)
	limit, what := conc, fmt.Sprintf("its concurrency is %d", conc)
	if j.Pool != "" {
		if size := f.Pools[j.Pool]; size > 0 && size < limit {
			limit, what = size, fmt.Sprintf("its pool %s has %d %s", j.Pool, size, plural(size, "slot", "slots"))
		}
	}
	if parallel <= limit {
		return ""
	}
	return fmt.Sprintf("note: --parallel %d, but %s: at most %d of the backfill's runs go at a time (the rest wait their turn)", parallel, what, limit)
}

func backfillFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	fromS := fs.String("from", "", "first instant of the range (RFC 3339, or a date: from its midnight UTC); required")
	toS := fs.String("to", "", "last instant of the range, included (RFC 3339, or a date: the whole day is included, to 23:59:59 UTC); required")
	parallel := fs.Int("parallel", 1, fmt.Sprintf("at most this many of the backfill's runs at a time, across the cluster (1..%d)", scheduler.MaxBackfillParallel))
	detach := fs.Bool("detach", false, "start the backfill and return; follow it with scheduler status JOB")
	cancel := fs.Bool("cancel", false, "cancel the job's backfill going on (what started finishes, the rest is dropped)")
	return func(pos []string) int {
		var from, to time.Time
		if !*cancel {
			if *fromS == "" || *toS == "" {
				return c.usageError("backfill", "--from and --to are both required")
			}
			var err error
			if from, err = parseInstant(*fromS, false); err != nil {
				return c.usageError("backfill", "--from: %v", err)
			}
			if to, err = parseInstant(*toS, true); err != nil {
				return c.usageError("backfill", "--to: %v", err)
			}
			if *parallel < 1 || *parallel > scheduler.MaxBackfillParallel {
				return c.usageError("backfill", "--parallel must be within 1..%d", scheduler.MaxBackfillParallel)
			}
		}
		return c.withControl("backfill", pos, true, func(ctx context.Context, f *config.File, ctl controls, job string) int {
			if *cancel {
				tctx, stop := context.WithTimeout(ctx, storeTimeout)
				defer stop()
				b, err := ctl.CancelBackfill(tctx, job)
				if errors.Is(err, scheduler.ErrNoBackfill) {
					fmt.Fprintf(c.stderr, "scheduler backfill: %s has no backfill going on\n", job)
					return exitFailure
				}
				if err != nil {
					return c.storeFailed("backfill", f, err)
				}
				fmt.Fprintf(c.stdout, "%s: backfill cancelled: %d of %d instants decided, %d dropped; %d runs in flight go on to their end\n",
					job, b.Decided, b.Total, b.Dropped(), b.InFlight)
				return exitOK
			}
			j, _ := findJob(f, job)
			if w := parallelWarning(f, j, *parallel); w != "" {
				fmt.Fprintln(c.stderr, w)
			}
			tctx, stop := context.WithTimeout(ctx, storeTimeout)
			b, err := ctl.Backfill(tctx, j, from, to, *parallel)
			stop()
			switch {
			case errors.Is(err, scheduler.ErrBackfillRange):
				fmt.Fprintf(c.stderr, "scheduler backfill: %v\n", errText(err))
				return exitUsage
			case errors.Is(err, scheduler.ErrBackfillBusy):
				fmt.Fprintf(c.stderr, "scheduler backfill: %v\n(scheduler backfill %s --cancel stops it)\n", errText(err), job)
				return exitFailure
			case errors.Is(err, scheduler.ErrBackfillUnsupported):
				fmt.Fprintf(c.stderr, "scheduler backfill: %v\n", errText(err))
				return exitFailure
			case err != nil:
				return c.storeFailed("backfill", f, err)
			}
			fmt.Fprintf(c.stdout, "%s: backfill of %d %s from %s to %s, at most %d at a time\n", job, b.Total,
				plural(b.Total, "instant", "instants"), stamp(b.From), stamp(b.To), b.Parallel)
			if *detach {
				return exitOK
			}
			return c.followBackfill(ctx, f, ctl, job, b)
		})
	}
}

// followBackfill shows the backfill's progress until it finishes; ctx done
// (Ctrl-C) cancels it: what started finishes, the rest is dropped. A
// second Ctrl-C stops waiting for the runs in flight. The exit code is 0
// when every instant ran (or had run before) and succeeded.
func (c *cli) followBackfill(ctx context.Context, f *config.File, ctl controls, job string, b *scheduler.Backfill) int {
	tty := isTerminal(c.rawStdout)
	start, lastLine, lastMove := time.Now(), time.Now(), time.Now()
	decided, hinted := b.Decided, false
	var again chan os.Signal
	tick := time.NewTicker(backfillPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if again == nil {
				again = make(chan os.Signal, 1)
				signal.Notify(again, os.Interrupt)
				defer signal.Stop(again)
				cctx, stop := context.WithTimeout(context.Background(), storeTimeout)
				nb, err := ctl.CancelBackfill(cctx, job)
				stop()
				if err != nil && !errors.Is(err, scheduler.ErrNoBackfill) {
					return c.storeFailed("backfill", f, err)
				}
				if nb != nil {
					b = nb
				}
				if tty {
					fmt.Fprintln(c.stdout)
				}
				fmt.Fprintf(c.stdout, "cancelling: %d %s in flight go on to their end; the rest is dropped (Ctrl-C again to stop waiting)\n",
					b.InFlight, plural(b.InFlight, "run", "runs"))
			}
		case <-again:
			fmt.Fprintf(c.stdout, "stopped waiting: %d runs of the backfill may still be in flight (scheduler status %s)\n", b.InFlight, job)
			return exitFailure
		case <-tick.C:
		}
		rctx, stop := context.WithTimeout(context.Background(), storeTimeout)
		nb, err := ctl.BackfillStatus(rctx, job)
		stop()
		if err != nil {
			if tty {
				fmt.Fprintln(c.stdout)
			}
			return c.storeFailed("backfill", f, err)
		}
		if nb == nil || nb.ID != b.ID {
			fmt.Fprintf(c.stderr, "scheduler backfill: the backfill of %s is gone from the store\n", job)
			return exitFailure
		}
		b = nb
		now := time.Now()
		if b.Decided != decided {
			decided, lastMove = b.Decided, now
		}
		if b.Done() {
			if tty {
				fmt.Fprintf(c.stdout, "\r%s\x1b[K\n", progressText(b, now.Sub(start)))
			}
			c.reportBackfill(job, b)
			if b.AllRan() {
				return exitOK
			}
			return exitFailure
		}
		if tty {
			fmt.Fprintf(c.stdout, "\r%s\x1b[K", progressText(b, now.Sub(start)))
		} else if now.Sub(lastLine) >= backfillLineEvery {
			fmt.Fprintln(c.stdout, progressText(b, now.Sub(start)))
			lastLine = now
		}
		if !hinted && now.Sub(lastMove) > backfillStuck && b.InFlight == 0 && !b.Cancelled {
			hinted = true
			if tty {
				fmt.Fprintln(c.stdout)
			}
			fmt.Fprintf(c.stderr, "note: no instant decided for %s: replicas that have %q in their table take the instants; is one running, with this store and key prefix? Is the job paused (its backfill waits)?\n",
				backfillStuck, job)
		}
	}
}

// progressText is one line of progress: a bar, decided/total, rate, ETA.
func progressText(b *scheduler.Backfill, elapsed time.Duration) string {
	const width = 30
	fill := 0
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(b.Decided) / s
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(b.Total-b.Decided)/rate) * time.Second).Round(time.Second).String()
	}
	// Done are the instants decided and, if they started, ended: 100%
	// only once every run has finished.
	pct := 0
	if done := b.Decided - b.InFlight; b.Total > 0 {
		pct = done * 100 / b.Total
		fill = done * width / b.Total
	}
	return fmt.Sprintf("[%s%s] %d/%d %3d%%  %.1f/s  ETA %s  (%d running)", strings.Repeat("#", fill), strings.Repeat("-", width-fill),
		b.Decided, b.Total, pct, rate, eta, b.InFlight)
}

// reportBackfill prints what a finished backfill did.
func (c *cli) reportBackfill(job string, b *scheduler.Backfill) {
	what := "done"
	switch {
	case b.Error != "":
		what = "stopped"
	case b.Cancelled:
		what = "cancelled"
	}
	fmt.Fprintf(c.stdout, "%s: backfill %s: %d of %d instants ran (%d succeeded, %d failed), %d had run before, %d skipped, %d dropped\n",
		job, what, b.Started, b.Total, b.Succeeded, b.Failed, b.Already, b.Skipped, b.Dropped())
	if b.Error != "" {
		fmt.Fprintf(c.stderr, "scheduler backfill: %s\n", b.Error)
	}
}

// backfillText is a backfill's state in one line, for status.
func backfillText(b *scheduler.Backfill) string {
	state := "going on"
	switch {
	case b.Done() && b.Error != "":
		state = "stopped " + stamp(b.Finished) + ": " + b.Error
	case b.Done() && b.Cancelled:
		state = "cancelled " + stamp(b.Finished)
	case b.Done():
		state = "finished " + stamp(b.Finished)
	case b.Cancelled:
		state = "cancelled, runs in flight ending"
	}
	return fmt.Sprintf("%d/%d instants decided (%d ran, %d had run before, %d skipped, %d dropped; %d running) from %s to %s, parallel %d: %s",
		b.Decided, b.Total, b.Started, b.Already, b.Skipped, b.Dropped(), b.InFlight, stamp(b.From), stamp(b.To), b.Parallel, state)
}
