package console

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// page is what every template gets.
type page struct {
	Title    string
	Prefix   string
	Replica  string
	Nav      string // which tab is current
	SignedIn bool   // a token is set and this visitor holds a session
	ReadOnly bool
	CSRF     string
	Flash    string
	Now      time.Time
	Data     any
	// Refresh, when above 0, has the browser load the page again after so
	// many seconds (a meta refresh, no script needed): an error page for a
	// store that did not answer recovers by itself once it answers.
	Refresh int
}

var funcs = template.FuncMap{
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return human(d)
	},
	// took says how long a run ran: "—" before it started or ended, and
	// "<1ms" for one that ended within the millisecond it started (the
	// records keep milliseconds), not the "—" of a run with no duration.
	"took": func(started, finished time.Time) string {
		if started.IsZero() || finished.IsZero() {
			return "—"
		}
		if d := finished.Sub(started); d >= time.Millisecond {
			return human(d)
		}
		return "<1ms"
	},
	"path":    url.PathEscape,
	"query":   url.QueryEscape,
	"outcome": outcomeOf,
	"add":     func(a, b int) int { return a + b },
	// offset says a clock offset: "+1.2ms" ahead of Redis, "-30ms" behind.
	"runs":     runsLink,
	"lastline": lastLine,
	"offset": func(d time.Duration) string {
		if d >= 0 {
			return "+" + d.Round(100*time.Microsecond).String()
		}
		return d.Round(100 * time.Microsecond).String()
	},
}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, name := range []string{"jobs", "job", "run", "replicas", "signin", "error", "runs", "pools"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	p := page{
		Title: title, Prefix: c.cfg.Prefix, Replica: c.cfg.Replica, Nav: name,
		SignedIn: c.cfg.Token != "" && c.Authenticate(r), ReadOnly: c.cfg.ReadOnly,
		CSRF: c.csrf(r), Now: c.cfg.Now().UTC(), Data: data,
	}
	if v, ok := data.(errorView); ok {
		p.Refresh = v.Refresh
	}
	switch r.URL.Query().Get("done") {
	case "trigger":
		p.Flash = "Run requested: a replica picks it up within a heartbeat."
	case "pause":
		p.Flash = "Paused cluster-wide."
	case "resume":
		p.Flash = "Resumed cluster-wide."
	case "backfill":
		p.Flash = "Backfill started: replicas run its instants within a heartbeat."
	case "backfill-cancel":
		p.Flash = "Backfill cancelled: runs it started go on to their end."
	case "cancel":
		p.Flash = "Cancel asked: the replica running it stops it at its next lease renewal."
	case "retry":
		p.Flash = "Retry requested: this new run is picked up within a heartbeat."
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.log.Error("console: cannot render a page", "page", name, "err", err)
		http.Error(w, "cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	body := buf.Bytes()
	if c.cfg.Redact != nil {
		// After the values were masked before escaping (clean): a secret
		// anywhere else on the page, as written.
		body = []byte(c.cfg.Redact(buf.String()))
	}
	_, _ = w.Write(body)
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	v := errorView{Message: msg}
	// A refused action (without JavaScript, the browser is on its error
	// page) leads back to the page it was sent from.
	if r.Method == http.MethodPost {
		if name := r.PathValue("name"); name != "" && c.jobNamed(name) {
			v.Back, v.BackTo = c.cfg.Prefix+"/jobs/"+url.PathEscape(name), "job "+name
		} else if id := r.PathValue("id"); id != "" && len(id) <= maxEcho && code != http.StatusBadRequest && code != http.StatusNotFound {
			// Not an id longer than any real one: the link would say it
			// back in full.
			v.Back, v.BackTo = c.cfg.Prefix+"/runs/"+url.PathEscape(id), "run "+clip(id)
		}
	}
	c.render(w, r, code, "error", http.StatusText(code), v)
}

// errorView is an error page: the message, and the page to go back to
// besides the jobs.
type errorView struct {
	Message      string
	Back, BackTo string
	Refresh      int // seconds before the browser loads the page again; 0 never
}

// maxEcho bounds a name or run id from the address that a page says back:
// longer than any real one (a job's name is at most 128 characters), short
// enough that a 100 kB address does not come back as a 100 kB page.
const maxEcho = 200

// clip is s cut to maxEcho bytes, on a character's boundary, with "…".
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return capLine(s, maxEcho)
}

// quoted is s, clipped, in quotes.
func quoted(s string) string { return strconv.Quote(clip(s)) }

func (c *Console) jobNamed(name string) bool {
	for _, j := range c.cfg.Jobs() {
		if j.Name == name {
			return true
		}
	}
	return false
}

// storeRetry is how often an error page for a store that did not answer
// loads itself again (and the Retry-After of the answer).
const storeRetry = 5

// storeFailed answers 503 for a store that did not answer (Redis down,
// unreachable, too slow). A page (GET) says so and loads itself again every
// storeRetry seconds, so an operator watching it during an outage sees the
// page come back with the store, not an error page that stays. An action
// (POST) says that whether it was applied is unknown: the store may have
// applied it and the answer got lost, and a second Run now would be a
// second run.
func (c *Console) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Warn("console: store error", "err", err)
	msg := "The store did not answer: " + c.redact(err.Error()) + "."
	w.Header().Set("Retry-After", strconv.Itoa(storeRetry))
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.fail(w, r, http.StatusServiceUnavailable, msg+" Whether the action was applied is unknown: check the page once the store answers before sending it again.")
		return
	}
	v := errorView{Message: msg, Refresh: storeRetry}
	c.render(w, r, http.StatusServiceUnavailable, "error", http.StatusText(http.StatusServiceUnavailable), v)
}

