package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/solocron/solocron/internal/schedule"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// Catchup says which runs a replica makes up for when it finds that every
// replica was down over some scheduled instants.
type Catchup string

const (
	// CatchupLatest runs only the most recent missed instant. The default.
	CatchupLatest Catchup = "latest"
	// CatchupAll runs every missed instant inside the window, oldest first.
	CatchupAll Catchup = "all"
)

// LeaseLostPolicy says what happens to a running job whose lease is lost.
type LeaseLostPolicy string

const (
	// LeaseLostCancel cancels the job's context with cause
	// lockprovider.ErrLeaseLost. The default.
	LeaseLostCancel LeaseLostPolicy = "cancel"
	// LeaseLostContinue logs and counts the loss and lets the job finish. Use it
	// only for jobs whose side effects are fenced downstream.
	LeaseLostContinue LeaseLostPolicy = "continue"
)

// Defaults applied to zero fields of a Job.
const (
	DefaultConcurrency      = 1
	DefaultLease            = 30 * time.Second
	DefaultRetryBackoff     = time.Second
	DefaultStartingDeadline = 10 * time.Second
	DefaultHistoryLimit     = 100
	// MaxHistoryLimit bounds HistoryLimit: the history is kept in Redis'
	// memory.
	MaxHistoryLimit = 10000
	// MaxConcurrency bounds Concurrency, and MaxPoolSize a pool's size
	// (PoolSize): a claim costs the same at any limit, but a job's status
	// lists every run in flight, and a limit beyond what one scheduler
	// can run is a typo more often than a plan.
	MaxConcurrency = 10000
	MaxPoolSize    = 10000
)

// Job is one entry of the job table. The zero value of every optional field
// means its documented default, so a Job literal names only what it changes.
type Job struct {
	// Name identifies the job across replicas: [A-Za-z0-9_.-]{1,128}.
	Name string
	// Schedule is a cron spec (5 fields, or 6 with seconds first), a
	// descriptor (@hourly, @daily, ...) or "@every <duration>".
	Schedule string
	// Timezone is the IANA zone cron specs are evaluated in. Default UTC.
	Timezone string
	// Offset shifts "@every" instants from the Unix epoch grid.
	Offset time.Duration
	// Handler is what a run executes (jobs.Command, *jobs.HTTP, jobs.Func ...).
	// A handler with a Validate() error method (jobs.Command, jobs.HTTP) is
	// checked by it when the job is.
	Handler jobs.Job

	// Concurrency is how many runs of this job may be in flight at once,
	// across all replicas. Default 1.
	Concurrency int
	// Overlap applies when all Concurrency slots are busy. Default OverlapSkip.
	Overlap Overlap
	// MaxWait bounds an OverlapWait run's wait for a slot. Default
	// StartingDeadline.
	MaxWait time.Duration
	// Lease is how long a claim stays valid without renewal. The watchdog
	// renews every Lease/3. Default 30s.
	Lease time.Duration
	// Timeout cancels a run that lasts longer. Zero means none.
	Timeout time.Duration
	// Retries is the number of extra attempts after a failure, inside the same
	// run; each attempt gets a new fencing token.
	Retries int
	// RetryBackoff is the delay before the first retry; it doubles each time,
	// with jitter. Default 1s.
	RetryBackoff time.Duration
	// Jitter delays each run by a deterministic amount in [0, Jitter) derived
	// from the run id, identical on every replica. It may not be longer than
	// the shortest interval between two of the schedule's instants (for a
	// cron spec, the shortest found over the coming year): runs would fire
	// out of order.
	Jitter time.Duration
	// StartingDeadline: a run not started by then is recorded missed.
	// Default 10s.
	StartingDeadline time.Duration
	// CatchupWindow: after every replica was down, scheduled instants missed
	// inside this window before now are run once. Zero disables catch-up.
	CatchupWindow time.Duration
	// Catchup chooses which missed instants run. Default CatchupLatest.
	Catchup Catchup
	// OnLeaseLost chooses what a lost lease does. Default LeaseLostCancel.
	OnLeaseLost LeaseLostPolicy
	// Paused keeps the job from starting on every replica that loads this
	// table, whatever the cluster-wide pause flag says.
	Paused bool
	// HistoryLimit is how many finished run records the store keeps for the
	// job. Default 100, at most MaxHistoryLimit.
	HistoryLimit int
	// Notify names the notification targets (WithNotifications) told of
	// this job's events. Default none.
	Notify []string
	// PauseAfterFailures pauses the job cluster-wide once that many of its
	// runs in a row ended failed, timed_out or lease_lost (a succeeded run
	// resets the count; interrupted and replaced runs leave it). The run
	// that paused it says so in its record (Run.Paused), Status says why,
	// and Control.Resume clears the count. Zero never pauses.
	PauseAfterFailures int
	// Blackouts are windows in which the job's scheduled (and catch-up)
	// instants do not run: they are recorded skipped_blackout. Manual runs
	// still run.
	Blackouts []Blackout
	// Pool names a pool of slots the job shares with other jobs (and the
	// same name rules as a job): each run needs one of the pool's PoolSize
	// slots, across all replicas and all the pool's jobs, as well as one of
	// its own Concurrency slots. Overlap applies to whichever is full
	// (replace stops only the job's own runs: a pool full of other jobs'
	// runs skips). The pool slot is held under the run's lease, renewed and
	// freed with it. A pooled job's keys carry its pool's Redis Cluster
	// hash tag instead of its own, so that one script can take both slots:
	// putting a job into a pool (or out of one) starts its keys, and its
	// history, afresh. Redlock cannot hold pools. Default none.
	Pool string
	// PoolSize is the number of slots of Pool (at least 1); every job of a
	// pool gives the same size. A Reload may change it: runs already in
	// flight keep their slots, and runs start again once fewer than the new
	// size hold one.
	PoolSize int
}

