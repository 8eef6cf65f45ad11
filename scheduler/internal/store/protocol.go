package store

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/luascript"
)

// The store protocol: everything the Go side and the Lua scripts (lua/*.lua)
// say to each other, in one place. Each script's header lists its KEYS,
// ARGV and answers, and ends with a "protocol:" line that
// TestProtocolHeaders checks against ScriptSpecs below: the number of head
// and per-run arguments the encoders here send, and every answer the
// decoders here know. Nothing outside this file spells a status string.

// RunKind says how a claim came about, as claim.lua reads it (the first of
// its terms) and a run record keeps it.
type RunKind byte

const (
	RunScheduled RunKind = 's'
	RunCatchup   RunKind = 'c'
	RunManual    RunKind = 'm'
	// RunMiss records a scheduled run missed: the replica's clock says
	// its deadline passed; Redis' decides (before it, it is claimed as s).
	RunMiss RunKind = 'x'
	// RunOutage records missed a scheduled run due while no replica
	// claimed it — every replica down, or none reaching Redis — found by
	// the first heartbeat of a replica that starts after it (misses.go).
	// It never starts the run.
	RunOutage RunKind = 'o'
	// RunBackfill is an instant of a backfill (Control.Backfill).
	RunBackfill RunKind = 'b'
)

// record is how a run record spells the kind.
func (k RunKind) record() string {
	if k == RunMiss || k == RunOutage {
		return string(RunScheduled)
	}
	return string(k)
}

// Public is the kind as the API names it.
func (k RunKind) Public() Kind { return kindOf(k.record()) }

// Answer is the verdict on one run of claim.lua and admit.lua (their first
// field), and of the store layers above them (retry).
type Answer string

const (
	AnswerStarted Answer = "started" // the run is ours: start it
	AnswerDecided Answer = "decided" // someone else decided it
	AnswerWaiting Answer = "waiting" // queued for a slot (overlap: wait)
	AnswerEarly   Answer = "early"   // too early on Redis' clock: ask again
	AnswerLater   Answer = "later"   // claimed ahead, not startable yet: ask at the instant
	AnswerRefused Answer = "refused" // not ours to decide
	AnswerLost    Answer = "lost"    // admit: no longer ours
	// AnswerExpired (admit): a manual run admitted by a poll whose answer
	// was lost, closed lease_lost since: it never started, and is handed
	// back to the pending requests (undo drop takes the close back).
	AnswerExpired Answer = "expired"
	// AnswerRetry is the store's, not a script's: the run was claimed, then
	// taken back (too few replicas acknowledged it, or no Redlock quorum).
	AnswerRetry Answer = "retry"
	// Decided now, by us: the outcome we recorded.
	AnswerSkippedOverlap  = Answer(SkippedOverlap)
	AnswerSkippedPaused   = Answer(SkippedPaused)
	AnswerSkippedBlackout = Answer(SkippedBlackout)
	AnswerMissed          = Answer(Missed)
)

// ReasonBeforeState is claim.lua's refusal of an instant due before the
// job's state existed (a new job, as far as any replica that asked knows):
// never the job's to run, and no miss. It is logged at DEBUG only.
const ReasonBeforeState = "due before the job's state existed"

// ReasonOtherTable is claim.lua's refusal of a run that finds no record
// but may have been decided by another job table that kept its record for
// less time than the asking one (parts/kept.lua): expected for a while
// after a rolling deploy or a reload raises the retention (jitter,
// starting deadline, max wait, interval). Logged at INFO.
const ReasonOtherTable = "may have been decided under another job table, which keeps records for less time: not started again"

// decidedByUs reports whether a is a decision this replica recorded that
// starts nothing (a skip or a miss).
func (a Answer) decidedByUs() bool {
	switch a {
	case AnswerSkippedOverlap, AnswerSkippedPaused, AnswerSkippedBlackout, AnswerMissed:
		return true
	}
	return false
}

// LeaseAnswer is renew.lua's answer per run, and the store's unacked.
type LeaseAnswer string

const (
	LeaseOK         LeaseAnswer = "ok"
	LeaseLostAnswer LeaseAnswer = "lost"
	LeaseReplaced   LeaseAnswer = "replaced"
	// LeaseCancelled: an operator cancelled the run (renewed all the same:
	// the holder closes it once its job has stopped).
	LeaseCancelled LeaseAnswer = "cancelled"
	// LeaseUnacked: renewed where it was sent, but not acknowledged by
	// enough replicas or masters: a failed renewal, not a lost lease.
	LeaseUnacked LeaseAnswer = "unacked"
)

