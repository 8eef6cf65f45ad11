package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/internal/schedule"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

var (
	jobFields = []string{"name", "schedule", "timezone", "offset", "command", "http", "func",
		"dir", "env", "kill_grace", "concurrency", "overlap", "max_wait", "lease", "timeout",
		"retries", "retry_backoff", "jitter", "starting_deadline", "catchup_window", "catchup",
		"on_lease_lost", "paused", "history_limit", "log_output", "notify", "pause_after_failures", "blackouts", "pool"}
	httpFields = []string{"method", "url", "headers", "body", "expect_status", "follow_redirects"}
	// noDefault are the job fields every job sets itself: not in defaults:.
	noDefault = []string{"name", "schedule"}

	// commandOnly are the fields that mean something only to command jobs.
	commandOnly = []string{"env", "dir", "kill_grace", "log_output"}

	// logOutputLevels are the values of log_output.
	logOutputLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo}
	// redirectPolicies are the values of http.follow_redirects.
	redirectPolicies = []string{jobs.RedirectSameHost, jobs.RedirectAll, jobs.RedirectNone}

	// handlerFields are the YAML fields (under a job) of the handlers'
	// fields, by their Go names in jobs.FieldError; StopGrace is the
	// scheduler's name for a command's kill_grace.
	handlerFields = map[string]string{"Args": "command", "Env": "env", "Dir": "dir",
		"KillGrace": "kill_grace", "StopGrace": "kill_grace", "LogOutput": "log_output",
		"URL": "http.url", "Method": "http.method", "Headers": "http.headers", "Body": "http.body",
		"ExpectStatus": "http.expect_status", "FollowRedirects": "http.follow_redirects", "Timeout": "timeout"}
)

// source is where the value of one job field was written.
type source struct {
	key       *yaml.Node
	path      string // "jobs[2].timeout" or "defaults.timeout"
	inherited bool   // written under defaults:
}

// draft is one job (or the defaults:) being decoded.
type draft struct {
	path string     // "jobs[2]" or "defaults"
	node *yaml.Node // the job's mapping; nil for defaults
	skip bool       // not a mapping: already reported, nothing to check
	job  scheduler.Job
	src  map[string]source
	// bad holds fields whose value was already reported, so the scheduler's
	// validator, which sees only the zero left behind, is not heard too.
	bad map[string]bool

	kinds []string // command, http, func keys in this mapping, in order
	// inheritedKind is the handler kind a job with none of its own takes
	// from defaults: "" if defaults names none, ambiguous if several.
	inheritedKind string

	args      []string
	env       map[string]string
	dir       string
	killGrace time.Duration
	logOutput slog.Leveler
	http      httpSpec
	fn        jobs.Job
}

const ambiguous = "?"

type httpSpec struct {
	method, url, body string
	followRedirects   string
	headers           map[string]string
	expect            []int
}

func newDraft(path string, node *yaml.Node) *draft {
	return &draft{path: path, node: node, src: make(map[string]source), bad: make(map[string]bool)}
}

// inherit starts a job from the defaults: every field the defaults set, with
// its source marked inherited. Maps are copied so that the job's own entries
// merge over the defaults' key by key; everything else is replaced whole
// when the job sets it.
func (def *draft) inherit(path string, node *yaml.Node) *draft {
	j := *def
	j.path, j.node = path, node
	j.src = make(map[string]source, len(def.src)+8)
	for k, s := range def.src {
		s.inherited = true
		j.src[k] = s
	}
	j.bad = maps.Clone(def.bad)
	j.kinds = nil
	switch len(def.kinds) {
	case 0:
	case 1:
		j.inheritedKind = def.kinds[0]
	default:
		j.inheritedKind = ambiguous
	}
	j.env = maps.Clone(def.env)
	j.http.headers = maps.Clone(def.http.headers)
	return &j
}

// label names a job in messages: jobs[3] "backup".
func (j *draft) label() string {
	if scheduler.ValidJobName(j.job.Name) {
		return j.path + " " + strconv.Quote(j.job.Name)
	}
	return j.path
}