// MaxJobNameLen is the longest job name accepted.
const MaxJobNameLen = 128

// JobNamePattern is the regular expression (Go and JSON Schema syntax) a job
// name matches.
const JobNamePattern = `^[A-Za-z0-9_.-]{1,128}$`

// ValidJobName reports whether name may be a job name. The set excludes '{',
// '}' and ':' so a name can never break its keys' Redis Cluster hash tag.
func ValidJobName(name string) bool { return store.ValidJobName(name) }

// CheckKeyPrefix reports what is wrong with p as the prefix of every Redis
// key (WithKeyPrefix), or nil: it must not be empty, and must not contain
// '{', '}' or whitespace, which would break the Redis Cluster hash tag of
// every key.
func CheckKeyPrefix(p string) error {
	if p == "" {
		return errors.New("must not be empty")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r == '{' || r == '}' || unicode.IsSpace(r) }) {
		return fmt.Errorf("%q must not contain '{', '}' or whitespace: braces would break the Redis Cluster hash tag of every key", p)
	}
	return nil
}

// FieldError is one problem with one field of a job table.
type FieldError struct {
	// Job is the index of the job in the table, or -1 for a single Job.
	Job int
	// Field is the Go name of the field: "Schedule", "MaxWait",
	// "Blackouts[1].Cron" ... For a problem with the Handler it is
	// "Handler", and Err is (or wraps) a *jobs.FieldError naming the
	// handler's own field. The config package maps these names to YAML
	// fields and positions.
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	f := e.Field
	msg := e.Err.Error()
	var jf *jobs.FieldError
	if f == "Handler" && errors.As(e.Err, &jf) {
		f, msg = f+"."+jf.Error(), "" // jobs[0].Handler.URL: is required
	}
	if msg != "" {
		f += ": " + msg
	}
	if e.Job < 0 {
		return f
	}
	return fmt.Sprintf("jobs[%d].%s", e.Job, f)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Validate reports every problem with j at once, as *FieldError values joined
// with errors.Join. A nil error means the job can be scheduled.
func (j *Job) Validate() error {
	errs, _ := j.validate(-1, nil)
	return errors.Join(errs...)
}

// parsed is a job's schedule and blackout windows, parsed once, when the
// job is validated, and carried into the table in force.
type parsed struct {
	sched     *schedule.Schedule
	blackouts blackouts
}

// parse parses j's schedule and blackout windows: the one place a job's
// schedules are parsed. Problems are *FieldError values with Job -1.
func (j *Job) parse() (parsed, []error) {
	var p parsed
	var errs []error
	if strings.TrimSpace(j.Schedule) == "" {
		errs = append(errs, &FieldError{Job: -1, Field: "Schedule", Err: errors.New("is required")})
	} else if s, err := schedule.Parse(j.Schedule, j.Timezone, j.Offset); err != nil {
		field := "Schedule"
		var se *schedule.Error
		if errors.As(err, &se) && se.Field != "" {
			field = se.Field
		}
		errs = append(errs, &FieldError{Job: -1, Field: field, Err: err})
		// A bad schedule hides a bad zone beside it: every problem is
		// reported at once.
		if field != "Timezone" && j.Timezone != "" {
			if zerr := schedule.CheckZone(j.Timezone); zerr != nil {
				errs = append(errs, &FieldError{Job: -1, Field: "Timezone", Err: zerr})
			}
		}
	} else {
		p.sched = s
	}
	for i, b := range j.Blackouts {
		w, berrs := b.parse()
		for _, e := range berrs {
			e.Field = fmt.Sprintf("Blackouts[%d].%s", i, e.Field)
			errs = append(errs, e)
		}
		if len(berrs) == 0 {
			p.blackouts = append(p.blackouts, w)
		}
	}
	return p, errs
}

// validate reports j's problems (as index in its table) and its schedules
// parsed. gaps, if not nil, keeps the jitter checks of the table's other
// jobs: jobs that share a schedule and a jitter share one walk.
func (j *Job) validate(index int, gaps jitterChecks) ([]error, parsed) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Job: index, Field: field, Err: fmt.Errorf(format, args...)})
	}
	switch {
	case j.Name == "":
		bad("Name", "is required")
	case len(j.Name) > MaxJobNameLen:
		bad("Name", "is %d bytes long; at most %d are allowed", len(j.Name), MaxJobNameLen)
	case j.Name == "." || j.Name == "..":
		bad("Name", "%q cannot be a job's name: no address can name it (a browser reads /jobs/%s as /)", j.Name, j.Name)
	case !ValidJobName(j.Name):
		bad("Name", "%q may contain only letters, digits, '_', '.' and '-'", j.Name)
	}
	p, perrs := j.parse()
	for _, e := range perrs {
		e.(*FieldError).Job = index
	}
	errs = append(errs, perrs...)
	if j.Handler == nil {
		bad("Handler", "a job needs exactly one of command, http or func")
	} else if v, ok := j.Handler.(interface{ Validate() error }); ok {
		// The handler's kind knows its own rules (jobs.Command.Validate,
		// jobs.HTTP.Validate, ...).
		for _, e := range flatten(v.Validate()) {
			errs = append(errs, &FieldError{Job: index, Field: "Handler", Err: e})
		}
	}
	nonNegative := func(field string, d time.Duration) {
		if d < 0 {
			bad(field, "must not be negative (got %s)", d)
		}
	}
	nonNegative("MaxWait", j.MaxWait)
	nonNegative("Lease", j.Lease)
	nonNegative("Timeout", j.Timeout)
	nonNegative("RetryBackoff", j.RetryBackoff)
	nonNegative("Jitter", j.Jitter)
	nonNegative("StartingDeadline", j.StartingDeadline)
	nonNegative("CatchupWindow", j.CatchupWindow)
	if p.sched != nil {
		if msg := gaps.check(p.sched, j.Jitter); msg != "" {
			bad("Jitter", "%s", msg)
		}
	}
	if j.Lease != 0 && j.Lease < 100*time.Millisecond {
		bad("Lease", "must be at least 100ms (got %s)", j.Lease)
	}
	if j.Lease%time.Millisecond != 0 {
		bad("Lease", "must be a whole number of milliseconds (got %s)", j.Lease)
	}
	if sg, ok := j.Handler.(jobs.StopGracer); ok && (j.Lease == 0 || j.Lease >= 100*time.Millisecond) {
		lease := j.Lease
		if lease == 0 {
			lease = DefaultLease
		}
		// A lost lease cancels the job; its processes must be gone before
		// Redis can give the slot away, so the lease is declared lost the
		// job's stop grace before it runs out. Half the lease at most
		// leaves the other half for renewals.
		if g := sg.StopGrace(); g > lease/2 {
			errs = append(errs, &FieldError{Job: index, Field: "Handler", Err: &jobs.FieldError{Field: "StopGrace", Index: -1,
				Err: fmt.Errorf("%s leaves no room inside the lease (%s): at most half of it, so that the job's processes are killed before its slot can be given away; lower kill_grace or raise lease", g, lease)}})
		}
	}
	switch {
	case j.Pool == "" && j.PoolSize != 0:
		bad("Pool", "is empty, but PoolSize is set (%d)", j.PoolSize)
	case j.Pool == "":
	case len(j.Pool) > MaxJobNameLen || !ValidJobName(j.Pool):
		bad("Pool", "%q is not a valid pool name: letters, digits, '_', '.' and '-', at most %d bytes", clipName(j.Pool), MaxJobNameLen)
	case j.PoolSize < 1:
		bad("Pool", "pool %q needs a size of at least 1 slot (PoolSize %d)", j.Pool, j.PoolSize)
	case j.PoolSize > MaxPoolSize:
		bad("Pool", "pool %q has %d slots, more than the most a pool may have, %d", j.Pool, j.PoolSize, MaxPoolSize)
	}
	if j.Concurrency < 0 {
		bad("Concurrency", "must be at least 1 (got %d)", j.Concurrency)
	}
	if j.Concurrency > MaxConcurrency {
		bad("Concurrency", "must be at most %d (got %d): every run in flight is listed in the job's status", MaxConcurrency, j.Concurrency)
	}
	if j.Retries < 0 {
		bad("Retries", "must not be negative (got %d)", j.Retries)
	}
	if j.PauseAfterFailures < 0 {
		bad("PauseAfterFailures", "must not be negative (got %d); 0 never pauses", j.PauseAfterFailures)
	}
	if j.HistoryLimit < 0 {
		bad("HistoryLimit", "must be at least 1 (got %d)", j.HistoryLimit)
	}
	if j.HistoryLimit > MaxHistoryLimit {
		bad("HistoryLimit", "must be at most %d: the history is kept in Redis' memory (got %d)", MaxHistoryLimit, j.HistoryLimit)
	}
	switch j.Overlap {
	case "", OverlapSkip, OverlapWait, OverlapReplace:
	default:
		bad("Overlap", "%q is not one of skip, wait, replace", j.Overlap)
	}
	if j.MaxWait != 0 && j.Overlap != OverlapWait {
		bad("MaxWait", "applies only to overlap: wait")
	}
	switch j.Catchup {
	case "", CatchupLatest, CatchupAll:
	default:
		bad("Catchup", "%q is not one of latest, all", j.Catchup)
	}
	switch j.OnLeaseLost {
	case "", LeaseLostCancel, LeaseLostContinue:
	default:
		bad("OnLeaseLost", "%q is not one of cancel, continue", j.OnLeaseLost)
	}
	return errs, p
}

