package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/scheduler"
)

// controls is what status, history, trigger, pause, resume, backfill,
// cancel and retry ask of the cluster: a *scheduler.Control on the store
// the table names, or adminControl, a daemon's admin API (for the embedded
// store, which lives inside its daemon, or with --admin URL).
type controls interface {
	Status(ctx context.Context, job string, limit int) (*scheduler.Status, error)
	History(ctx context.Context, job string, limit int) ([]scheduler.Run, error)
	Trigger(ctx context.Context, job string) (string, error)
	Get(ctx context.Context, runID string) (*scheduler.Run, error)
	Pause(ctx context.Context, job string) error
	PauseWithReason(ctx context.Context, job, reason, who string) error
	Resume(ctx context.Context, job string) error
	Cancel(ctx context.Context, runID, who string) error
	Retry(ctx context.Context, runID, who string) (string, error)
	Backfill(ctx context.Context, job scheduler.Job, from, to time.Time, parallel int) (*scheduler.Backfill, error)
	BackfillStatus(ctx context.Context, job string) (*scheduler.Backfill, error)
	CancelBackfill(ctx context.Context, job string) (*scheduler.Backfill, error)
	Replicas(ctx context.Context) ([]scheduler.Replica, error)
}

var _ controls = (*scheduler.Control)(nil)

// adminControl is controls over a daemon's admin API.
type adminControl struct {
	base  *url.URL
	token string
	http  *http.Client
}