func jobHint(name string) string {
	switch {
	case slices.Contains(httpFields, name):
		return name + " belongs under http:"
	case name == "args" || name == "cmd" || name == "run":
		return `a command job lists its argv under command:, e.g. command: ["./draw", "--winners", "10"]`
	}
	return ""
}

// defaults decodes the defaults: section.
func (d *decoder) defaults(def *draft, n *yaml.Node) {
	pairs, _ := d.section(n, "defaults")
	d.fields(pairs, "defaults", jobFields, jobHint, func(p pair, fp string) bool {
		return d.jobField(def, p, fp, true)
	})
	d.checkDefaults(def)
}

// jobs decodes the jobs: list, merges the defaults into each job, builds the
// handlers and runs the scheduler's validator over the lot.
func (d *decoder) jobs(n *yaml.Node, def *draft, mode string) []scheduler.Job {
	if n = d.resolve(n); n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, "jobs", "a list of jobs (each entry starting with -)")
		return nil
	}
	drafts := make([]*draft, len(n.Content))
	for i, e := range n.Content {
		path := index("jobs", i)
		if e = d.resolve(e); e == nil || e.Kind != yaml.MappingNode {
			if e != nil {
				d.typeError(e, path, "a job (a mapping with name, schedule and one of command, http or func)")
			}
			drafts[i] = &draft{path: path, skip: true}
			continue
		}
		j := def.inherit(path, e)
		d.fields(d.mapping(e, path), path, jobFields, jobHint, func(p pair, fp string) bool {
			return d.jobField(j, p, fp, false)
		})
		d.handler(j)
		d.jobPool(j, mode)
		drafts[i] = j
	}

	table := make([]scheduler.Job, len(drafts))
	for i, j := range drafts {
		table[i] = j.job
	}
	d.validatorErrors(n, drafts, scheduler.ValidateTable(table), false)
	if mode == "redlock" {
		// The scheduler's own rule (New and Reload apply it too), at the
		// YAML line of the concurrency or pool at fault. A pool: in redlock
		// mode was left to it (jobPool), hence every field.
		d.validatorErrors(n, drafts, scheduler.ValidateRedlockTable(table), true)
	}
	d.flushInherited()
	return table
}

// validatorErrors reports err, *scheduler.FieldError values joined, each at
// the YAML position of the job field it names; a field already reported in
// YAML terms is skipped, unless every is set.
func (d *decoder) validatorErrors(n *yaml.Node, drafts []*draft, err error, every bool) {
	if err == nil {
		return
	}
	for _, e := range flatten(err) {
		var fe *scheduler.FieldError
		if !errors.As(e, &fe) || fe.Job < 0 || fe.Job >= len(drafts) {
			d.add(n.Line, n.Column, "jobs", e) // not expected from the scheduler's validators
			continue
		}
		j := drafts[fe.Job]
		top, path, err := yamlField(j.path, fe)
		if j.skip || j.bad[top] && !every || fe.Field == "Handler" && j.job.Handler == nil {
			continue // already reported in YAML terms
		}
		d.fieldError(j, top, path, withHint(j.job.Handler, err))
	}
}

// yamlField maps the Go field a validator names (scheduler.FieldError,
// and jobs.FieldError inside it for the handler) to the YAML path of the
// value at fault under base ("jobs[2]" or "defaults"), and the job field
// it is in: Blackouts[1].Cron → jobs[2].blackouts[1].cron; Handler with
// Headers["X-A"] → jobs[2].http.headers.X-A. err is the problem itself,
// without the Go names.
func yamlField(base string, fe *scheduler.FieldError) (top, path string, err error) {
	var jf *jobs.FieldError
	if fe.Field == "Handler" && errors.As(fe.Err, &jf) {
		top, path = handlerField(base, jf)
		return top, path, jf
	}
	if fe.Field == "PoolSize" {
		// Not a job field: the size comes from the pool's entry in pools:.
		fe = &scheduler.FieldError{Job: fe.Job, Field: "Pool", Err: fe.Err}
	}
	path = base
	for i, seg := range strings.Split(fe.Field, ".") {
		name, idx, _ := strings.Cut(seg, "[")
		if path = field(path, snake(name)); idx != "" {
			path += "[" + idx
		}
		if i == 0 {
			top = snake(name)
		}
	}
	return top, path, fe.Err
}