// jitterTooLong says what is wrong with jitter on sched (from now on), or
// "". A run fires up to its jitter after its instant (jobState.fire), and
// the dispatcher takes a job's instants one at a time, in order: a jitter
// longer than a gap between two instants would fire the later one before
// the earlier, and the instants passed over would be neither claimed nor
// recorded missed. A jitter as long as the shortest gap is fine: the delay
// is always less than the jitter, so "@every 1m" with a jitter of 1m
// spreads the runs over each minute and keeps them in order. Instants
// are whole seconds apart, so no jitter up to 1s needs the walk.
func jitterTooLong(sched *schedule.Schedule, jitter time.Duration, now time.Time) string {
	if jitter <= time.Second {
		return ""
	}
	g, ok := sched.ShortestGap(now, jitter)
	if !ok || g.Len() >= jitter {
		return ""
	}
	if sched.Every() > 0 {
		return fmt.Sprintf("%s is longer than the schedule's interval, %s: runs would fire out of order and instants would be skipped, neither run nor recorded missed; at most %s", jitter, g.Len(), g.Len())
	}
	return fmt.Sprintf("%s is longer than the schedule's shortest interval, %s (from %s to %s): runs would fire out of order and instants would be skipped, neither run nor recorded missed; at most %s",
		jitter, g.Len(), g.From.Format(time.RFC3339), g.To.Format(time.RFC3339), g.Len())
}

