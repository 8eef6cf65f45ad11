package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Acting on one run: an operator cancels a running run, or asks for an
// ended one again.

var (
	// ErrNoRun is the error of Cancel and Retry for a run id the store has
	// no record of (not decided yet, expired, or never a run).
	ErrNoRun = errors.New("scheduler: no such run")
	// ErrNotRunning is the error of Cancel for a run that is not running
	// (it ended, or never started).
	ErrNotRunning = errors.New("scheduler: the run is not running")
	// ErrStillRunning is the error of Retry for a run that has not ended.
	ErrStillRunning = errors.New("scheduler: the run has not ended")
	// ErrBadRunID is the error of Cancel and Retry for an id that is not
	// "<job>@<suffix>" with a valid job name.
	ErrBadRunID = errors.New("scheduler: not a run id")
)

// maxWho bounds the text saying who asked, as kept in a record.
const maxWho = 200

// unprintable reports the runes an operator's text (a pause reason, who
// asked) must not carry into a terminal or a page: whitespace other than a
// space, control characters, and the bidirectional controls (U+202E...),
// which would show "(paused by ...)" after them reversed, or anything else
// the text wants to hide.
func unprintable(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// cleanWho makes who fit a record: printable, bounded, never empty.
func cleanWho(who string) string {
	who = strings.Map(func(r rune) rune {
		if unprintable(r) {
			return ' '
		}
		return r
	}, strings.TrimSpace(who))
	if who == "" {
		who = "an operator"
	}
	return capText(who, maxWho)
}

// Cancel asks the run to stop, wherever it runs: its record says who asked
// at once, its replica learns it at the run's next lease renewal (within a
// third of the job's lease), cancels the job's context with a cause that
// errors.Is(..., ErrCancelled) recognises (a command gets SIGTERM, then
// SIGKILL after its kill_grace) and closes the record as cancelled. The
// run keeps its slot until then; a run that ends before it hears keeps its
// own outcome. Errors: ErrNoRun, ErrNotRunning (wrapped, with the outcome),
// or the store's.
func (c *Control) Cancel(ctx context.Context, runID, who string) error {
	job, _, ok := store.SplitRunID(runID)
	if !ok {
		return fmt.Errorf("%w: %q", ErrBadRunID, runID)
	}
	a, outcome, err := c.store.Cancel(ctx, job, runID, cleanWho(who))
	switch {
	case err != nil:
		return err
	case a == store.CancelNone:
		return fmt.Errorf("%w: %s", ErrNoRun, runID)
	case a == store.CancelEnded:
		return fmt.Errorf("%w: %s is %s", ErrNotRunning, runID, outcome)
	}
	return nil
}

// Retry asks the cluster to run the job of an ended run again, now, as a
// manual run (Trigger) linked to it: the new run's record says RetryOf,
// the old one's RetriedAs (Get). It returns the new run id. Errors: ErrNoRun
// (neither its record nor the job's history has it), ErrStillRunning,
// ErrQueueFull, or the store's.
func (c *Control) Retry(ctx context.Context, runID, who string) (string, error) {
	job, _, ok := store.SplitRunID(runID)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrBadRunID, runID)
	}
	// A record expires before its history entry: an ended run found only
	// in the history may be retried too.
	ended := false
	if r, err := c.store.Get(ctx, job, store.SuffixOf(runID)); err != nil {
		return "", err
	} else if r == nil {
		hist, err := c.store.History(ctx, job, MaxHistoryLimit)
		if err != nil {
			return "", err
		}
		for _, h := range hist {
			ended = ended || h.ID == runID
		}
		if !ended {
			return "", fmt.Errorf("%w: %s", ErrNoRun, runID)
		}
	}
	id := newManualID(job)
	a, err := c.store.Retry(ctx, job, runID, id, cleanWho(who), ended)
	switch {
	case err != nil:
		return "", err
	case a == store.RetryNone:
		return "", fmt.Errorf("%w: %s", ErrNoRun, runID)
	case a == store.RetryRunning:
		return "", fmt.Errorf("%w: %s", ErrStillRunning, runID)
	case a == store.RetryFull:
		return "", fmt.Errorf("%w: job %q has %d manual runs pending", ErrQueueFull, job, MaxPendingManual)
	}
	return id, nil
}

// linkRetries fills in r's RetryOf, RetriedAs and RetriedBy from links.
func linkRetries(r *Run, links []store.RetryLink) {
	for _, l := range links { // oldest first: the latest retry wins
		if l.ID == r.ID {
			r.RetryOf, r.RetriedBy = l.Of, l.By
		}
		if l.Of == r.ID {
			r.RetriedAs = l.ID
		}
	}
}