// outcomeView is an outcome as shown: a symbol and words, so that the
// colour (its Class) is never the only sign.
type outcomeView struct {
	Class, Symbol, Words string
}

func outcomeOf(o scheduler.Outcome) outcomeView {
	switch o {
	case scheduler.Succeeded:
		return outcomeView{"ok", "✓", "succeeded"}
	case scheduler.Failed:
		return outcomeView{"bad", "✗", "failed"}
	case scheduler.TimedOut:
		return outcomeView{"bad", "◷", "timed out"}
	case scheduler.LeaseLost:
		return outcomeView{"bad", "⚠", "lease lost"}
	case scheduler.Interrupted:
		return outcomeView{"warn", "■", "interrupted"}
	case scheduler.Replaced:
		return outcomeView{"warn", "↻", "replaced"}
	case scheduler.Cancelled:
		return outcomeView{"warn", "⊘", "cancelled"}
	case scheduler.SkippedOverlap:
		return outcomeView{"skip", "–", "skipped (overlap)"}
	case scheduler.SkippedPaused:
		return outcomeView{"skip", "–", "skipped (paused)"}
	case scheduler.SkippedBlackout:
		return outcomeView{"skip", "–", "skipped (blackout)"}
	case scheduler.Missed:
		return outcomeView{"bad", "○", "missed"}
	case scheduler.Running, scheduler.Started:
		return outcomeView{"run", "▶", "running"}
	case scheduler.Waiting:
		return outcomeView{"run", "…", "waiting for a slot"}
	case "":
		return outcomeView{"none", "", "never ran"} // no symbol: the words alone
	}
	return outcomeView{"none", "?", string(o)}
}

// runOutcome is a record's outcome, or its decision when it did not start.
func runOutcome(r scheduler.Run) scheduler.Outcome {
	if r.Outcome != "" {
		return r.Outcome
	}
	return r.Decision
}

type runningView struct {
	ID, Replica string
	Cancelling  bool // an operator asked it to stop
	Since       time.Time
	Token       int64
	LeaseLeft   string
	// LeaseExpired is how long ago its lease ran out unrenewed ("" while
	// it has not): its replica is frozen, dead or cut off from the store,
	// and the cluster is about to close the run lease_lost. Shown instead
	// of "lease 0s left", which reads as a run about to renew.
	LeaseExpired string
}