// jitterChecks keeps jitterTooLong's answers for one table, by schedule
// (spec and zone) and jitter: a table of 10,000 jobs with a jitter walks
// each of its schedules once, not each job's.
type jitterChecks map[jitterKey]string

type jitterKey struct {
	spec, loc string
	jitter    time.Duration
}

func (c jitterChecks) check(sched *schedule.Schedule, jitter time.Duration) string {
	if jitter <= time.Second {
		return ""
	}
	if c == nil {
		return jitterTooLong(sched, jitter, time.Now())
	}
	k := jitterKey{sched.String(), sched.Location().String(), jitter}
	msg, ok := c[k]
	if !ok {
		msg = jitterTooLong(sched, jitter, time.Now())
		c[k] = msg
	}
	return msg
}

// ValidateTable validates every job and checks that names are unique. Errors
// are *FieldError values with Job set to the index in jobs.
func ValidateTable(jobs []Job) error {
	_, err := checkTable(jobs)
	return err
}

// ValidateRedlockTable reports what in jobs a Redlock store
// (NewRedlockStore) cannot run, as *FieldError values joined with
// errors.Join, or nil: a Concurrency above 1 (Redlock coordinates mutexes
// only) and a Pool (each master would count the pool's slots apart). It
// adds to ValidateTable, which it does not repeat. New and Reload apply it to
// every table for a Redlock store; the config package applies it to a table
// whose store mode is redlock and reports each problem at its YAML line.
func ValidateRedlockTable(jobs []Job) error {
	var errs []error
	for i, j := range jobs {
		if j.Concurrency > 1 {
			errs = append(errs, &FieldError{Job: i, Field: "Concurrency",
				Err: fmt.Errorf("must be 1 with a Redlock store (got %d): Redlock coordinates mutexes only", j.Concurrency)})
		}
		if j.Pool != "" {
			errs = append(errs, &FieldError{Job: i, Field: "Pool",
				Err: fmt.Errorf("a Redlock store cannot hold pool %q: each master would count its slots apart", j.Pool)})
		}
	}
	return errors.Join(errs...)
}