// CloseAnswer is complete.lua's answer per run, and the store's unacked.
type CloseAnswer string

const (
	CloseOK     CloseAnswer = "ok"
	CloseClosed CloseAnswer = "closed" // closed by the cluster already
	CloseLost   CloseAnswer = "lost"   // not ours
	// CloseUnacked: a close Redis applied but too few replicas
	// acknowledged (min_replicas_ack): the holder sends it again.
	CloseUnacked CloseAnswer = "unacked"
)

// undoMode says what undo.lua does with a run; UndoAnswer what it did.
type (
	undoMode   string
	UndoAnswer string
)

const (
	UndoDrop    undoMode = "drop"    // undecided again, as if never claimed
	undoRequeue undoMode = "requeue" // back to waiting, at its old place

	UndoDropped  UndoAnswer = "dropped"
	undoRequeued UndoAnswer = "requeued"
	UndoKept     UndoAnswer = "kept"
)

// scriptSpec is what the Go side sends one script and expects back.
type scriptSpec struct {
	Head, PerRun int      // ARGV: the script's own, then per run (or job)
	Answers      []string // every status it may answer
}

// ScriptSpecs is checked against each script's header (TestProtocolHeaders).
var ScriptSpecs = map[string]scriptSpec{
	"claim": {Head: ClaimHead, PerRun: claimFields, Answers: []string{string(AnswerStarted), string(AnswerDecided),
		string(AnswerSkippedOverlap), string(AnswerSkippedPaused), string(AnswerSkippedBlackout), string(AnswerMissed),
		string(AnswerExpired), string(AnswerWaiting), string(AnswerEarly), string(AnswerLater), string(AnswerRefused)}},
	"admit": {Head: AdmitHead, PerRun: admitFields, Answers: []string{string(AnswerStarted), string(AnswerWaiting), string(AnswerSkippedOverlap),
		string(AnswerSkippedPaused), string(AnswerMissed), string(AnswerExpired), string(AnswerLost)}},
	"renew":    {PerRun: renewFields, Answers: []string{string(LeaseOK), string(LeaseLostAnswer), string(LeaseReplaced), string(LeaseCancelled)}},
	"complete": {PerRun: completeFields, Answers: []string{string(CloseOK), string(CloseClosed), string(CloseLost)}},
	"undo":     {PerRun: undoFields, Answers: []string{string(UndoDropped), string(undoRequeued), string(UndoKept)}},
	"sync":     {Head: syncHead, PerRun: syncFields},
	"attempt":  {Head: attemptArgs},
	"trigger":  {Head: triggerArgs},
	"pause":    {Head: 2},
	"pool":     {Head: 5, Answers: []string{poolOK, poolFull, string(LeaseLostAnswer)}},
	"cancel":   {Head: cancelArgs, Answers: []string{string(CancelAsked), string(CancelEnded), string(CancelNone)}},
	"retry":    {Head: retryArgs, Answers: []string{string(retryQueued), string(RetryRunning), string(RetryFull), string(RetryNone)}},
	// Encoded where their features live: notify.go, replicas.go, statuses.go.
	"notify_take":     {Head: 3},
	"notify_done":     {Head: 3, Answers: []string{"ok", "lost"}},
	"replicas":        {Head: 4},
	"changed":         {Head: 3},
	"status":          {Head: 1},
	"backfill_forget": {Head: 2, Answers: []string{"forgot", "kept"}},
	"backfill":        {Head: backfillArgs, Answers: []string{string(backfillStarted), string(BackfillBusy), string(BackfillCancelled), string(BackfillNone)}},
}

// Claims (claim.lua) ------------------------------------------------------

// ClaimHead is the number of claim.lua's own ARGV fields, before the runs'.
const ClaimHead = 7

// ClaimHeadArgs are claim.lua's own arguments.
// born: the store began empty with this process (WithEphemeralStore).
func ClaimHeadArgs(replica string, skew, waiterTTL, ahead time.Duration, fenceCheck, born bool) []any {
	return []any{replica, skew.Milliseconds(), waiterTTL.Milliseconds(), NewEpoch(), ahead.Milliseconds(), boolInt(fenceCheck), boolInt(born)}
}

// claimFields is the number of ARGV fields per run in claim.lua: the run
// key's suffix and the owner token, which is all a lost race looks at, and
// the rest of the claim's terms in one string (claimReq.appendTerms). Few
// arguments matter: Redis makes a Lua string of every one before the script
// runs, and a replica boxes every one into an interface before it sends it.
const claimFields = 3