// withHint is err, a handler's problem (a *jobs.FieldError), or err itself
// for another problem, with a "did you mean" for a misspelt choice.
func withHint(h jobs.Job, err error) error {
	jf, ok := err.(*jobs.FieldError)
	if !ok {
		return err
	}
	if hh, ok := h.(*jobs.HTTP); ok && jf.Field == "FollowRedirects" {
		if s := suggest(hh.FollowRedirects, redirectPolicies); s != "" {
			return fmt.Errorf("%w (did you mean %q?)", jf.Err, s)
		}
	}
	return jf.Err
}

// handlerField is yamlField for a problem with a handler's own field.
func handlerField(base string, jf *jobs.FieldError) (top, path string) {
	yf, ok := handlerFields[jf.Field]
	if !ok {
		yf = snake(jf.Field)
	}
	top, _, _ = strings.Cut(yf, ".")
	path = base + "." + yf
	switch {
	case jf.Key != "":
		path = field(path, jf.Key)
	case jf.Index >= 0:
		path = index(path, jf.Index)
	}
	return top, path
}

// snake turns a Go field name into its YAML name: MaxWait → max_wait.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fieldError reports err, a validator's problem with the value at path (in
// job field top of job j), where the value was written: inside the job;
// inside defaults:, once for every job that inherits it (unless
// checkDefaults has reported it already); or, for a value not written
// (a default), as jobError does.
func (d *decoder) fieldError(j *draft, top, path string, err error) {
	if w, ok, broken := d.written(path); broken {
		return
	} else if ok {
		d.add(w.node.Line, w.node.Column, w.path, err)
		return
	}
	if w, ok, broken := d.written("defaults" + strings.TrimPrefix(path, j.path)); broken {
		return
	} else if ok {
		d.inheritedError(j, w.node, w.path, err)
		return
	}
	d.jobError(j, top, strings.TrimPrefix(path, field(j.path, top)), err)
}

// written finds where the value at path was written; for a value not
// written itself (a blackout's missing duration), where the nearest
// enclosing one was, at path. broken: that value was already reported as
// unusable.
func (d *decoder) written(path string) (w written, ok, broken bool) {
	for p := path; p != ""; {
		broken = broken || d.broken[p]
		if v, found := d.at[p]; found && !ok {
			w, ok = v, true
			if p != path {
				w.path = path
			}
		}
		p = p[:max(strings.LastIndexAny(p, ".["), 0)]
	}
	return w, ok, broken
}

// checkDefaults validates the handlers and blackout windows written under
// defaults:, so a problem there is reported once, at its line, whether or
// not a job inherits it; a job that does is not told again.
func (d *decoder) checkDefaults(def *draft) {
	report := func(path string, err error) {
		w, ok, broken := d.written(path)
		if !ok || broken {
			return // not written here (a missing url): each job tells
		}
		d.add(w.node.Line, w.node.Column, w.path, err)
		if d.reported == nil {
			d.reported = make(map[inheritedKey]bool)
		}
		d.reported[inheritedKey{w.node.Line, w.node.Column, w.path, err.Error()}] = true
	}
	kinds := slices.Clone(def.kinds)
	for _, f := range commandOnly {
		if _, ok := def.src[f]; ok {
			kinds = append(kinds, "command") // env: and the like, for command jobs
		}
	}
	for _, kind := range slices.Compact(slices.Sorted(slices.Values(kinds))) {
		h := def.build(kind)
		v, ok := h.(interface{ Validate() error })
		if def.bad[kind] || !ok {
			continue
		}
		for _, e := range flatten(v.Validate()) {
			var jf *jobs.FieldError
			if errors.As(e, &jf) {
				_, path := handlerField(def.path, jf)
				report(path, withHint(h, jf))
			}
		}
	}
	for i, b := range def.job.Blackouts {
		for _, e := range flatten(b.Validate()) {
			var fe *scheduler.FieldError
			if errors.As(e, &fe) {
				fe := *fe
				fe.Field = fmt.Sprintf("Blackouts[%d].%s", i, fe.Field)
				_, path, err := yamlField(def.path, &fe)
				report(path, err)
			}
		}
	}
}

