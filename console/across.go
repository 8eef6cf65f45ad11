package console

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/solocron/solocron/internal/across"
	"github.com/solocron/solocron/scheduler"
)

// The pages across jobs: the summary strip of the jobs page, the runs of
// every job (what failed tonight?) and the pools.

// summary is the jobs page's strip: what needs a look, each a link to the
// list behind it.
type summary = across.Summary

func summarize(tab []scheduler.Job, ov []scheduler.Overview, now time.Time) summary {
	return across.Summarize(tab, ov, now)
}

// The runs page's filters.
var (
	runOutcomes = append([]string{""}, across.Filters...)
	runSpans    = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "": 0}
)

// runsShown bounds the runs page.
const runsShown = 200

type runRow struct {
	scheduler.Run
	Outcome outcomeView
	Last    string // the error's or the output's last line
}

type runsView struct {
	Rows            []runRow
	Outcome, Since  string
	Outcomes, Spans []string
	PerJob, Jobs    int
	More            bool
	// Q keeps the runs whose id (the job's name and the instant) holds it,
	// in any case; Replica those a replica ran ("" any). Replicas are the
	// replicas the runs read name, for the form's choice: in an incident,
	// what did the replica that died run, and what is it still holding?
	Q, Replica string
	Replicas   []string
}

// maxQuery bounds the runs page's search words.
const maxQuery = 200

func matchOutcome(want string, r scheduler.Run) bool { return across.Match(want, r) }

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := runsView{Outcome: q.Get("outcome"), Since: q.Get("since"), Outcomes: runOutcomes, Spans: []string{"", "1h", "6h", "24h", "7d"},
		Q: strings.TrimSpace(q.Get("q")), Replica: q.Get("replica")}
	if len(v.Q) > maxQuery || len(v.Replica) > maxQuery {
		c.fail(w, r, http.StatusBadRequest, "q and replica are at most 200 characters.")
		return
	}
	if !slices.Contains(runOutcomes, v.Outcome) {
		c.fail(w, r, http.StatusBadRequest, "outcome must be one of: "+strings.Join(runOutcomes[1:], ", ")+".")
		return
	}
	span, ok := runSpans[v.Since]
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "since must be 1h, 6h, 24h or 7d.")
		return
	}
	tab := c.cfg.Jobs()
	names := make([]string, len(tab))
	for i, j := range tab {
		names[i] = j.Name
	}
	v.Jobs, v.PerJob = len(tab), across.PerJob(len(tab))
	ctx, cancel := c.ctx(r)
	defer cancel()
	ov, err := c.overviewRuns(ctx, names, v.PerJob)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	now := c.cfg.Now()
	var runs []scheduler.Run
	for _, o := range ov {
		runs = append(runs, o.Running...)
		runs = append(runs, o.History...)
	}
	var rows []runRow
	seen := map[string]bool{}
	lowQ := strings.ToLower(v.Q)
	for _, run := range runs {
		if run.Replica != "" && !seen[run.Replica] {
			seen[run.Replica] = true
			v.Replicas = append(v.Replicas, run.Replica)
		}
		at := cmp.Or(run.FinishedAt, run.StartedAt, run.ScheduledAt)
		if !matchOutcome(v.Outcome, run) || (span > 0 && (run.ScheduledAt.IsZero() || now.Sub(at) > span)) ||
			(v.Replica != "" && run.Replica != v.Replica) || (lowQ != "" && !strings.Contains(strings.ToLower(run.ID), lowQ)) {
			continue
		}
		run = c.clean(run)
		rows = append(rows, runRow{Run: run, Outcome: outcomeOf(runOutcome(run)), Last: lastLine(run)})
	}
	// Newest instant first, across jobs.
	sort.SliceStable(rows, func(i, k int) bool { return rows[i].ScheduledAt.After(rows[k].ScheduledAt) })
	if len(rows) > runsShown {
		rows, v.More = rows[:runsShown], true
	}
	v.Rows = rows
	if v.Replica != "" && !seen[v.Replica] {
		v.Replicas = append(v.Replicas, v.Replica) // the choice stays in the form
	}
	slices.Sort(v.Replicas)
	c.render(w, r, http.StatusOK, "runs", "Runs", v)
}

// lastLine is what a failed run's row shows besides its error: the last
// non-empty line of its output, when the error does not say it already.
func lastLine(r scheduler.Run) string {
	if r.Output == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(r.Output, "\n\r\t "), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" || strings.Contains(r.Error, last) {
		return ""
	}
	if len(last) > 200 {
		last = capLine(last, 200)
	}
	return last
}

func capLine(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

type poolView struct {
	Name       string
	Size, Used int
	Holders    []string
	Waiting    int
	Jobs       []string
}

func (c *Console) poolsPage(w http.ResponseWriter, r *http.Request) {
	tab := c.cfg.Jobs()
	var names []string
	for _, j := range tab {
		if j.Pool != "" {
			names = append(names, j.Name)
		}
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	var ov []scheduler.Overview
	if len(names) > 0 {
		var err error
		if ov, err = c.cfg.Control.Overview(ctx, names, 1); err != nil {
			c.storeFailed(w, r, err)
			return
		}
	}
	byName := map[string]*poolView{}
	var pools []*poolView
	k := 0
	for _, j := range tab {
		if j.Pool == "" {
			continue
		}
		o := ov[k]
		k++
		p := byName[j.Pool]
		if p == nil {
			p = &poolView{Name: j.Pool, Size: j.PoolSize}
			byName[j.Pool] = p
			pools = append(pools, p)
		}
		p.Jobs = append(p.Jobs, j.Name)
		p.Waiting += o.Waiting + o.PendingManual
		if u := o.Pool; u != nil {
			p.Used, p.Holders, p.Size = u.Used, u.Holders, max(p.Size, u.Size)
		}
	}
	slices.SortFunc(pools, func(a, b *poolView) int { return strings.Compare(a.Name, b.Name) })
	c.render(w, r, http.StatusOK, "pools", "Pools", pools)
}

// runsLink is the runs page filtered.
func runsLink(prefix, outcome, since string) string {
	q := url.Values{}
	if outcome != "" {
		q.Set("outcome", outcome)
	}
	if since != "" {
		q.Set("since", since)
	}
	return prefix + "/runs?" + q.Encode()
}