// claimArgBytes is about what one run's claim arguments and key take
// (TestClaimBatchAllocations' runs take 161): an ArgBuf this size a run
// rarely grows.
const claimArgBytes = 224

// JobSpec is what the store needs of a job: its settings as the scripts'
// arguments take them. The engine builds one per job when it loads the
// table (jobState.spec) and never changes it; every request carries the
// one of the table it was made under, so the store reads no engine state.
type JobSpec struct {
	Name    string
	MetaKey string // where the job's state is (backend.metaKey)
	Lease   time.Duration
	// Concurrency is the job's slots; Pool and PoolSize the pool it shares
	// them with ("", 0: none).
	Concurrency      int
	Pool             string
	PoolSize         int
	StartingDeadline time.Duration
	CatchupWindow    time.Duration
	// ManualRetention is how long a manual request's record is kept
	// (jobState.manualRetention).
	ManualRetention    time.Duration
	HistoryLimit       int
	Paused             bool
	PauseAfterFailures int
}

// UndoReq takes back one claim or admission (undo.lua).
type UndoReq struct {
	Job       *JobSpec
	ID, Owner string
	Mode      undoMode
	maxWait   time.Duration
}

// StoreClaim asks the store to decide one run. The engine keeps it in its
// claimReq, with the job state it was made under.
type StoreClaim struct {
	Job        *JobSpec
	ID, Suffix string
	Kind       RunKind
	Sched      time.Time
	Fire       time.Time
	Owner      string
	Known      string
	FenceFloor int64
	// Overlap and MaxWait are the job's, except for manual and catch-up
	// runs: someone asked for those, so they queue for a slot.
	Overlap Overlap
	MaxWait time.Duration
	// Base is, for a catch-up run, the last decided instant when the gap
	// was found.
	Base time.Time
	// ReadAt is, for a catch-up run, Redis' time when base was read.
	ReadAt time.Time
	// Sent is when this claim was first sent. A claim whose answer was
	// lost and retried may have been granted by its first execution, so
	// its lease counts from then.
	Sent time.Time
	// ticket orders the run in the job's queue if it must wait; "" for
	// arrival order.
	ticket string
	// Backfill is, for a backfill run, the backfill's id; base is then the
	// backfill's cursor the replica saw (the instant before this one).
	Backfill string
	// Slot is the concurrency slot (1..concurrency) the run holds once
	// started; 0 before.
	Slot int
	// Pgrant tells the script about the run's pool slot on Redis Cluster
	// (TakePools, pool.go): '1' the replica holds it, '0' the pool is full;
	// 0: the script takes it itself (or the job has no pool).
	Pgrant byte
	// Pool and PoolMember name the pool slot the started run holds on
	// Redis Cluster, which the replica renews and frees ("": none, or
	// the scripts keep it).
	Pool, PoolMember string
	// Retention is how long the run's record is kept once it is decided
	// (jobState.retention); blackout whether its instant is in one of the
	// job's blackout windows (never for a manual run).
	Retention time.Duration
	Blackout  bool
}

// AppendTerms appends the claim's terms as claim.lua reads them, separated
// by '|' (no term contains one): kind, scheduled instant, fire instant,
// lease, concurrency, overlap, max wait, starting deadline, retention,
// history limit, paused, known epoch, fence floor, catch-up window,
// catch-up base (backfill: its cursor), ticket, catch-up read time
// (backfill: its id), pause after failures, in a blackout window (1|0),
// pool size (0: no pool), pool name, pool slot grant (pgrant).
func (r *StoreClaim) AppendTerms(b []byte) []byte {
	j := r.Job
	b = append(b, byte(r.Kind), '|')
	b = strconv.AppendInt(b, r.Sched.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.Fire.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.Lease.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.Concurrency), 10)
	b = append(b, '|')
	b = append(b, r.Overlap...)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.MaxWait.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.StartingDeadline.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.Retention.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.HistoryLimit), 10)
	b = append(b, '|')
	if j.Paused {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, '|')
	b = append(b, r.Known...)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.FenceFloor, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.CatchupWindow.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.Base.UnixMilli(), 10)
	b = append(b, '|')
	b = append(b, r.ticket...)
	b = append(b, '|')
	switch r.Kind {
	case RunCatchup, RunOutage:
		b = strconv.AppendInt(b, r.ReadAt.UnixMilli(), 10)
	case RunBackfill:
		b = append(b, r.Backfill...)
	default:
		b = append(b, '0')
	}
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.PauseAfterFailures), 10)
	b = append(b, '|')
	blackout := byte('0')
	if r.Blackout {
		blackout = '1'
	}
	b = append(b, blackout, '|')
	b = strconv.AppendInt(b, int64(j.PoolSize), 10)
	b = append(b, '|')
	b = append(b, j.Pool...)
	b = append(b, '|')
	if r.Pgrant != 0 {
		b = append(b, r.Pgrant)
	}
	return b
}