// checkDefaultZone reports a defaults.timezone that is not a zone when no
// job inherits it (all set their own, or there are none): one that does
// reports it already, naming the jobs (flushInherited). A bad default
// is refused whether or not a job uses it today, as the defaults' other
// values are (checkDefaults): the next job added would.
func (d *decoder) checkDefaultZone(def *draft) {
	s, ok := def.src["timezone"]
	if !ok || d.flushed[s.path] || def.bad["timezone"] {
		return
	}
	if err := schedule.CheckZone(def.job.Timezone); err != nil {
		d.add(s.key.Line, s.key.Column, s.path, err)
	}
}

// flatten lists the errors errors.Join joined ([nil] for nil, which
// errors.As passes over).
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// jobError reports a problem with field (plus suffix, e.g. ".url") of job j
// where the value came from: the job's own key; the defaults: key, once for
// every job that inherits the same problem; or, when the field is absent,
// the job itself.
func (d *decoder) jobError(j *draft, name, suffix string, err error) {
	s, ok := j.src[name]
	switch {
	case !ok:
		d.add(j.node.Line, j.node.Column, field(j.path, name)+suffix, err)
	case s.inherited:
		d.inheritedError(j, s.key, s.path+suffix, err)
	default:
		d.add(s.key.Line, s.key.Column, s.path+suffix, err)
	}
}

// inheritedError notes that job j inherits err, a problem with the default
// written at n: flushInherited reports it once, naming the jobs.
func (d *decoder) inheritedError(j *draft, n *yaml.Node, path string, err error) {
	k := inheritedKey{n.Line, n.Column, path, err.Error()}
	if d.reported[k] {
		return
	}
	if d.inherited == nil {
		d.inherited = make(map[inheritedKey]*inheritedError)
	}
	ie := d.inherited[k]
	if ie == nil {
		ie = &inheritedError{err: err}
		d.inherited[k] = ie
		d.inheritedOrder = append(d.inheritedOrder, k)
	}
	ie.jobs = append(ie.jobs, j.label())
}

type inheritedKey struct {
	line, col int
	path, msg string
}

type inheritedError struct {
	err  error
	jobs []string
}

// flushInherited reports each problem found in a default once, naming the
// jobs that inherit it.
func (d *decoder) flushInherited() {
	for _, k := range d.inheritedOrder {
		ie := d.inherited[k]
		if d.flushed == nil {
			d.flushed = make(map[string]bool)
		}
		d.flushed[k.path] = true
		names := ie.jobs
		more := ""
		if len(names) > 3 {
			more = fmt.Sprintf(" and %d more", len(names)-3)
			names = names[:3]
		}
		d.add(k.line, k.col, k.path, &inheritedErr{err: ie.err, by: strings.Join(names, ", ") + more})
	}
	d.inherited, d.inheritedOrder = nil, nil
}

// inheritedErr is a problem with a default, as inherited by some jobs.
type inheritedErr struct {
	err error
	by  string
}

func (e *inheritedErr) Error() string { return e.err.Error() + " (inherited by " + e.by + ")" }
func (e *inheritedErr) Unwrap() error { return e.err }

