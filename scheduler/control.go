package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// MaxPendingManual bounds the manual runs of one job that may wait at once,
// pending (not picked up yet) or queued for a slot (picked up, waiting for
// admission): Trigger answers ErrQueueFull beyond it.
const MaxPendingManual = 100

// ErrQueueFull is the error of Trigger when MaxPendingManual manual runs of
// the job wait already: wait for some to run.
var ErrQueueFull = errors.New("scheduler: the job's queue of waiting manual runs is full")

// Control acts on the whole cluster through the store: pause and resume a
// job, trigger a manual run, read status and history. It needs no running
// replica (the command line uses it), and its effects reach every replica.
type Control struct {
	store backend
}

func checkJob(job string) error {
	if !ValidJobName(job) {
		return fmt.Errorf("scheduler: %q is not a valid job name", job)
	}
	return nil
}

// Pause stops every replica from starting the job, from its next claim on;
// those runs are recorded skipped_paused, and so are its scheduled and
// catch-up runs already queued for a slot (overlap: wait) when their turn
// comes. Runs in flight go on, and manual runs (Trigger) still run: someone
// asked for them.
func (c *Control) Pause(ctx context.Context, job string) error {
	return c.setPaused(ctx, job, true, "")
}

// PauseWithReason is Pause that records why and who asked: Status's
// PausedWhy, the console, `scheduler status` and the paused notification
// (its reason) show "<reason> (paused by <who>)". Either may be empty;
// the text is bounded (512 bytes) and kept on one line.
func (c *Control) PauseWithReason(ctx context.Context, job, reason, who string) error {
	return c.setPaused(ctx, job, true, pauseWhy(reason, who))
}

// maxReason bounds the reason a pause keeps.
const maxReason = 512

func pauseWhy(reason, who string) string {
	oneLine := func(s string) string {
		return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	}
	reason, who = capText(oneLine(reason), maxReason), oneLine(who)
	switch {
	case who == "":
		return reason
	case reason == "":
		return "paused by " + capText(who, maxWho)
	}
	return reason + " (paused by " + capText(who, maxWho) + ")"
}

// Resume undoes Pause, or a pause the cluster made by itself
// (pause_after_failures), and clears the job's count of consecutive
// failures.
func (c *Control) Resume(ctx context.Context, job string) error {
	return c.setPaused(ctx, job, false, "")
}

func (c *Control) setPaused(ctx context.Context, job string, v bool, why string) error {
	if err := checkJob(job); err != nil {
		return err
	}
	return c.store.setPaused(ctx, job, v, why)
}

// Trigger asks the cluster to run the job now, once: the request waits in
// Redis until a replica that has the job in its table claims it (within a
// heartbeat, 1s by default); exactly one replica runs it. Manual runs ignore
// the pause flag but respect the job's concurrency and overlap policy. It
// returns the run id, "<job>@manual-<id>"; or an error wrapping
// ErrQueueFull when MaxPendingManual requests of the job wait (pending or
// queued for a slot).
func (c *Control) Trigger(ctx context.Context, job string) (string, error) {
	if err := checkJob(job); err != nil {
		return "", err
	}
	id := newManualID(job)
	if err := c.store.trigger(ctx, job, id); err != nil {
		return "", err
	}
	return id, nil
}

// newManualID draws a manual run's id: "<job>@manual-<unique suffix>".
func newManualID(job string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return job + "@manual-" + strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b[:])
}

// Run is one run's record.
type Run struct {
	ID           string    `json:"id"`
	Job          string    `json:"job"`
	Kind         Kind      `json:"kind"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	Decision     Outcome   `json:"decision"`
	Outcome      Outcome   `json:"outcome"`
	Replica      string    `json:"replica"`
	FencingToken int64     `json:"fencing_token,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	Attempts     int       `json:"attempts,omitempty"`
	Error        string    `json:"error,omitempty"`
	Output       string    `json:"output,omitempty"`
	// TraceID is the trace of the run's span (32 hex digits) when spans
	// were recorded, for finding the run in a tracing backend.
	TraceID string `json:"trace_id,omitempty"`
	// Slot is the concurrency slot (1..concurrency) a started run held;
	// its fencing token is above every earlier holder's of that slot.
	Slot int `json:"slot,omitempty"`
	// Paused is set on the run whose end paused its job
	// (pause_after_failures), and says why.
	Paused string `json:"paused,omitempty"`
	// CancelledBy says who asked the run to stop (Control.Cancel); its
	// outcome is cancelled unless it ended before it heard.
	CancelledBy string `json:"cancelled_by,omitempty"`
	// RetryOf is, for a manual run asked for by Control.Retry, the run it
	// retries; RetriedAs the latest retry of this run; RetriedBy who asked.
	// Filled in by Control.Get (the job's latest retries are kept).
	RetryOf   string `json:"retry_of,omitempty"`
	RetriedAs string `json:"retried_as,omitempty"`
	RetriedBy string `json:"retried_by,omitempty"`
}

// Duration is how long a finished run ran, or 0.
func (r Run) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// History returns the job's finished run records, newest first, at most
// limit of them (the store keeps the job's history_limit).
func (c *Control) History(ctx context.Context, job string, limit int) ([]Run, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	return c.store.history(ctx, job, limit)
}

// Status is a job's cluster-wide state.
type Status struct {
	Job    string `json:"job"`
	Paused bool   `json:"paused"`
	// PausedWhy says why the job is paused: why the cluster paused it by
	// itself (pause_after_failures), or the reason an operator gave
	// (PauseWithReason); "" for none.
	PausedWhy string `json:"paused_why,omitempty"`
	// ConsecutiveFailures counts the job's latest runs in a row that ended
	// failed, timed_out or lease_lost (reset by a success and by Resume).
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Running lists the runs in flight, on any replica.
	Running []Run `json:"running"`
	// Waiting counts runs queued for a slot (overlap: wait).
	Waiting int `json:"waiting"`
	// LastScheduled is the latest scheduled instant decided.
	LastScheduled time.Time `json:"last_scheduled,omitzero"`
	// PendingManual counts manual runs requested but not yet claimed.
	PendingManual int `json:"pending_manual"`
	// History holds the latest finished runs, newest first.
	History []Run `json:"history"`
	// Backfill is the job's backfill, going on or finished within the
	// last day; nil if none (Control.Backfill).
	Backfill *Backfill `json:"backfill,omitempty"`
	// Pool is the use of the job's pool (Job.Pool), nil for a job in none.
	Pool *PoolUse `json:"pool,omitempty"`
}

// Status reads the job's state with the history's latest limit runs.
func (c *Control) Status(ctx context.Context, job string, limit int) (*Status, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 10
	}
	return c.store.status(ctx, job, limit)
}

// Get returns one run's record while the store keeps it (its retention), or
// nil if it has none: not decided yet, or expired (see History).
func (c *Control) Get(ctx context.Context, runID string) (*Run, error) {
	job, suffix, ok := splitRunID(runID)
	if !ok {
		return nil, fmt.Errorf("scheduler: %q is not a run id", runID)
	}
	r, err := c.store.get(ctx, job, suffix)
	if r == nil || err != nil {
		return r, err
	}
	// Advisory: a run is shown without its links rather than not at all.
	if links, err := c.store.retries(ctx, job); err == nil {
		linkRetries(r, links)
	}
	return r, nil
}

func suffixOf(id string) string {
	_, s, _ := splitRunID(id)
	return s
}

func splitRunID(id string) (job, suffix string, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '@' {
			job, suffix = id[:i], id[i+1:]
			return job, suffix, ValidJobName(job) && suffix != ""
		}
	}
	return "", "", false
}