// adminURL is the admin API of the daemon a table describes: admin.listen,
// with a wildcard host read as loopback, https when admin.tls is set.
func adminURL(f *config.File) (string, error) {
	if f.Admin.Listen == "" {
		return "", errors.New("the table sets no admin.listen")
	}
	host, port, err := net.SplitHostPort(f.Admin.Listen)
	if err != nil {
		return "", fmt.Errorf("admin.listen %q: %v", f.Admin.Listen, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if f.Admin.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

func newAdminControl(raw, token string) (*adminControl, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--admin %q: want http://HOST:PORT or https://HOST:PORT", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &adminControl{base: u, token: token, http: &http.Client{Timeout: storeTimeout}}, nil
}

// apiError is an error answer of the admin API.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

// do sends a request and decodes a 2xx answer into out.
func (a *adminControl) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base.String()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		// The command names the API's address already ("the daemon's admin
		// API at URL: ..."): say what went wrong, not the request again.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w (is the daemon running, with admin.listen?)", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		ae := &apiError{code: resp.StatusCode, msg: e.Error}
		if resp.StatusCode == http.StatusUnauthorized {
			ae.msg += " (the CLI sends the table's admin.token)"
		}
		return ae
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

func jobPath(job string) string { return "/api/v1/jobs/" + url.PathEscape(job) }

func (a *adminControl) Status(ctx context.Context, job string, limit int) (*scheduler.Status, error) {
	var js admin.JobStatus
	if err := a.do(ctx, http.MethodGet, jobPath(job)+"?limit="+strconv.Itoa(limit), nil, &js); err != nil {
		return nil, err
	}
	return &js.Status, nil
}

func (a *adminControl) History(ctx context.Context, job string, limit int) ([]scheduler.Run, error) {
	var rl admin.RunList
	if err := a.do(ctx, http.MethodGet, jobPath(job)+"/runs?limit="+strconv.Itoa(limit), nil, &rl); err != nil {
		return nil, err
	}
	return rl.Runs, nil
}

func (a *adminControl) Trigger(ctx context.Context, job string) (string, error) {
	var tr admin.Triggered
	err := a.do(ctx, http.MethodPost, jobPath(job)+"/trigger", nil, &tr)
	if ae := (*apiError)(nil); errors.As(err, &ae) && ae.code == http.StatusTooManyRequests {
		return "", fmt.Errorf("%w: %s", scheduler.ErrQueueFull, ae.msg)
	}
	return tr.RunID, err
}

// getLimit is how many of a job's latest runs Get looks through.
const getLimit = 100

// Get finds a run among its job's running and latest runs; nil when it is
// not there (a manual request no replica picked up yet).
func (a *adminControl) Get(ctx context.Context, runID string) (*scheduler.Run, error) {
	job, _, ok := strings.Cut(runID, "@")
	if !ok {
		return nil, fmt.Errorf("%q is not a run id", runID)
	}
	st, err := a.Status(ctx, job, getLimit)
	if err != nil {
		return nil, err
	}
	for _, runs := range [][]scheduler.Run{st.Running, st.History} {
		for _, r := range runs {
			if r.ID == runID {
				return &r, nil
			}
		}
	}
	return nil, nil
}

func (a *adminControl) Pause(ctx context.Context, job string) error {
	return a.do(ctx, http.MethodPost, jobPath(job)+"/pause", nil, nil)
}

// PauseWithReason sends the reason, and who asks as "by": the daemon
// records "<reason> (paused by <who> via api from <address>)".
func (a *adminControl) PauseWithReason(ctx context.Context, job, reason, who string) error {
	return a.do(ctx, http.MethodPost, jobPath(job)+"/pause", map[string]string{"reason": reason, "by": who}, nil)
}

func (a *adminControl) Resume(ctx context.Context, job string) error {
	return a.do(ctx, http.MethodPost, jobPath(job)+"/resume", nil, nil)
}

// backfillErr turns the admin API's backfill answers back into the
// scheduler's errors, which the backfill command tells apart.
func backfillErr(err error) error {
	ae := (*apiError)(nil)
	if !errors.As(err, &ae) {
		return err
	}
	var sentinel error
	switch ae.code {
	case http.StatusBadRequest:
		sentinel = scheduler.ErrBackfillRange
	case http.StatusConflict:
		sentinel = scheduler.ErrBackfillBusy
	case http.StatusNotFound:
		sentinel = scheduler.ErrNoBackfill
	case http.StatusNotImplemented:
		sentinel = scheduler.ErrBackfillUnsupported
	default:
		return err
	}
	return &sentinelError{sentinel: sentinel, msg: ae.msg}
}

// sentinelError is the admin API's message (which says what the sentinel
// says already: "bad backfill range: from ... is after to ...") carrying
// the scheduler's sentinel for errors.Is.
type sentinelError struct {
	sentinel error
	msg      string
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.sentinel }

func (a *adminControl) Backfill(ctx context.Context, job scheduler.Job, from, to time.Time, parallel int) (*scheduler.Backfill, error) {
	var b scheduler.Backfill
	err := a.do(ctx, http.MethodPost, jobPath(job.Name)+"/backfill", admin.BackfillRequest{From: from, To: to, Parallel: parallel}, &b)
	if err != nil {
		return nil, backfillErr(err)
	}
	return &b, nil
}

func (a *adminControl) BackfillStatus(ctx context.Context, job string) (*scheduler.Backfill, error) {
	var b scheduler.Backfill
	err := a.do(ctx, http.MethodGet, jobPath(job)+"/backfill", nil, &b)
	if errors.Is(backfillErr(err), scheduler.ErrNoBackfill) {
		return nil, nil
	}
	if err != nil {
		return nil, backfillErr(err)
	}
	return &b, nil
}

func (a *adminControl) CancelBackfill(ctx context.Context, job string) (*scheduler.Backfill, error) {
	var b scheduler.Backfill
	if err := a.do(ctx, http.MethodDelete, jobPath(job)+"/backfill", nil, &b); err != nil {
		return nil, backfillErr(err)
	}
	return &b, nil
}

func (a *adminControl) Replicas(ctx context.Context) ([]scheduler.Replica, error) {
	var rl admin.ReplicaList
	if err := a.do(ctx, http.MethodGet, "/api/v1/replicas", nil, &rl); err != nil {
		return nil, err
	}
	return rl.Replicas, nil
}