// jobField decodes one field of a job or of defaults:. It returns false for
// a name that is not a job field.
func (d *decoder) jobField(j *draft, p pair, path string, inDefaults bool) bool {
	if !slices.Contains(jobFields, p.name) {
		return false
	}
	if inDefaults && slices.Contains(noDefault, p.name) {
		d.errorf(p.key, path, "cannot have a default: every job sets its own %s", p.name)
		return true
	}
	j.src[p.name] = source{key: p.key, path: path}
	delete(j.bad, p.name)
	v := p.val
	ok := true
	switch p.name {
	case "name":
		j.job.Name, ok = d.str(v, path)
	case "schedule":
		j.job.Schedule, ok = d.str(v, path)
	case "timezone":
		j.job.Timezone, ok = d.str(v, path)
	case "offset":
		j.job.Offset, ok = d.duration(v, path)
	case "command":
		j.kinds = append(j.kinds, p.name)
		j.args, ok = d.command(v, path)
	case "http":
		j.kinds = append(j.kinds, p.name)
		ok = d.httpSpec(&j.http, v, path)
	case "func":
		j.kinds = append(j.kinds, p.name)
		j.fn, ok = d.function(v, path)
	case "dir":
		j.dir, ok = d.str(v, path)
	case "env":
		ok = d.env(&j.env, v, path)
	case "kill_grace":
		j.killGrace, ok = d.duration(v, path)
	case "log_output":
		j.logOutput, ok = d.logOutput(v, path)
	case "concurrency":
		j.job.Concurrency, ok = d.integer(v, path)
	case "overlap":
		var s string
		s, ok = d.str(v, path)
		j.job.Overlap = scheduler.Overlap(s)
	case "max_wait":
		j.job.MaxWait, ok = d.duration(v, path)
	case "lease":
		j.job.Lease, ok = d.duration(v, path)
	case "timeout":
		j.job.Timeout, ok = d.duration(v, path)
	case "retries":
		j.job.Retries, ok = d.integer(v, path)
	case "retry_backoff":
		j.job.RetryBackoff, ok = d.duration(v, path)
	case "jitter":
		j.job.Jitter, ok = d.duration(v, path)
	case "starting_deadline":
		j.job.StartingDeadline, ok = d.duration(v, path)
	case "catchup_window":
		j.job.CatchupWindow, ok = d.duration(v, path)
	case "catchup":
		var s string
		s, ok = d.str(v, path)
		j.job.Catchup = scheduler.Catchup(s)
	case "on_lease_lost":
		var s string
		s, ok = d.str(v, path)
		j.job.OnLeaseLost = scheduler.LeaseLostPolicy(s)
	case "paused":
		j.job.Paused, ok = d.boolean(v, path)
	case "history_limit":
		j.job.HistoryLimit, ok = d.integer(v, path)
	case "notify":
		j.job.Notify, ok = d.notifyNames(v, path)
	case "pause_after_failures":
		j.job.PauseAfterFailures, ok = d.integer(v, path)
	case "blackouts":
		j.job.Blackouts, ok = d.blackouts(v, path)
	case "pool":
		j.job.Pool, ok = d.str(v, path)
	}
	if !ok {
		j.bad[p.name] = true
	}
	return true
}

// handler decides the job's kind (its own command/http/func, else the one
// its defaults name) and builds its Handler.
func (d *decoder) handler(j *draft) {
	var kind string
	switch {
	case len(j.kinds) > 1:
		for _, k := range j.kinds[1:] {
			s := j.src[k]
			d.errorf(s.key, s.path, "a job takes exactly one of command, http or func, and this one already has %s", j.kinds[0])
		}
		return
	case len(j.kinds) == 1:
		kind = j.kinds[0]
	case j.inheritedKind == ambiguous:
		d.errorf(j.node, j.path, "needs one of command, http or func of its own: defaults: names several, so which one applies is not clear")
		return
	case j.inheritedKind != "":
		kind = j.inheritedKind
	default:
		d.errorf(j.node, j.path, "needs one of command (a program to run), http (a request to send) or func (a registered Go function)")
		return
	}
	if kind != "command" {
		for _, f := range commandOnly {
			if s, ok := j.src[f]; ok && !s.inherited {
				// A default env/dir/kill_grace simply does not apply here.
				article := "a"
				if kind == "http" {
					article = "an"
				}
				d.errorf(s.key, s.path, "applies only to command jobs, and this is %s %s job", article, kind)
			}
		}
	}
	if j.bad[kind] {
		return
	}
	if kind == "http" && j.job.Timeout == 0 {
		// An HTTP job always has a timeout: the job's own, else
		// jobs.DefaultHTTPTimeout, so a server that never answers cannot
		// hold the slot forever. The scheduler enforces it (the run is
		// recorded timed_out), the request too.
		j.job.Timeout = jobs.DefaultHTTPTimeout
	}
	if kind == "command" && j.killGrace == 0 {
		// Not written: the shorter of 10s and a third of the lease, so
		// that a table saying only "lease: 3s" is valid (kill_grace may be
		// at most half the lease).
		lease := j.job.Lease
		if lease == 0 {
			lease = scheduler.DefaultLease
		}
		j.killGrace = min(DefaultKillGrace, (lease / 3).Truncate(time.Millisecond))
	}
	j.job.Handler = j.build(kind)
}