// ClaimRes is the decision for one run.
type ClaimRes struct {
	Status  Answer
	Epoch   string
	Fence   int64
	Outcome string // decided: the outcome someone else recorded
	Replica string // decided: by whom
	Place   int64  // waiting: place in the queue
	Server  time.Time
	Reason  string
	unacked string // started, but too few replicas acknowledged it: why
	Slot    int    // started: the run's concurrency slot, 1..concurrency
	// Pool and PoolMember: started, the pool slot it holds on Redis
	// Cluster (SettlePools).
	Pool, PoolMember string
}

// AppendClaim appends run r's claim.lua arguments, written into ab: none
// of them is a string of its own or boxed on its own (see ArgBuf).
func AppendClaim(args []any, r *StoreClaim, ab *ArgBuf) []any {
	lo := len(ab.b)
	ab.b = append(ab.b, r.Suffix...)
	mid := len(ab.b)
	ab.b = append(ab.b, r.Owner...)
	hi := len(ab.b)
	ab.b = r.AppendTerms(ab.b)
	return append(args, ab.ref(lo, mid), ab.ref(mid, hi), ab.ref(hi, len(ab.b)))
}

// ArgBuf holds the arguments of one batch of script calls in one buffer.
// Each argument is a reference into it (a pointer into one slice of
// references), which go-redis writes as it is (encoding.BinaryMarshaler):
// no string is made and nothing is boxed per argument — a claim batch of
// 64 runs allocated some 200 times for its arguments, and now does so a
// few times. An ArgBuf is never reused: what the calls sent stays readable
// (a retried call sends it again; hooks may read it).
type ArgBuf struct {
	b    []byte
	refs []ArgRef
}

// NewArgBuf makes an ArgBuf for about n arguments of size bytes in all.
func NewArgBuf(n, size int) *ArgBuf {
	return &ArgBuf{b: make([]byte, 0, size), refs: make([]ArgRef, 0, n)}
}

// str is the argument s, copied into ab.
func (ab *ArgBuf) str(s string) *ArgRef {
	lo := len(ab.b)
	ab.b = append(ab.b, s...)
	return ab.ref(lo, len(ab.b))
}

// ref is the argument ab.b[lo:hi]. A reference outlives a growth of refs:
// the earlier array stays, with the same values.
func (ab *ArgBuf) ref(lo, hi int) *ArgRef {
	ab.refs = append(ab.refs, ArgRef{buf: ab, lo: int32(lo), hi: int32(hi)})
	return &ab.refs[len(ab.refs)-1]
}

// ArgRef is one argument in an ArgBuf. Its String is its text, for hooks
// and logs that print arguments (fmt.Sprint).
type ArgRef struct {
	buf    *ArgBuf
	lo, hi int32
}

// MarshalBinary is the argument's bytes, as go-redis writes them; the
// caller must not change them.
func (r *ArgRef) MarshalBinary() ([]byte, error) { return r.buf.b[r.lo:r.hi:r.hi], nil }

func (r *ArgRef) String() string { return string(r.buf.b[r.lo:r.hi]) }

// claimPacked is how many '|'-separated fields a lost race packs in one
// string ("decided||outcome|fence|replica"), and claimLeast the fewest
// fields any answer has.
const (
	claimPacked = 5
	claimLeast  = 2
)

