package admin

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/internal/across"
	"github.com/solocron/solocron/scheduler"
)

// The reads across jobs, as the console's jobs page (its summary strip),
// runs page and pools page show them: each read of every job's state costs
// one Overview (two pipelined round trips on one Redis deployment).

// Summary is the answer of GET /api/v1/summary: what needs a look. Bad
// counts jobs with a run that failed, timed out or lost its lease within
// the last hour (day); Missed jobs with a missed instant.
type Summary = across.Summary

// overview reads every job of the table, recent runs of each.
func (a *api) overview(w http.ResponseWriter, r *http.Request, tab []scheduler.Job, recent int) ([]scheduler.Overview, bool) {
	if len(tab) == 0 {
		return nil, true
	}
	names := make([]string, len(tab))
	for i, j := range tab {
		names[i] = j.Name
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.StoreTimeout)
	defer cancel()
	ov, err := a.cfg.Control.Overview(ctx, names, recent)
	if err != nil {
		a.storeError(w, r, err)
		return nil, false
	}
	return ov, true
}

func (a *api) summary(w http.ResponseWriter, r *http.Request) {
	tab := a.cfg.Jobs()
	ov, ok := a.overview(w, r, tab, 1)
	if !ok {
		return
	}
	s := across.Summarize(tab, ov, a.cfg.Now())
	writeJSON(w, http.StatusOK, s)
}

// AcrossRuns is the answer of GET /api/v1/runs: every job's runs that
// match, newest instant first. It reads each job's latest PerJob runs;
// More says that more matched than the limit.
type AcrossRuns struct {
	Runs   []scheduler.Run `json:"runs"`
	PerJob int             `json:"per_job"`
	More   bool            `json:"more,omitempty"`
}

// sinceParam reads ?since=: a Go duration, or whole days ("7d").
func sinceParam(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return 0, true
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		writeError(w, http.StatusBadRequest, "since must be a positive duration (90m, 24h) or days (7d)")
		return 0, false
	}
	return d, true
}

func (a *api) acrossRuns(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("outcome")
	if want != "" && !slices.Contains(across.Filters, want) {
		writeError(w, http.StatusBadRequest, "outcome must be one of: "+strings.Join(across.Filters, ", "))
		return
	}
	span, ok := sinceParam(w, r)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", 200, maxRunsLimit)
	if !ok {
		return
	}
	tab := a.cfg.Jobs()
	out := AcrossRuns{Runs: []scheduler.Run{}, PerJob: across.PerJob(len(tab))}
	ov, ok := a.overview(w, r, tab, out.PerJob)
	if !ok {
		return
	}
	now := a.cfg.Now()
	for _, o := range ov {
		for _, run := range slices.Concat(o.Running, o.History) {
			at := cmp.Or(run.FinishedAt, run.StartedAt, run.ScheduledAt)
			if across.Match(want, run) && (span == 0 || (!run.ScheduledAt.IsZero() && now.Sub(at) <= span)) {
				out.Runs = append(out.Runs, run)
			}
		}
	}
	slices.SortStableFunc(out.Runs, func(x, y scheduler.Run) int { return y.ScheduledAt.Compare(x.ScheduledAt) })
	if len(out.Runs) > limit {
		out.Runs, out.More = out.Runs[:limit], true
	}
	writeJSON(w, http.StatusOK, out)
}

// Pool is one pool of GET /api/v1/pools: its size, the slots held and by
// which runs, the runs of its jobs waiting, and its jobs.
type Pool struct {
	Name    string   `json:"name"`
	Size    int      `json:"size"`
	Used    int      `json:"used"`
	Holders []string `json:"holders"`
	Waiting int      `json:"waiting"`
	Jobs    []string `json:"jobs"`
}

// PoolList is the answer of GET /api/v1/pools, in the order of names.
type PoolList struct {
	Pools []*Pool `json:"pools"`
}

func (a *api) pools(w http.ResponseWriter, r *http.Request) {
	var pooled []scheduler.Job
	for _, j := range a.cfg.Jobs() {
		if j.Pool != "" {
			pooled = append(pooled, j)
		}
	}
	ov, ok := a.overview(w, r, pooled, 1)
	if !ok {
		return
	}
	byName := map[string]*Pool{}
	out := []*Pool{}
	for i, j := range pooled {
		p := byName[j.Pool]
		if p == nil {
			p = &Pool{Name: j.Pool, Size: j.PoolSize, Holders: []string{}}
			byName[j.Pool] = p
			out = append(out, p)
		}
		p.Jobs = append(p.Jobs, j.Name)
		p.Waiting += ov[i].Waiting + ov[i].PendingManual
		if u := ov[i].Pool; u != nil {
			p.Used, p.Size = u.Used, max(p.Size, u.Size)
			if u.Holders != nil {
				p.Holders = u.Holders
			}
		}
	}
	slices.SortFunc(out, func(x, y *Pool) int { return strings.Compare(x.Name, y.Name) })
	writeJSON(w, http.StatusOK, PoolList{Pools: out})
}