// build makes the handler of kind from j's fields; its own Validate
// (through the scheduler's) checks it.
func (j *draft) build(kind string) jobs.Job {
	switch kind {
	case "command":
		var env map[string]string
		if len(j.env) > 0 {
			env = j.env // already this job's own copy
		}
		return &jobs.Command{Args: slices.Clone(j.args), Env: env, Dir: j.dir, KillGrace: j.killGrace, LogOutput: j.logOutput}
	case "http":
		var headers map[string]string
		if len(j.http.headers) > 0 {
			headers = j.http.headers
		}
		return &jobs.HTTP{Method: j.http.method, URL: j.http.url, Headers: headers,
			Body: j.http.body, ExpectStatus: slices.Clone(j.http.expect),
			FollowRedirects: j.http.followRedirects, Timeout: j.job.Timeout}
	case "func":
		return j.fn
	}
	return nil
}

// command decodes an argv list.
func (d *decoder) command(n *yaml.Node, path string) ([]string, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		d.errorf(n, path, `expected a list of strings (the program and its arguments, run without a shell), got %s; write e.g. ["./draw", "--winners", "10"], or ["sh", "-c", "..."] for a shell`, describe(n))
		return nil, false
	}
	args, ok := d.strList(n, path)
	if !ok {
		return nil, false
	}
	// jobs.Command.Validate checks the argv; its problems are reported here.
	d.mark(path, n, path)
	for i, e := range n.Content {
		d.mark(index(path, i), d.resolve(e), index(path, i))
	}
	return args, true
}

// env decodes an env mapping into *dst, over what is there (the defaults').
func (d *decoder) env(dst *map[string]string, n *yaml.Node, path string) bool {
	pairs, ok := d.section(n, path)
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = make(map[string]string, len(pairs))
	}
	for _, p := range pairs {
		// jobs.Command.Validate checks names (reserved ones too) and
		// values; their problems are reported at the name.
		fp := field(path, p.name)
		d.mark(fp, p.key, fp)
		s, good := d.str(d.resolve(p.val), fp)
		ok = ok && good
		(*dst)[p.name] = s
	}
	return ok
}

// logOutput decodes log_output: the level a command's output is logged at.
func (d *decoder) logOutput(n *yaml.Node, path string) (slog.Leveler, bool) {
	n = d.resolve(n)
	s, ok := d.str(n, path)
	if !ok {
		return nil, false
	}
	l, ok := logOutputLevels[s]
	if !ok {
		d.errorf(n, path, "%q is not one of debug (the default), info", clip(s))
		return nil, false
	}
	return l, true
}

// httpSpec decodes an http mapping into *h, over what is there (the
// defaults'): fields the job sets replace the defaults', headers merge.
func (d *decoder) httpSpec(h *httpSpec, n *yaml.Node, path string) bool {
	if n = d.resolve(n); n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping (url, and optionally method, headers, body, expect_status)")
		return false
	}
	// jobs.HTTP.Validate checks the values; their problems are reported
	// at the lines marked here.
	ok := true
	d.fields(d.mapping(n, path), path, httpFields, nil, func(p pair, fp string) bool {
		v := d.resolve(p.val)
		good := true
		switch p.name {
		case "method":
			h.method, good = d.str(v, fp)
		case "url":
			h.url, good = d.str(v, fp)
		case "headers":
			good = d.headers(&h.headers, v, fp)
		case "body":
			h.body, good = d.str(v, fp)
		case "expect_status":
			h.expect, good = d.statuses(v, fp)
		case "follow_redirects":
			h.followRedirects, good = d.str(v, fp)
		default:
			return false
		}
		d.mark(fp, v, fp)
		ok = ok && good
		return true
	})
	return ok
}