// checkTable is ValidateTable that also returns, for a valid table, each
// job's schedules parsed.
func checkTable(jobs []Job) ([]parsed, error) {
	var errs []error
	out := make([]parsed, len(jobs))
	seen := make(map[string]int, len(jobs))
	pools := map[string]int{} // pool -> the first job in it
	gaps := jitterChecks{}
	for i := range jobs {
		var jerrs []error
		jerrs, out[i] = jobs[i].validate(i, gaps)
		errs = append(errs, jerrs...)
		if first, dup := seen[jobs[i].Name]; dup && jobs[i].Name != "" {
			errs = append(errs, &FieldError{Job: i, Field: "Name",
				Err: fmt.Errorf("%q is already the name of jobs[%d]", jobs[i].Name, first)})
		} else {
			seen[jobs[i].Name] = i
		}
		if p := jobs[i].Pool; p != "" {
			if first, ok := pools[p]; ok && jobs[first].PoolSize != jobs[i].PoolSize {
				errs = append(errs, &FieldError{Job: i, Field: "Pool",
					Err: fmt.Errorf("pool %q has size %d here but %d in jobs[%d]", p, jobs[i].PoolSize, jobs[first].PoolSize, first)})
			} else if !ok {
				pools[p] = i
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// withDefaults returns j with every zero optional field set to its default.
func (j Job) withDefaults() Job {
	if j.Concurrency == 0 {
		j.Concurrency = DefaultConcurrency
	}
	if j.Overlap == "" {
		j.Overlap = OverlapSkip
	}
	if j.Lease == 0 {
		j.Lease = DefaultLease
	}
	if j.RetryBackoff == 0 {
		j.RetryBackoff = DefaultRetryBackoff
	}
	if j.StartingDeadline == 0 {
		j.StartingDeadline = DefaultStartingDeadline
	}
	if j.MaxWait == 0 {
		j.MaxWait = j.StartingDeadline
	}
	if j.Catchup == "" {
		j.Catchup = CatchupLatest
	}
	if j.OnLeaseLost == "" {
		j.OnLeaseLost = LeaseLostCancel
	}
	if j.HistoryLimit == 0 {
		j.HistoryLimit = DefaultHistoryLimit
	}
	return j
}

// flatten lists the errors errors.Join joined (none for nil).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