// decodeClaim reads claim.lua's answer for one run. With min_replicas_ack
// (ackMode), a lost race's token is not taken as seen: a claim that is
// taken back (unacked) may be lost in a failover without any loss to
// notice.
func decodeClaim(f []string, ackMode bool) ClaimRes {
	res := ClaimRes{Status: Answer(f[0]), Epoch: f[1]}
	switch res.Status {
	case AnswerStarted:
		res.Fence, _ = strconv.ParseInt(at(f, 2), 10, 64)
		res.Slot, _ = strconv.Atoi(at(f, 4))
		if ms, _ := strconv.ParseInt(at(f, 3), 10, 64); ms > 0 {
			res.Server = time.UnixMilli(ms)
		}
	case AnswerDecided:
		res.Outcome, res.Replica = at(f, 2), at(f, 4)
		if !ackMode {
			// The winner's token, learnt as a heartbeat learns the
			// job's: a failover to a copy older than it is noticed at
			// this replica's next claim, not only the winner's.
			res.Fence = intOrZero(at(f, 3))
		}
	case AnswerWaiting:
		res.Place, _ = strconv.ParseInt(at(f, 2), 10, 64)
	case AnswerEarly, AnswerLater:
		ms, _ := strconv.ParseInt(at(f, 2), 10, 64)
		res.Server = time.UnixMilli(ms)
	case AnswerRefused:
		res.Reason = at(f, 2)
	}
	return res
}