func (d *decoder) headers(dst *map[string]string, n *yaml.Node, path string) bool {
	pairs, ok := d.section(n, path)
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = make(map[string]string, len(pairs))
	}
	// Header names are case-insensitive: "authorization" here replaces an
	// "Authorization" from the defaults, and both in one mapping clash.
	seen := make(map[string]*yaml.Node, len(pairs))
	for _, p := range pairs {
		// jobs.HTTP.Validate checks names (reserved ones too) and values;
		// their problems are reported at the name, as written.
		fp := field(path, p.name)
		name := textproto.CanonicalMIMEHeaderKey(p.name)
		if first, dup := seen[name]; dup {
			d.errorf(p.key, fp, "duplicate header %s (first at line %d, column %d; header names ignore case)", name, first.Line, first.Column)
			ok = false
			continue
		}
		seen[name] = p.key
		d.mark(field(path, name), p.key, fp)
		s, good := d.str(d.resolve(p.val), fp)
		ok = ok && good
		(*dst)[name] = s
	}
	return ok
}

func (d *decoder) statuses(n *yaml.Node, path string) ([]int, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list of HTTP status codes")
		return nil, false
	}
	if len(n.Content) == 0 {
		d.errorf(n, path, "must list at least one status code (leave it out to accept any 2xx)")
		return nil, false
	}
	out := make([]int, 0, len(n.Content))
	ok := true
	for i, e := range n.Content {
		code, good := d.integer(e, index(path, i))
		d.mark(index(path, i), d.resolve(e), index(path, i))
		ok = ok && good
		out = append(out, code)
	}
	return out, ok
}

// function looks a func: name up among the functions given to WithFuncs.
func (d *decoder) function(n *yaml.Node, path string) (jobs.Job, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	name, ok := d.str(n, path)
	if !ok {
		return nil, false
	}
	if fn := d.funcs[name]; fn != nil {
		return fn, true
	}
	msg := fmt.Sprintf("%q is not a registered Go function: func jobs run only in a program that embeds Solocron and registers them with config.WithFuncs", clip(name))
	if s := suggest(name, slices.Sorted(maps.Keys(d.funcs))); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	d.errorf(n, path, "%s", msg)
	return nil, false
}

// blackoutFields are the fields of one entry of blackouts:.
var blackoutFields = []string{"cron", "duration", "timezone", "from", "to"}

// blackouts decodes a list of blackout windows, each checked here, at its
// own fields' lines: {cron, duration, timezone} or {from, to}.
func (d *decoder) blackouts(n *yaml.Node, path string) ([]scheduler.Blackout, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list of blackout windows ({cron, duration, timezone} or {from, to})")
		return nil, false
	}
	// A window with a problem of its own is kept, so indices match the
	// file's, and marked broken, so its validator's problems are not
	// heard too: the others' are.
	out := make([]scheduler.Blackout, 0, len(n.Content))
	if d.broken == nil {
		d.broken = make(map[string]bool)
	}
	for i, e := range n.Content {
		ep := index(path, i)
		out = append(out, scheduler.Blackout{})
		d.broken[ep] = true
		e = d.resolve(e)
		if e == nil {
			continue
		}
		if e.Kind != yaml.MappingNode {
			d.typeError(e, ep, "a mapping ({cron, duration, timezone} or {from, to})")
			continue
		}
		var b scheduler.Blackout
		good := true
		// scheduler.Blackout.Validate (through ValidateTable) checks the
		// window; its problems are reported at the lines marked here.
		d.mark(ep, e, ep)
		d.fields(d.mapping(e, ep), ep, blackoutFields, nil, func(p pair, fp string) bool {
			var g bool
			switch p.name {
			case "cron":
				b.Cron, g = d.str(p.val, fp)
			case "duration":
				b.Duration, g = d.duration(p.val, fp)
			case "timezone":
				b.Timezone, g = d.str(p.val, fp)
			case "from":
				b.From, g = d.instant(p.val, fp)
			case "to":
				b.To, g = d.instant(p.val, fp)
			default:
				return false
			}
			d.mark(fp, d.resolve(p.val), fp)
			good = good && g
			return true
		})
		out[i] = b
		d.broken[ep] = !good
	}
	return out, true
}

// instant decodes an RFC 3339 time (2026-12-31T22:00:00Z).
func (d *decoder) instant(n *yaml.Node, path string) (time.Time, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.errorf(d.resolve(n), path, "expected an RFC 3339 time such as 2026-12-31T22:00:00Z, got %q", clip(s))
		return time.Time{}, false
	}
	return t, true
}
