package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Control acts on the whole cluster through the store: pause and resume a
// job, trigger a manual run, read status and history. It needs no running
// replica (the command line uses it), and its effects reach every replica.
type Control struct {
	store store.Backend
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
		return strings.Join(strings.FieldsFunc(s, unprintable), " ")
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
	return c.store.SetPaused(ctx, job, v, why)
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
	if err := c.store.Trigger(ctx, job, id); err != nil {
		return "", err
	}
	return id, nil
}

// A manual run's id (Trigger, Retry) is "<job>@manual-" then the Unix
// second it was asked in base 36, then manualRandom random bytes in lower
// case hex.
const (
	manualMark   = "@manual-"
	manualRandom = 6
)

// newManualID draws a manual run's id: "<job>@manual-<unique suffix>".
// IsManualRunID recognizes exactly its shape.
func newManualID(job string) string {
	var b [manualRandom]byte
	_, _ = rand.Read(b[:])
	return job + manualMark + strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b[:])
}

// IsManualRunID reports whether id has the shape of the id of a manual run
// (one that Trigger or Retry asked for): "<job>@manual-<s><h>", where job is
// a valid job name, s the Unix second of the request in base 36 (as
// strconv.FormatInt writes it) and h 12 lower case hex digits. It says
// nothing of whether such a run exists: a console uses it to tell an id it
// may have just been given (a retry not picked up yet) from a made-up one.
func IsManualRunID(id string) bool {
	job, rest, ok := strings.Cut(id, manualMark)
	if !ok || !ValidJobName(job) || len(rest) <= 2*manualRandom {
		return false
	}
	secs, random := rest[:len(rest)-2*manualRandom], rest[len(rest)-2*manualRandom:]
	for _, c := range random {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	n, err := strconv.ParseInt(secs, 36, 64)
	return err == nil && n >= 0 && strconv.FormatInt(n, 36) == secs
}

// History returns the job's finished run records, newest first (the latest
// to end first: with concurrency above one, an earlier instant may end
// later), at most limit of them (the store keeps the job's history_limit),
// each with its retry links (RetryOf, RetriedAs, RetriedBy) as Get gives
// them.
func (c *Control) History(ctx context.Context, job string, limit int) ([]Run, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	runs, err := c.store.History(ctx, job, limit)
	if err != nil || len(runs) == 0 {
		return runs, err
	}
	// Advisory, as in Get: the runs are shown without their links rather
	// than not at all.
	if links, err := c.store.Retries(ctx, job); err == nil && len(links) > 0 {
		for i := range runs {
			linkRetries(&runs[i], links)
		}
	}
	return runs, nil
}

// Status reads the job's state with the history's latest limit runs.
func (c *Control) Status(ctx context.Context, job string, limit int) (*Status, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 10
	}
	return c.store.Status(ctx, job, limit)
}

// Get returns one run's record while the store keeps it (its retention), or
// nil if it has none: not decided yet, or expired (see History).
func (c *Control) Get(ctx context.Context, runID string) (*Run, error) {
	job, suffix, ok := store.SplitRunID(runID)
	if !ok {
		return nil, fmt.Errorf("scheduler: %q is not a run id", runID)
	}
	r, err := c.store.Get(ctx, job, suffix)
	if r == nil || err != nil {
		return r, err
	}
	// Advisory: a run is shown without its links rather than not at all.
	if links, err := c.store.Retries(ctx, job); err == nil {
		linkRetries(r, links)
	}
	return r, nil
}