// intOrZero is s as a number, 0 if it is none. A lost race to a run that
// never started answers no fence: "" parses without ParseInt's error,
// which is an allocation.
func intOrZero(s string) int64 {
	if s == "" {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Admissions (admit.lua) --------------------------------------------------

// AdmitHead is the number of admit.lua's own arguments; admitFields the
// number per run.
const AdmitHead, admitFields = 7, 3

// AdmitCall polls rs, queued runs of one job, in one call. The first's job
// state gives the terms: all of them carry the job as the table in force
// has it now (pollQueued), whatever table they were queued under.
func AdmitCall(rs []*StoreClaim, waiterTTL time.Duration, fenceFloor int64) call {
	j := rs[0].Job
	args := make([]any, 0, AdmitHead+admitFields*len(rs))
	args = append(args, j.Lease.Milliseconds(), j.Concurrency, waiterTTL.Milliseconds(),
		strconv.FormatInt(fenceFloor, 10), boolInt(j.Paused), j.PoolSize, j.Pool)
	for _, r := range rs {
		grant := ""
		if r.Pgrant != 0 {
			grant = string(r.Pgrant)
		}
		args = append(args, r.ID, r.Owner, grant)
	}
	return call{keys: []string{j.MetaKey}, Args: args}
}

// AdmitRes is admit.lua's answer for one run: the status, the fencing
// token (started) or the place (waiting).
type AdmitRes struct {
	Status Answer
	N      int64
}

// decodeAdmit reads admit.lua's answer for one run: the status, the
// fencing token (started) or the place (waiting), and the slot (started).
func decodeAdmit(v any) (status Answer, n int64, slot int, err error) {
	f := strs(v)
	if len(f) == 0 {
		return "", 0, 0, fmt.Errorf("scheduler: unexpected admit reply %v", v)
	}
	n, _ = strconv.ParseInt(at(f, 1), 10, 64)
	if Answer(f[0]) == AnswerStarted {
		slot, _ = strconv.Atoi(at(f, 2))
	}
	return Answer(f[0]), n, slot, nil
}

// Undo (undo.lua) ---------------------------------------------------------

// undoFields is the number of ARGV fields per run in undo.lua.
const undoFields = 5

func AppendUndo(args []any, r *UndoReq, waiterTTL time.Duration) []any {
	return append(args, r.ID, r.Owner, string(r.Mode), waiterTTL.Milliseconds(), r.maxWait.Milliseconds())
}

// Renewals (renew.lua) -----------------------------------------------------

// RenewReq is one run's lease renewal.
type RenewReq struct {
	Job       *JobSpec
	ID, Owner string
	// Pool and member: the pool slot the run holds on Redis Cluster,
	// renewed apart (renewPools); "" for none.
	Pool, Member string
}

// renewFields is the number of ARGV fields per run in renew.lua.
const renewFields = 3

func AppendRenew(args []any, r *RenewReq) []any {
	return append(args, r.ID, r.Owner, r.Job.Lease.Milliseconds())
}

// Attempts (attempt.lua) --------------------------------------------------

// attemptArgs is the number of attempt.lua's arguments.
const attemptArgs = 4

func AttemptCall(j *JobSpec, id, owner string, n int, fenceFloor int64) call {
	return call{keys: []string{j.MetaKey}, Args: []any{id, owner, n, strconv.FormatInt(fenceFloor, 10)}}
}

// decodeAttempt reads attempt.lua's answer: the fencing token, 0 when the
// run is no longer held.
func decodeAttempt(v any) (int64, error) {
	switch t := v.(type) {
	case int64:
		return t, nil
	case string:
		return strconv.ParseInt(t, 10, 64)
	}
	return 0, fmt.Errorf("scheduler: unexpected attempt reply %v", v)
}

// Closes (complete.lua) ---------------------------------------------------

// CompleteReq closes one run.
type CompleteReq struct {
	R        *StoreClaim
	Replica  string
	Outcome  Outcome
	Attempts int
	ErrText  string
	Output   string
	TraceID  string // the run span's, "" without tracing
	// StatsRaw and StatsAt are set by the close (the store's, not
	// Redlock's): the job's statistics it left, as sync.lua packs them, and
	// the server time (µs) of that reading; StatsAt 0: none.
	StatsRaw string
	StatsAt  int64
}

// completeFields is the number of ARGV fields per run in complete.lua.
const completeFields = 8

// Entry is the history record of a run as its holder knows it: a JSON
// object of strings without its closing brace; complete.lua adds decision,
// fence, started and finished, which the server holds.
func (c CompleteReq) Entry() string {
	r := c.R
	b, _ := json.Marshal(struct {
		ID       string `json:"id"`
		Job      string `json:"job"`
		Kind     string `json:"kind"`
		Sched    string `json:"sched"`
		Outcome  string `json:"outcome"`
		Replica  string `json:"replica"`
		Attempts string `json:"attempts"`
		Error    string `json:"error"`
		Output   string `json:"output"`
		Trace    string `json:"trace,omitempty"`
		Slot     string `json:"slot,omitempty"`
	}{r.ID, r.Job.Name, r.Kind.record(), strconv.FormatInt(r.Sched.UnixMilli(), 10), string(c.Outcome), c.Replica,
		strconv.Itoa(c.Attempts), c.ErrText, c.Output, c.TraceID, slotText(r.Slot)})
	return string(b[:len(b)-1])
}

func AppendComplete(args []any, c *CompleteReq) []any {
	return append(args, c.R.ID, c.R.Owner, string(c.Outcome), c.Attempts, c.ErrText,
		c.Entry(), c.R.Retention.Milliseconds(), c.R.Job.HistoryLimit)
}

// Heartbeats (sync.lua) ---------------------------------------------------

// SyncReq is one job's heartbeat.
type SyncReq struct {
	Job   *JobSpec
	Known string
	Fence int64 // the highest fencing token the replica has seen
	// StatsOnly: read the job's statistics and what the replica knows of
	// its epoch only (sync.lua syncs it whole when the epoch or the token
	// says Redis lost data).
	StatsOnly bool
}

// SyncRes is what a heartbeat learns about a job.
type SyncRes struct {
	Epoch  string
	Paused bool
	Last   time.Time // latest scheduled instant decided; zero if none
	Floor  time.Time
	Fence  int64
	Stats  JobStats
	// StatsRaw is stats as sync.lua packed them, StatsAt the server time
	// (µs) of the reading; 0 when unknown (Redlock merges masters').
	StatsRaw string
	StatsAt  int64
	Manual   []string // pending manual run ids
}

// syncHead and syncFields are the numbers of sync.lua's own ARGV fields
// and of those per job; syncLeast the fewest fields of its answer per job.
const (
	syncHead   = 5
	syncFields = 6
	syncLeast  = 7
)

func SyncHeadArgs(skew, manualTTL, ahead time.Duration, born bool) []any {
	return []any{skew.Milliseconds(), NewEpoch(), manualTTL.Milliseconds(), ahead.Milliseconds(), boolInt(born)}
}

// AppendSync appends job r's arguments; fenceCheck as for claims.
func AppendSync(args []any, r *SyncReq, replica string, fenceCheck bool) []any {
	seen := "0"
	if fenceCheck {
		seen = strconv.FormatInt(r.Fence, 10)
	}
	mode := "f"
	if r.StatsOnly {
		mode = "s"
	}
	return append(args, r.Known, r.Job.ManualRetention.Milliseconds(), r.Job.HistoryLimit, replica, seen, mode)
}

// decodeSync reads sync.lua's answer for one job.
func decodeSync(f []string) SyncRes {
	r := SyncRes{Epoch: f[0], Paused: f[1] == "1", Stats: ParseStats(f[5]), StatsRaw: f[5], Manual: f[7:]}
	r.StatsAt, _ = strconv.ParseInt(f[6], 10, 64)
	if ms, _ := strconv.ParseInt(f[2], 10, 64); ms > 0 {
		r.Last = time.UnixMilli(ms)
	}
	if ms, _ := strconv.ParseInt(f[3], 10, 64); ms > 0 {
		r.Floor = time.UnixMilli(ms)
	}
	r.Fence, _ = strconv.ParseInt(f[4], 10, 64)
	return r
}

// Control's writes (trigger.lua, pause.lua) -------------------------------

// triggerArgs is the number of trigger.lua's arguments.
const triggerArgs = 5

func TriggerCall(metaKey, id string, skew time.Duration, born bool) call {
	return call{keys: []string{metaKey}, Args: []any{id, MaxPendingManual, NewEpoch(), (2 * skew).Milliseconds(), boolInt(born)}}
}

// decodeTrigger reads trigger.lua's answer: whether the job's queue of
// pending requests was full.
func decodeTrigger(v any) (full bool, err error) {
	at, ok := v.(int64)
	switch {
	case !ok:
		return false, fmt.Errorf("scheduler: unexpected trigger reply %v", v)
	case at < 0:
		return true, nil
	}
	return false, nil
}

// Cancel and retry of one run (cancel.lua, retry.lua) ---------------------

type (
	cancelAnswer string
	retryAnswer  string
)

const (
	CancelAsked cancelAnswer = "asked" // its holder stops it at its next renewal
	CancelEnded cancelAnswer = "ended" // not running
	CancelNone  cancelAnswer = "none"  // no record

	retryQueued  retryAnswer = "queued"
	RetryRunning retryAnswer = "running" // not ended yet
	RetryFull    retryAnswer = "full"    // MaxPendingManual pending
	RetryNone    retryAnswer = "none"    // no such run
)

// cancelArgs and retryArgs are the numbers of the scripts' arguments.
const (
	cancelArgs = 2
	retryArgs  = 5
)

func CancelCall(metaKey, id, who string) call {
	return call{keys: []string{metaKey}, Args: []any{id, who}}
}

// decodeCancel reads cancel.lua's answer and, for "ended", the outcome.
func decodeCancel(v any) (cancelAnswer, Outcome, error) {
	f := strs(v)
	if len(f) == 0 {
		return "", "", fmt.Errorf("scheduler: unexpected cancel reply %v", v)
	}
	return cancelAnswer(f[0]), Outcome(at(f, 1)), nil
}

func RetryCall(metaKey, id, newID, who string, ended bool) call {
	return call{keys: []string{metaKey}, Args: []any{id, newID, MaxPendingManual, who, boolInt(ended)}}
}

func decodeRetry(v any) (retryAnswer, error) {
	f := strs(v)
	if len(f) == 0 {
		return "", fmt.Errorf("scheduler: unexpected retry reply %v", v)
	}
	return retryAnswer(f[0]), nil
}

func PauseArgs(paused bool, why string) []any {
	if paused {
		return []any{"1", why}
	}
	return []any{"0", ""}
}

// Run records -------------------------------------------------------------

// A run's record is a hash (lua/parts/keys.lua: run:<suffix>) while the store keeps
// it, and a JSON object of strings in the job's history once it is closed.
// WireRun is that schema, the one list of its fields: the scripts write
// them (claim.lua, admit.lua, complete.lua, the parts' close and file;
// lua/parts/history.lua's RECORD lists those a closed record copies from its hash),
// except those only the holder knows (HolderFields), which reach the
// history in the entry complete.lua finishes.
// TestProtocolRecord checks the scripts against it.

// WireRun is a run record as Redis keeps it: every field a string.
type WireRun struct {
	ID       string `json:"id"`
	Job      string `json:"job"`
	Kind     string `json:"kind"`
	Sched    string `json:"sched"`
	Decision string `json:"decision"`
	Outcome  string `json:"outcome"`
	Replica  string `json:"replica"`
	Fence    string `json:"fence"`
	Started  string `json:"started"`
	Finished string `json:"finished"`
	Attempts string `json:"attempts"`
	Error    string `json:"error"`
	Output   string `json:"output"`
	Trace    string `json:"trace"`
	Paused   string `json:"paused"`
	Slot     string `json:"slot"`
	// CancelledBy says who asked the run to stop (cancel.lua).
	CancelledBy string `json:"cancelled_by"`
}

// HolderFields are the record's fields no script keeps in the run's hash:
// only its holder knows them, and sends them in its history entry.
var HolderFields = []string{"trace"}

func MsTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (w WireRun) Run() Run {
	fence, _ := strconv.ParseInt(w.Fence, 10, 64)
	attempts, _ := strconv.Atoi(w.Attempts)
	slot, _ := strconv.Atoi(w.Slot)
	return Run{Slot: slot,
		ID: w.ID, Job: w.Job, Kind: kindOf(w.Kind), ScheduledAt: MsTime(w.Sched),
		Decision: Outcome(w.Decision), Outcome: Outcome(w.Outcome), Replica: w.Replica,
		FencingToken: fence, StartedAt: MsTime(w.Started), FinishedAt: MsTime(w.Finished),
		Attempts: attempts, Error: w.Error, Output: w.Output, TraceID: w.Trace, Paused: w.Paused,
		CancelledBy: w.CancelledBy,
	}
}

// runFromHash reads the record of run id as the run's hash keeps it; its id
// and job are in its key, not in the hash.
func runFromHash(id string, h map[string]string) Run {
	job, _, _ := SplitRunID(id)
	attempts, slot := h["attempts"], h["slot"]
	if attempts == "" && h["started"] != "" {
		attempts = "1"
	}
	if slot == "" && h["started"] != "" {
		slot = "1"
	}
	return WireRun{
		ID: id, Job: job, Kind: h["kind"], Sched: h["sched"], Decision: h["decision"],
		Outcome: h["outcome"], Replica: h["replica"], Fence: h["fence"], Started: h["started"],
		Finished: h["finished"], Attempts: attempts, Error: h["error"], Output: h["output"], Paused: h["paused"], Slot: slot,
		CancelledBy: h["cancelled_by"],
	}.Run()
}

func decodeHistory(raw []string) ([]Run, error) {
	out := make([]Run, 0, len(raw))
	for _, s := range raw {
		var w WireRun
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return nil, fmt.Errorf("scheduler: bad history record: %w", err)
		}
		out = append(out, w.Run())
	}
	return out, nil
}

// Replies --------------------------------------------------------------

// strs reads a script reply array as strings.
func strs(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		switch t := x.(type) {
		case string:
			out[i] = t
		case int64:
			out[i] = strconv.FormatInt(t, 10)
		case nil:
		default:
			out[i] = fmt.Sprint(t)
		}
	}
	return out
}

