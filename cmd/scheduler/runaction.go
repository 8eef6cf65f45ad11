package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/scheduler"
)

// Acting on one run: cancel RUN_ID (a running run, wherever it runs) and
// retry RUN_ID (an ended run again, as a manual run linked to it).

func cancelFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	wait := fs.Duration("wait", 10*time.Second, "wait this long for the run to end and report it; exit 0 only if it ended cancelled, 1 if it ended otherwise (it finished before its replica heard) or has not ended by then; 0 returns once the cancel is recorded")
	return func(pos []string) int {
		if *wait < 0 {
			return c.usageError("cancel", "--wait must not be negative")
		}
		return c.withRun("cancel", pos, func(ctx context.Context, f *config.File, ctl controls, job, id string) int {
			tctx, cancel := context.WithTimeout(ctx, storeTimeout)
			err := ctl.Cancel(tctx, id, "cli "+cliUser())
			cancel()
			if code, done := c.runActionFailed("cancel", f, job, id, err); done {
				return code
			}
			fmt.Fprintf(c.stdout, "%s: cancel recorded; the replica running it stops it at its next lease renewal\n", id)
			if *wait == 0 {
				return exitOK
			}
			return c.awaitRun(ctx, "cancel", f, ctl, job, id, *wait, scheduler.Cancelled)
		})
	}
}

func retryFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	c.adminFlag(fs)
	wait := fs.Duration("wait", 10*time.Second, "wait this long for the new run to end and report it; exit 0 only if it succeeded, 1 if it failed, timed out, was not started or has not ended by then; 0 returns at once")
	return func(pos []string) int {
		if *wait < 0 {
			return c.usageError("retry", "--wait must not be negative")
		}
		return c.withRun("retry", pos, func(ctx context.Context, f *config.File, ctl controls, job, id string) int {
			tctx, cancel := context.WithTimeout(ctx, storeTimeout)
			again, err := ctl.Retry(tctx, id, "cli "+cliUser())
			cancel()
			if code, done := c.runActionFailed("retry", f, job, id, err); done {
				return code
			}
			// The new run's id first, alone on its line, as trigger prints
			// it: what a script reads.
			fmt.Fprintln(c.stdout, again)
			if *wait == 0 {
				return exitOK
			}
			return c.awaitRun(ctx, "retry", f, ctl, job, again, *wait, scheduler.Succeeded)
		})
	}
}

// withRun is withControl for a command whose argument is one run id
// ("<job>@<suffix>", as history and status print them) of a job in the
// table.
func (c *cli) withRun(cmd string, pos []string, fn func(ctx context.Context, f *config.File, ctl controls, job, id string) int) int {
	if len(pos) != 1 {
		return c.usageError(cmd, "want exactly one RUN_ID, got %d arguments", len(pos))
	}
	id := pos[0]
	job, suffix, ok := strings.Cut(id, "@")
	if !ok || job == "" || suffix == "" {
		return c.usageError(cmd, "%q is not a run id: want JOB@..., as scheduler history JOB prints them", id)
	}
	// withControl checks that the job is in the table.
	return c.withControl(cmd, []string{job}, true, func(ctx context.Context, f *config.File, ctl controls, job string) int {
		return fn(ctx, f, ctl, job, id)
	})
}

// runActionFailed reports err of Cancel or Retry, if any, and returns the
// exit code: 1 for a run in no state to act on, or the store's failure;
// 2 for what is not a run id.
func (c *cli) runActionFailed(cmd string, f *config.File, job, id string, err error) (int, bool) {
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, scheduler.ErrBadRunID):
		return c.usageError(cmd, "%s", errText(err)), true
	case errors.Is(err, scheduler.ErrNoRun):
		fmt.Fprintf(c.stderr, "scheduler %s: no run %s in the store (not decided yet, or its record expired); scheduler history %s lists the job's runs\n", cmd, id, job)
	case errors.Is(err, scheduler.ErrNotRunning):
		fmt.Fprintf(c.stderr, "scheduler %s: %s; only a running run can be cancelled\n", cmd, errText(err))
	case errors.Is(err, scheduler.ErrStillRunning):
		fmt.Fprintf(c.stderr, "scheduler %s: %s; only an ended run can be retried (scheduler cancel %s stops it)\n", cmd, errText(err), id)
	case errors.Is(err, scheduler.ErrQueueFull):
		fmt.Fprintf(c.stderr, "scheduler %s: %d manual runs of %q are already waiting to be picked up (the most a job may have); try again once replicas have started some (scheduler status %s shows them)\n",
			cmd, scheduler.MaxPendingManual, job, job)
	default:
		return c.storeFailed(cmd, f, err), true
	}
	return exitFailure, true
}

func runPath(id, action string) string { return "/api/v1/runs/" + url.PathEscape(id) + "/" + action }

// runActionErr turns the admin API's answers to cancel and retry back into
// the scheduler's errors, which the commands tell apart.
func runActionErr(err error) error {
	ae := (*apiError)(nil)
	if !errors.As(err, &ae) {
		return err
	}
	var sentinel error
	switch {
	case ae.code == http.StatusBadRequest && strings.Contains(ae.msg, "not a run id"):
		sentinel = scheduler.ErrBadRunID
	case ae.code == http.StatusNotFound && strings.Contains(ae.msg, "no such run"):
		sentinel = scheduler.ErrNoRun
	case ae.code == http.StatusConflict && strings.Contains(ae.msg, "not running"):
		sentinel = scheduler.ErrNotRunning
	case ae.code == http.StatusConflict:
		sentinel = scheduler.ErrStillRunning
	case ae.code == http.StatusTooManyRequests:
		sentinel = scheduler.ErrQueueFull
	default:
		return err
	}
	// The daemon's text already says what the sentinel says, and more.
	return fmt.Errorf("%w%s", sentinel, strings.TrimPrefix(ae.msg, sentinel.Error()))
}

// Cancel sends who asks as "by": the record says "<who> via api from
// <address>".
func (a *adminControl) Cancel(ctx context.Context, runID, who string) error {
	return runActionErr(a.do(ctx, http.MethodPost, runPath(runID, "cancel"), map[string]string{"by": who}, nil))
}

// Retry sends who asks as "by", and returns the new run's id.
func (a *adminControl) Retry(ctx context.Context, runID, who string) (string, error) {
	var ra admin.RunAction
	if err := a.do(ctx, http.MethodPost, runPath(runID, "retry"), map[string]string{"by": who}, &ra); err != nil {
		return "", runActionErr(err)
	}
	return ra.RunID, nil
}
