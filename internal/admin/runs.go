package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/solocron/solocron/scheduler"
)

// Acting on one run: cancel (a running run) and retry (an ended one).

// RunAction is the answer of POST /api/v1/runs/{id}/cancel and retry.
type RunAction struct {
	RunID string `json:"run_id"`
	// CancelledBy is who the record says asked (cancel).
	CancelledBy string `json:"cancelled_by,omitempty"`
	// RetryOf is the run retried (retry): RunID is the new manual run.
	RetryOf string `json:"retry_of,omitempty"`
}

// Who names the asker of an action as a run's record keeps it: the way in
// and the client's address.
func Who(via string, r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return via + " from " + host
}

// runActionBody is the optional body of POST /api/v1/runs/{id}/cancel and
// retry.
type runActionBody struct {
	// By names who asks, for a client acting for someone (the command
	// line: "cli user@host"); the record says "<by> via api from <address>".
	By string `json:"by"`
}

// actionWho is who asks for a run action, as its record keeps it: the
// body's "by" (if any) via the API from the client's address. It answers
// 400 itself for a body that is not {"by": "..."}.
func actionWho(w http.ResponseWriter, r *http.Request) (string, bool) {
	var b runActionBody
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err == nil && len(bytes.TrimSpace(raw)) > 0 {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, `the body must be empty or {"by": "..."} (at most 4 KiB)`)
		return "", false
	}
	who := Who("api", r)
	if b.By != "" {
		who = b.By + " via " + who
	}
	return who, true
}

func (a *api) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	who, ok := actionWho(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	err := a.cfg.Control.Cancel(ctx, id, who)
	if a.runError(w, r, err) {
		return
	}
	a.log.Info("admin: run cancel asked", "run_id", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, RunAction{RunID: id, CancelledBy: who})
}

func (a *api) retryRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	who, ok := actionWho(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	again, err := a.cfg.Control.Retry(ctx, id, who)
	if a.runError(w, r, err) {
		return
	}
	a.log.Info("admin: run retry asked", "run_id", id, "retry", again, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusAccepted, RunAction{RunID: again, RetryOf: id})
}

// runError answers err of Cancel or Retry, if any: 404, 409, 429, 400 for
// a malformed id, 503 for the store's.
func (a *api) runError(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, scheduler.ErrNoRun):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, scheduler.ErrNotRunning), errors.Is(err, scheduler.ErrStillRunning):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, scheduler.ErrQueueFull):
		writeError(w, http.StatusTooManyRequests, err.Error()+": try again once replicas have picked them up")
	case errors.Is(err, scheduler.ErrBadRunID):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		a.storeError(w, r, err)
	}
	return true
}