func at(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// slotText is a run's slot as its record keeps it: "" before it started.
func slotText(slot int) string {
	if slot <= 0 {
		return ""
	}
	return strconv.Itoa(slot)
}

// NewEpoch draws a fresh random epoch for a job state a script may create.
func NewEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// LuaFiles are the scripts (lua/*.lua) and the parts they share
// (lua/parts/*.lua, one file per concern).
//
//go:embed lua/*.lua lua/parts/*.lua
var LuaFiles embed.FS

// luaParts are the parts the scripts share: a script gets those whose
// names it uses (internal/luascript, the loader lockprovider uses too).
var luaParts = luascript.LoadParts(LuaFiles, "lua/parts")

// sources holds every script's source, for preload.
var sources []string

// script builds the named script: lua/<name>.lua after the parts it uses
// (luaParts), fence.lua among them when it issues fencing tokens.
func script(name string) *redis.Script {
	src := luaParts.Script(LuaFiles, "lua", name)
	sources = append(sources, src)
	return redis.NewScript(src)
}

var (
	claimScript    = script("claim")
	AdmitScript    = script("admit")
	renewScript    = script("renew")
	attemptScript  = script("attempt")
	completeScript = script("complete")
	SyncScript     = script("sync")
	triggerScript  = script("trigger")
	pauseScript    = script("pause")
	cancelScript   = script("cancel")
	retryScript    = script("retry")
	UndoScript     = script("undo")
	backfillScript = script("backfill")
	forgetScript   = script("backfill_forget")

	notifyTakeScript = script("notify_take")
	notifyDoneScript = script("notify_done")
	ChangedScript    = script("changed")
)

// JobNamePattern is the pattern of a job name, scheduler.JobNamePattern (a
// test there keeps the two equal): a run id is "<job>@<suffix>".
const JobNamePattern = `^[A-Za-z0-9_.-]{1,128}$`

var jobNameRE = regexp.MustCompile(JobNamePattern)

// ValidJobName reports whether name may be a job name (scheduler.ValidJobName):
// JobNamePattern, but not "." or "..", which no address can name (a browser
// and an HTTP router read /jobs/.. as /).
func ValidJobName(name string) bool {
	return jobNameRE.MatchString(name) && name != "." && name != ".."
}

// SuffixOf is the part of run id id after its job's name.
func SuffixOf(id string) string {
	_, s, _ := SplitRunID(id)
	return s
}

func SplitRunID(id string) (job, suffix string, ok bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '@' {
			job, suffix = id[:i], id[i+1:]
			return job, suffix, ValidJobName(job) && suffix != ""
		}
	}
	return "", "", false
}
