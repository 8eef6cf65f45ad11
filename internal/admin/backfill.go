package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// BackfillRequest is the body of POST /api/v1/jobs/{name}/backfill.
type BackfillRequest struct {
	// From and To bound the range (RFC 3339), both included.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Parallel: at most this many of the backfill's runs at a time (1..100;
	// 0 or absent: 1).
	Parallel int `json:"parallel,omitempty"`
}

// maxBackfillBody bounds the body of a backfill request.
const maxBackfillBody = 4 << 10

// startBackfill answers POST /api/v1/jobs/{name}/backfill: 202 with the
// backfill's state; 400 for a bad body or range, 409 when the job has a
// backfill going on, 501 when the store cannot backfill (Redlock).
func (a *api) startBackfill(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	var req BackfillRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBackfillBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, `the body must be {"from": RFC 3339, "to": RFC 3339, "parallel": N}: `+err.Error())
		return
	}
	b, ok := a.backfillCall(w, r, j, func(ctx context.Context) (*scheduler.Backfill, error) {
		return a.cfg.Control.Backfill(ctx, j, req.From, req.To, req.Parallel)
	})
	if !ok {
		return
	}
	a.log.Info("admin: backfill requested", "job", j.Name, "from", b.From, "to", b.To, "instants", b.Total,
		"parallel", b.Parallel, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, b)
}

// getBackfill answers GET /api/v1/jobs/{name}/backfill: 200 with the
// job's backfill (going on, or finished within the last day), 404 if none.
func (a *api) getBackfill(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	b, ok := a.backfillCall(w, r, j, func(ctx context.Context) (*scheduler.Backfill, error) {
		return a.cfg.Control.BackfillStatus(ctx, j.Name)
	})
	if !ok {
		return
	}
	if b == nil {
		writeError(w, http.StatusNotFound, "job "+j.Name+" has no backfill")
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// cancelBackfill answers DELETE /api/v1/jobs/{name}/backfill: 200 with the
// cancelled backfill (its runs in flight go on), 404 if none goes on.
func (a *api) cancelBackfill(w http.ResponseWriter, r *http.Request) {
	j, ok := a.lookup(w, r)
	if !ok {
		return
	}
	b, ok := a.backfillCall(w, r, j, func(ctx context.Context) (*scheduler.Backfill, error) {
		return a.cfg.Control.CancelBackfill(ctx, j.Name)
	})
	if !ok {
		return
	}
	a.log.Info("admin: backfill cancelled", "job", j.Name, "dropped", b.Dropped(), "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, b)
}

// backfillCall makes one of Control's backfill calls for job j within the
// store's timeout. On an error it answers it and returns false: 400 for a
// bad range, 409 when a backfill goes on already, 404 when none goes on,
// 501 when the store cannot backfill (Redlock), 503 for the store's own.
func (a *api) backfillCall(w http.ResponseWriter, r *http.Request, j scheduler.Job,
	call func(context.Context) (*scheduler.Backfill, error)) (*scheduler.Backfill, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	b, err := call(ctx)
	if err == nil {
		return b, true
	}
	msg := strings.TrimPrefix(err.Error(), "scheduler: ")
	switch {
	case errors.Is(err, scheduler.ErrBackfillRange):
		writeError(w, http.StatusBadRequest, msg)
	case errors.Is(err, scheduler.ErrBackfillBusy):
		writeError(w, http.StatusConflict, msg+"; DELETE it first")
	case errors.Is(err, scheduler.ErrNoBackfill):
		writeError(w, http.StatusNotFound, "job "+j.Name+" has no backfill going on")
	case errors.Is(err, scheduler.ErrBackfillUnsupported):
		writeError(w, http.StatusNotImplemented, msg)
	default:
		a.storeError(w, r, err)
	}
	return nil, false
}