type jobRow struct {
	Name, Schedule, Words, Zone, Kind string
	NextUTC, NextLocal, NextIn        string
	Last                              *scheduler.Run
	LastOutcome                       outcomeView
	Ratio                             string
	Running                           []runningView
	Slots                             string
	Pool                              string // "exports 2/3": the job's pool's use; "" for none
	PoolHolders                       []string
	Queued                            int
	Paused, PausedInTable             bool
	// PausedWhy is the reason the job is paused (an operator's, or
	// pause_after_failures'); Failures its latest runs in a row that ended
	// badly.
	PausedWhy string
	Failures  int
}

type jobsView struct {
	Rows           []jobRow
	Total          int
	Query, Outcome string
	OutcomeFilters []string
	Replicas       int // live replicas
	Differ         int // of which run a different job table
	Summary        summary
	// Paged: the jobs matching are more than a page holds; Rows are those
	// numbered From to To of Matching, and Prev and Next link to the pages
	// beside this one ("" for none).
	Paged              bool
	From, To, Matching int
	Prev, Next         string
}

// jobsPerPage bounds the jobs page: a table of 2,000 jobs was 1.3 MB of
// HTML, rendered on the server and parsed and laid out again by every open
// tab at every refresh (3 s), each time blocking the browser 200-500 ms.
const jobsPerPage = 200

// PerPage is how many jobs a page of the jobs page lists.
func (jobsView) PerPage() int { return jobsPerPage }

var outcomeFilters = []string{"", "succeeded", "failed", "running", "paused", "never"}

func (c *Console) row(j scheduler.Job, o scheduler.Overview, now time.Time) jobRow {
	row := jobRow{
		Name: j.Name, Schedule: j.Schedule, Words: words(j.Schedule), Zone: cmp.Or(j.Timezone, "UTC"),
		Kind: kindOf(j), Paused: o.Paused, PausedInTable: j.Paused, Queued: o.Waiting + o.PendingManual,
		Slots:     fmt.Sprintf("%d/%d", len(o.Running), max(j.Concurrency, 1)),
		PausedWhy: o.PausedWhy, Failures: o.ConsecutiveFailures,
	}
	if p := o.Pool; p != nil {
		row.Pool, row.PoolHolders = fmt.Sprintf("%s %d/%d", p.Name, p.Used, p.Size), p.Holders
	}
	if s, err := j.Timing(); err == nil {
		if next := s.Next(now); !next.IsZero() {
			row.NextUTC = next.UTC().Format("2006-01-02 15:04:05Z")
			row.NextLocal = zoned(next.In(s.Location()), "15:04:05")
			row.NextIn = relative(next, now)
		}
	}
	row.LastOutcome = outcomeOf("")
	if len(o.Running) > 0 {
		// Its first run is in flight: "never ran" beside "Running now"
		// read as a job that does not run.
		row.LastOutcome.Words = "none ended yet"
	}
	if h := lastRun(o.History); h != nil {
		last := c.clean(*h) // a copy: the cache keeps the record
		row.Last = &last
		row.LastOutcome = outcomeOf(runOutcome(*h))
	}
	// Over the job's whole kept history, counted by the store: not the few
	// records read here.
	if o.KeptStarted > 0 {
		row.Ratio = fmt.Sprintf("%d%% of %d", 100*o.KeptSucceeded/o.KeptStarted, o.KeptStarted)
	}
	for _, r := range o.Running {
		v := runningView{ID: r.ID, Replica: r.Replica, Since: r.StartedAt, Token: r.FencingToken, Cancelling: r.CancelledBy != ""}
		if until, ok := o.LeaseUntil[r.ID]; ok {
			if left := until.Sub(now); left > 0 {
				v.LeaseLeft = human(left)
			} else {
				v.LeaseExpired = human(-left)
			}
		}
		row.Running = append(row.Running, v)
	}
	return row
}

// lastRun is the run a job's "Last run" shows: the latest of hist (newest
// first) that is not a backfill's, whose instant may be last week's; a
// backfill's only when hist holds nothing else.
func lastRun(hist []scheduler.Run) *scheduler.Run {
	for i := range hist {
		if hist[i].Kind != scheduler.KindBackfill {
			return &hist[i]
		}
	}
	if len(hist) > 0 {
		return &hist[0]
	}
	return nil
}

func kindOf(j scheduler.Job) string {
	t := fmt.Sprintf("%T", j.Handler)
	switch {
	case strings.HasSuffix(t, ".Command"):
		return "command"
	case strings.HasSuffix(t, ".HTTP"):
		return "http"
	}
	return "func"
}

func (c *Console) jobsPage(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > maxQuery {
		c.fail(w, r, http.StatusBadRequest, "q is at most 200 characters.")
		return
	}
	lowQ := strings.ToLower(q)
	want := r.URL.Query().Get("outcome")
	if !slices.Contains(outcomeFilters, want) {
		want = ""
	}
	pg, ok := c.pageParam(w, r)
	if !ok {
		return
	}
	tab := c.cfg.Jobs()
	names := make([]string, len(tab))
	for i, j := range tab {
		names[i] = j.Name
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	ov, rs, err := c.overview(ctx, names)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	now := c.cfg.Now()
	v := jobsView{Total: len(tab), Query: q, Outcome: want, OutcomeFilters: outcomeFilters, Rows: []jobRow{}, Replicas: len(rs),
		Summary: summarize(tab, ov, now)}
	for _, x := range rs {
		if x.TableDiffers {
			v.Differ++
		}
	}
	for i, j := range tab {
		if q != "" && !strings.Contains(strings.ToLower(j.Name), lowQ) {
			continue
		}
		row := c.row(j, ov[i], now)
		switch want {
		case "succeeded", "failed":
			if row.Last == nil || (row.LastOutcome.Class == "ok") != (want == "succeeded") {
				continue
			}
		case "running":
			if len(row.Running) == 0 {
				continue
			}
		case "paused":
			if !row.Paused && !row.PausedInTable {
				continue
			}
		case "never":
			if row.Last != nil {
				continue
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if v.Matching = len(v.Rows); v.Matching > jobsPerPage || pg > 1 {
		v.Paged = true
		v.From, v.To = min((pg-1)*jobsPerPage, v.Matching), min(pg*jobsPerPage, v.Matching)
		link := func(n int) string {
			q := url.Values{}
			if v.Query != "" {
				q.Set("q", v.Query)
			}
			if want != "" {
				q.Set("outcome", want)
			}
			q.Set("page", strconv.Itoa(n))
			return c.cfg.Prefix + "/?" + q.Encode()
		}
		if pg > 1 {
			v.Prev = link(min(pg-1, max((v.Matching+jobsPerPage-1)/jobsPerPage, 1)))
		}
		if v.To < v.Matching {
			v.Next = link(pg + 1)
		}
		v.Rows = v.Rows[v.From:v.To]
		v.From++
	}
	c.render(w, r, http.StatusOK, "jobs", "Jobs", v)
}

type jobView struct {
	jobRow
	Job      scheduler.Job
	Next     []nextView
	Timeline *timeline
	// PhoneTimeline is the same, drawn to fit a phone's width.
	PhoneTimeline *timeline
	History       []scheduler.Run
	Page          int
	Prev          int // 0: none
	NextPage      int // 0: none
	Waiting       int
	Manual        int
	// Backfill is the job's backfill, going on or finished lately; nil
	// if none (or the store cannot backfill).
	Backfill *scheduler.Backfill
	// Def is the job's definition, secrets masked.
	Def definition
}

type nextView struct{ UTC, Local, In string }

// zoned formats t (in the job's zone) with layout, then its zone's
// abbreviation and offset from UTC: "12:00:00 CST (UTC+08:00)". An
// abbreviation alone is ambiguous (CST is China's, and also the US
// Central's six hours behind UTC; IST is India's, Ireland's or Israel's);
// a zone without one shows only the offset ("16:00:00 UTC+04:00").
func zoned(t time.Time, layout string) string {
	abbr := t.Format("MST")
	off := "UTC" + t.Format("-07:00")
	if strings.HasPrefix(abbr, "+") || strings.HasPrefix(abbr, "-") {
		return t.Format(layout) + " " + off
	}
	return t.Format(layout) + " " + abbr + " (" + off + ")"
}

func (c *Console) lookup(w http.ResponseWriter, r *http.Request) (scheduler.Job, bool) {
	name := r.PathValue("name")
	for _, j := range c.cfg.Jobs() {
		if j.Name == name {
			return j, true
		}
	}
	c.fail(w, r, http.StatusNotFound, "No job "+quoted(name)+" in the table.")
	return scheduler.Job{}, false
}

// pageParam is the page number a list page was asked for (?page=N, 1 when
// absent); ok is false when it was malformed, and the answer is sent.
func (c *Console) pageParam(w http.ResponseWriter, r *http.Request) (pg int, ok bool) {
	s := r.URL.Query().Get("page")
	if s == "" {
		return 1, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 10000 {
		c.fail(w, r, http.StatusBadRequest, "page must be a whole number from 1.")
		return 0, false
	}
	return n, true
}

func (c *Console) jobPage(w http.ResponseWriter, r *http.Request) {
	j, ok := c.lookup(w, r)
	if !ok {
		return
	}
	pg, ok := c.pageParam(w, r)
	if !ok {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	ov, err := c.cfg.Control.Overview(ctx, []string{j.Name}, timelineRuns)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	hist, err := c.cfg.Control.HistoryPage(ctx, j.Name, (pg-1)*historyPage, historyPage+1)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	now := c.cfg.Now()
	v := jobView{jobRow: c.row(j, ov[0], now), Job: j, Page: pg, Waiting: ov[0].Waiting, Manual: ov[0].PendingManual, Def: defineJob(j)}
	if len(hist) > historyPage {
		hist, v.NextPage = hist[:historyPage], pg+1
	}
	if pg > 1 {
		v.Prev = pg - 1
	}
	for i := range hist {
		hist[i] = c.clean(hist[i])
	}
	// By scheduled instant, newest first: a backfill's runs, closed now
	// for instants of last week, go where their instants are (the store
	// keeps the history in the order runs ended).
	sort.SliceStable(hist, func(i, k int) bool { return hist[i].ScheduledAt.After(hist[k].ScheduledAt) })
	v.History = hist
	if b, err := c.cfg.Control.BackfillStatus(ctx, j.Name); err == nil {
		v.Backfill = b
	}
	if s, err := j.Timing(); err == nil {
		t := now
		for range nextInstants {
			if t = s.Next(t); t.IsZero() {
				break
			}
			v.Next = append(v.Next, nextView{UTC: t.UTC().Format("2006-01-02 15:04:05Z"), Local: zoned(t.In(s.Location()), "2006-01-02 15:04:05"), In: relative(t, now)})
		}
	}
	v.Timeline = drawTimeline(ov[0].History, ov[0].Running, now)
	v.PhoneTimeline = drawNarrowTimeline(ov[0].History, ov[0].Running, now)
	c.render(w, r, http.StatusOK, "job", j.Name, v)
}

// Timelines are the job's timeline, wide then narrow: the page has both,
// and CSS shows the one that fits.
func (v jobView) Timelines() []*timeline {
	return []*timeline{v.Timeline, v.PhoneTimeline}
}

type runView struct {
	Run       scheduler.Run
	Outcome   outcomeView
	Known     bool   // the job is in this replica's table
	TraceLink string // admin.trace_url with the run's trace id; "" for none
	Expired   bool   // the live record is gone: this is its history entry
	Pending   bool   // a manual run just requested, not claimed yet
}

// historyChunk is how many history records the run page reads first
// looking for a run: recent runs are found in the first read.
const historyChunk = 100

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := c.ctx(r)
	defer cancel()
	run, err := c.cfg.Control.Get(ctx, id)
	if err != nil && !strings.Contains(err.Error(), "not a run id") {
		c.storeFailed(w, r, err)
		return
	}
	job, _, _ := strings.Cut(id, "@")
	limit := scheduler.DefaultHistoryLimit
	for _, j := range c.cfg.Jobs() {
		if j.Name == job && j.HistoryLimit > 0 { // 0: the default
			limit = j.HistoryLimit
		}
	}
	// A run's own record keeps neither output nor trace id, and expires
	// after record_retention; its history entry keeps both, while the
	// job's history still holds it.
	var entry *scheduler.Run
	if err == nil && (run == nil || ((run.Output == "" || run.TraceID == "") && !run.FinishedAt.IsZero())) {
		if entry, err = c.historyEntry(ctx, job, id, limit); err != nil && run == nil {
			c.storeFailed(w, r, err)
			return
		}
	}
	v := runView{}
	switch {
	case run != nil:
		if entry != nil {
			run.Output = cmp.Or(run.Output, entry.Output)
			run.TraceID = cmp.Or(run.TraceID, entry.TraceID)
		}
	case entry != nil:
		run, v.Expired = entry, true
	case r.URL.Query().Get("done") == "retry" && c.jobNamed(job) && scheduler.IsManualRunID(id):
		// Only the shape of an id Retry draws, of a job in the table: a
		// made-up address must not show a run "requested" for ever.
		// Just requested (Retry): no replica has claimed it yet. The page
		// refreshes into its record.
		run, v.Pending = &scheduler.Run{ID: id, Job: job, Kind: scheduler.KindManual}, true
	default:
		c.fail(w, r, http.StatusNotFound, "No record of run "+quoted(id)+": not decided yet, expired, or not a run id.")
		return
	}
	v.Run, v.Outcome, v.TraceLink = c.clean(*run), outcomeOf(runOutcome(*run)), c.traceLink(run.TraceID)
	if v.Pending {
		v.Outcome = outcomeView{"run", "…", "requested, not picked up yet"}
	}
	for _, j := range c.cfg.Jobs() {
		v.Known = v.Known || j.Name == run.Job
	}
	c.render(w, r, http.StatusOK, "run", "Run "+run.ID, v)
}

// historyEntry finds run id in the job's history, which keeps at most limit
// records: nil when it is not there (any more). Two reads at most, whatever
// limit is: the latest historyChunk records (where a run looked at mostly
// is), then the rest of the kept history at once. It read historyChunk
// records at a time: an unknown run id of a job keeping 10,000 records
// took 100 reads before its 404.
func (c *Console) historyEntry(ctx context.Context, job, id string, limit int) (*scheduler.Run, error) {
	if !scheduler.ValidJobName(job) {
		return nil, nil
	}
	for off, n := 0, min(historyChunk, limit); n > 0; off, n = off+n, limit-off-n {
		hist, err := c.cfg.Control.HistoryPage(ctx, job, off, n)
		if err != nil {
			return nil, err
		}
		for i := range hist {
			if hist[i].ID == id {
				return &hist[i], nil
			}
		}
		if len(hist) < n {
			break
		}
	}
	return nil, nil
}

type replicasView struct {
	Replicas []scheduler.Replica
	Differ   int
	Tables   int
}

func (c *Console) replicasPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	rs, err := c.cfg.Control.Replicas(ctx)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	v := replicasView{Replicas: rs}
	tables := map[string]bool{}
	for _, x := range rs {
		tables[x.Table] = true
		if x.TableDiffers {
			v.Differ++
		}
	}
	v.Tables = len(tables)
	c.render(w, r, http.StatusOK, "replicas", "Replicas", v)
}

// act runs Run now, Pause or Resume, then sends the browser back to the
// job's page (303: a reload does not post again).
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	j, ok := c.lookup(w, r)
	if !ok {
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	action := r.PathValue("action")
	var err error
	switch action {
	case "trigger":
		var id string
		if id, err = c.cfg.Control.Trigger(ctx, j.Name); err == nil {
			c.log.Info("console: manual run requested", "job", j.Name, "run_id", id, "remote", r.RemoteAddr)
		}
	case "pause":
		reason := r.PostFormValue("reason")
		if err = c.cfg.Control.PauseWithReason(ctx, j.Name, reason, "console from "+clientOf(r)); err == nil {
			c.log.Info("console: job paused cluster-wide", "job", j.Name, "reason", reason, "remote", r.RemoteAddr)
		}
	case "resume":
		if err = c.cfg.Control.Resume(ctx, j.Name); err == nil {
			c.log.Info("console: job resumed cluster-wide", "job", j.Name, "remote", r.RemoteAddr)
		}
	case "backfill":
		if !c.backfill(w, r, j) {
			return
		}
	case "backfill-cancel":
		if _, err = c.cfg.Control.CancelBackfill(ctx, j.Name); errors.Is(err, scheduler.ErrNoBackfill) {
			c.fail(w, r, http.StatusConflict, "No backfill of "+j.Name+" is going on.")
			return
		} else if err == nil {
			c.log.Info("console: backfill cancelled", "job", j.Name, "remote", r.RemoteAddr)
		}
	default:
		c.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	if errors.Is(err, scheduler.ErrQueueFull) {
		c.queueFull(w, r, err)
		return
	}
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	c.forget()
	http.Redirect(w, r, c.cfg.Prefix+"/jobs/"+url.PathEscape(j.Name)+"?done="+action, http.StatusSeeOther)
}

// actOnRun cancels a running run or retries an ended one, then sends the
// browser to the run's page (cancel; the job's page when the form says
// back=job) or the new run's (retry). The record
// keeps who asked: "console from <address>".
func (c *Console) actOnRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := c.ctx(r)
	defer cancel()
	who := "console from " + clientOf(r)
	to, action := id, r.PathValue("action")
	var err error
	switch action {
	case "cancel":
		if err = c.cfg.Control.Cancel(ctx, id, who); err == nil {
			c.log.Info("console: run cancel asked", "run_id", id, "remote", r.RemoteAddr)
		}
	case "retry":
		if to, err = c.cfg.Control.Retry(ctx, id, who); err == nil {
			c.log.Info("console: run retry asked", "run_id", id, "retry", to, "remote", r.RemoteAddr)
		}
	default:
		c.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	switch {
	case err == nil:
	case errors.Is(err, scheduler.ErrNoRun):
		c.fail(w, r, http.StatusNotFound, "No record of run "+quoted(id)+": not decided yet, or expired.")
		return
	case errors.Is(err, scheduler.ErrNotRunning):
		c.fail(w, r, http.StatusConflict, "Run "+quoted(id)+" is not running any more: there is nothing to cancel.")
		return
	case errors.Is(err, scheduler.ErrStillRunning):
		c.fail(w, r, http.StatusConflict, "Run "+quoted(id)+" has not ended: cancel it first, or wait.")
		return
	case errors.Is(err, scheduler.ErrQueueFull):
		c.queueFull(w, r, err)
		return
	case errors.Is(err, scheduler.ErrBadRunID):
		c.fail(w, r, http.StatusBadRequest, "Not a run id: "+quoted(id)+".")
		return
	default:
		c.storeFailed(w, r, err)
		return
	}
	c.forget()
	if job, _, _ := strings.Cut(id, "@"); r.PostFormValue("back") == "job" && scheduler.ValidJobName(job) {
		// Asked from the job's page: back there.
		http.Redirect(w, r, c.cfg.Prefix+"/jobs/"+url.PathEscape(job)+"?done="+action, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, c.cfg.Prefix+"/runs/"+url.PathEscape(to)+"?done="+action, http.StatusSeeOther)
}

// queueFull answers a manual request refused because the job's queue of
// pending manual runs is full: 429, saying why and when to try again.
func (c *Console) queueFull(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", "5")
	c.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("Not queued: %d manual runs of this job are waiting to be picked up already (%s). Try again once replicas have picked them up.",
		scheduler.MaxPendingManual, strings.TrimPrefix(err.Error(), "scheduler: ")))
}

// forget drops the cached overview: an action shows at once.
func (c *Console) forget() {
	c.cacheMu.Lock()
	c.cached = nil
	c.cacheMu.Unlock()
	c.runsMu.Lock()
	c.runsCached = nil
	c.runsMu.Unlock()
}
