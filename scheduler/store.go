package scheduler

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// sources holds every script's source, for preload.
var sources []string

func script(name string) *redis.Script {
	common, err := luaFiles.ReadFile("lua/common.lua")
	if err != nil {
		panic(err) // embedded at build time
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	src := string(common) + string(body)
	sources = append(sources, src)
	return redis.NewScript(src)
}

var (
	claimScript    = script("claim")
	admitScript    = script("admit")
	renewScript    = script("renew")
	attemptScript  = script("attempt")
	completeScript = script("complete")
	syncScript     = script("sync")
	triggerScript  = script("trigger")
	pauseScript    = script("pause")
	undoScript     = script("undo")

	notifyTakeScript = script("notify_take")
	notifyDoneScript = script("notify_done")
)

// preload loads every script in one pipeline, so the first claim after a
// start is one round trip too (EVALSHA would otherwise meet NOSCRIPT once).
// It sends SCRIPT LOAD itself: redis.Script.Load on a pipeliner would read
// the reply before it exists and store an empty hash in the shared Script.
func (s *store) preload(ctx context.Context) error {
	load := func(p redis.Pipeliner) error {
		for _, src := range sources {
			p.ScriptLoad(ctx, src)
		}
		return nil
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			_, err := m.Pipelined(ctx, load)
			return err
		})
	}
	_, err := s.c.Pipelined(ctx, load)
	return err
}

// claimFields is the number of ARGV fields per run in claim.lua: the run
// key's suffix and the owner token, which is all a lost race looks at, and
// the rest of the claim's terms in one string (claimReq.appendTerms). Few
// arguments matter: Redis makes a Lua string of every one before the script
// runs, and a replica boxes every one into an interface before it sends it.
const claimFields = 3

// maxBatch bounds the runs one script call decides, so no single call holds
// Redis for long.
const maxBatch = 64

// store keeps the cluster's shared state in one Redis deployment:
// standalone, Sentinel (a failover client) or Cluster. Every operation is
// one script per job (or per batch of runs), one round trip.
type store struct {
	c       redis.UniversalClient
	prefix  string
	cluster bool // keys of different jobs must not share a script call

	// minAck > 0: claims, admissions and renewals count only once that many
	// replicas acknowledged them (WAIT), within ackTimeout.
	minAck     int
	ackTimeout time.Duration
	// claimAhead is how long before its instant a run may be claimed.
	claimAhead time.Duration
	// skew is the max clock skew (a job state created by a trigger places
	// its data-loss floor with it).
	skew time.Duration
	// fenceCheck: the scripts compare the highest fencing token a replica
	// has seen with the store's last (a store below it lost writes). Off
	// for a Redlock master: the token a replica saw may be another's.
	fenceCheck bool
}

func newStore(c redis.UniversalClient, cfg config) (*store, error) {
	s := &store{c: c, prefix: cfg.prefix, minAck: cfg.minAck, ackTimeout: cfg.ackTimeout, claimAhead: cfg.maxAhead,
		skew: cfg.skew, fenceCheck: true}
	switch c.(type) {
	case *redis.ClusterClient:
		s.cluster = true
	case *redis.Client:
	default:
		if s.minAck > 0 {
			// WAIT counts the writes of its own connection: only a client
			// whose pipelines stay on one connection can ask it.
			return nil, fmt.Errorf("scheduler: WithMinReplicasAck needs a *redis.Client or *redis.ClusterClient, not %T", c)
		}
	}
	return s, nil
}

func (s *store) metaKey(job string) string { return s.prefix + ":{" + job + "}:meta" }
func (s *store) key(job, kind string) string {
	return s.prefix + ":{" + job + "}:" + kind
}

// call is one script invocation.
type call struct {
	keys []string
	args []any
}

// exec runs script once per call, all calls pipelined in one round trip
// (per cluster node). EVALSHA is tried first; a NOSCRIPT reply (after SCRIPT
// FLUSH or a restart) loads the script and retries those calls.
func (s *store) exec(ctx context.Context, sc *redis.Script, calls []call) ([]any, error) {
	if len(calls) == 1 {
		v, err := sc.Run(ctx, s.c, calls[0].keys, calls[0].args...).Result()
		if err != nil {
			return nil, err
		}
		return []any{v}, nil
	}
	out := make([]any, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(pending))
		_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, i := range pending {
				cmds[j] = sc.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
			}
			return nil
		})
		var again []int
		for j, i := range pending {
			v, cerr := cmds[j].Result()
			switch {
			case cerr == nil:
				out[i] = v
			case redis.HasErrorPrefix(cerr, "NOSCRIPT") && attempt == 0:
				again = append(again, i)
			default:
				return nil, cerr
			}
		}
		if len(again) == 0 {
			if err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
				return nil, err
			}
			return out, nil
		}
		if err := sc.Load(ctx, s.c).Err(); err != nil {
			return nil, err
		}
		pending = again
	}
}

// ack is what WAIT said after a call: how many replicas acknowledged the
// connection's writes, or why it could not say.
type ack struct {
	n   int64
	err error
}

func (s *store) acked(a ack) bool { return a.err == nil && a.n >= int64(s.minAck) }

// why describes an ack that falls short, for logs and records.
func (s *store) why(a ack) string {
	if a.err != nil {
		return "WAIT failed: " + a.err.Error()
	}
	return fmt.Sprintf("%d of the %d replicas required (min_replicas_ack) acknowledged it", a.n, s.minAck)
}

// run is exec, followed, when min_replicas_ack is set, by WAIT on every
// connection that ran a call; acks[i] is call i's (nil without WAIT).
func (s *store) run(ctx context.Context, sc *redis.Script, calls []call) ([]any, []ack, error) {
	if s.minAck <= 0 {
		out, err := s.exec(ctx, sc, calls)
		return out, nil, err
	}
	out := make([]any, len(calls))
	acks := make([]ack, len(calls))
	// WAIT counts the writes made on its own connection before it, so each
	// call and its WAIT travel in one pipeline on one connection — the
	// primary's on a single Redis, the slot's master's on Cluster.
	var nodes []*redis.Client
	byNode := map[*redis.Client][]int{}
	switch c := s.c.(type) {
	case *redis.ClusterClient:
		for i, cl := range calls {
			m, err := c.MasterForKey(ctx, cl.keys[0])
			if err != nil {
				return nil, nil, err
			}
			if _, ok := byNode[m]; !ok {
				nodes = append(nodes, m)
			}
			byNode[m] = append(byNode[m], i)
		}
	case *redis.Client:
		nodes = []*redis.Client{c}
		for i := range calls {
			byNode[c] = append(byNode[c], i)
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, n := range nodes {
		wg.Go(func() { errs[k] = s.execWait(ctx, n, sc, calls, byNode[n], out, acks) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if s.cluster && isMoved(err) {
			s.c.(*redis.ClusterClient).ReloadState(ctx)
		}
		return nil, nil, err
	}
	return out, acks, nil
}

// execWait runs calls idx on one node in one pipeline ending with WAIT.
func (s *store) execWait(ctx context.Context, node *redis.Client, sc *redis.Script, calls []call, idx []int, out []any, acks []ack) error {
	// WAIT must answer before the call's deadline and the client's read
	// timeout (a pipeline reads with the client's, not WAIT's own).
	timeout := s.ackTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)/2)
	}
	if rt := node.Options().ReadTimeout; rt > 0 {
		timeout = min(timeout, rt/2)
	}
	ms := max(timeout.Milliseconds(), 1) // WAIT n 0 would block for ever
	pending := idx
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(pending))
		var wait *redis.Cmd
		// Each command's own error is checked below; the pipeline's is the
		// first of them.
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, i := range pending {
				cmds[j] = sc.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
			}
			wait = p.Do(ctx, "wait", s.minAck, ms)
			return nil
		})
		n, werr := wait.Int64()
		var again []int
		for j, i := range pending {
			v, err := cmds[j].Result()
			switch {
			case err == nil:
				out[i], acks[i] = v, ack{n: n, err: werr}
			case redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0:
				again = append(again, i)
			default:
				return err
			}
		}
		if len(again) == 0 {
			return nil
		}
		if err := sc.Load(ctx, node).Err(); err != nil {
			return err
		}
		pending = again
	}
}

func isMoved(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "CLUSTERDOWN")
}

// undoReq takes back one claim or admission (undo.lua).
type undoReq struct {
	j         *jobState
	id, owner string
	mode      string // drop | requeue
	maxWait   time.Duration
}

func (s *store) undo(ctx context.Context, waiterTTL time.Duration, reqs []undoReq) ([]string, error) {
	calls, groups := batch(s, reqs, func(r *undoReq) *jobState { return r.j }, nil, 5, func(args []any, r *undoReq) []any {
		return append(args, r.id, r.owner, r.mode, waiterTTL.Milliseconds(), r.maxWait.Milliseconds())
	})
	replies, err := s.exec(ctx, undoScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter("undo", replies, groups, len(reqs), nil)
}

// handBack is undo.lua's drop and the job's manual hint, in one round trip.
func (s *store) handBack(ctx context.Context, r *claimReq, waiterTTL time.Duration) (bool, error) {
	v, err := s.scriptAndHint(ctx, undoScript, call{keys: []string{r.j.metaKey},
		args: []any{r.id, r.owner, "drop", waiterTTL.Milliseconds(), r.maxWait.Milliseconds()}}, r.j.Name)
	if err != nil {
		return false, err
	}
	return at(strs(v), 0) == "dropped", nil
}

// scatter puts the answers of batched script calls (one string per run)
// back in request order. adjust, when set, may rewrite call gi's answer v.
func scatter(op string, replies []any, groups [][]int, n int, adjust func(gi int, v string) string) ([]string, error) {
	out := make([]string, n)
	for gi, g := range groups {
		f := strs(replies[gi])
		if len(f) != len(g) {
			return nil, fmt.Errorf("scheduler: unexpected %s reply %v", op, replies[gi])
		}
		for k, i := range g {
			out[i] = f[k]
			if adjust != nil {
				out[i] = adjust(gi, f[k])
			}
		}
	}
	return out, nil
}

// scatterRows calls fn with each run's answer (an array of at least least
// strings), its request index and its call. A script may also answer a run
// in one string of packed fields separated by '|' (0: it never does), the
// last of which may itself hold '|'.
func scatterRows(op string, replies []any, groups [][]int, least, packed int, fn func(gi, i int, f []string)) error {
	for gi, g := range groups {
		rows, ok := replies[gi].([]any)
		if !ok || len(rows) != len(g) {
			return fmt.Errorf("scheduler: unexpected %s reply %v", op, replies[gi])
		}
		for k, i := range g {
			var f []string
			if row, ok := rows[k].(string); ok && packed > 0 {
				f = strings.SplitN(row, "|", packed)
			} else {
				f = strs(rows[k])
			}
			if len(f) < least {
				return fmt.Errorf("scheduler: unexpected %s reply %v", op, rows[k])
			}
			fn(gi, i, f)
		}
	}
	return nil
}

// batch builds the script calls for runs of reqs: each call carries head
// (the script's own arguments) and then, for each run, its job's meta key
// (job gives the job) and the perRun arguments add appends. It returns the
// calls and, per call, the indexes of the runs it carries (see group).
func batch[T any](s *store, reqs []T, job func(*T) *jobState, head []any, perRun int, add func(args []any, r *T) []any) ([]call, [][]int) {
	groups := group(s, len(reqs), func(i int) string { return job(&reqs[i]).Name })
	calls := make([]call, len(groups))
	for gi, g := range groups {
		c := call{keys: make([]string, 0, len(g)), args: make([]any, 0, len(head)+perRun*len(g))}
		c.args = append(c.args, head...)
		for _, i := range g {
			r := &reqs[i]
			c.keys = append(c.keys, job(r).metaKey)
			c.args = add(c.args, r)
		}
		calls[gi] = c
	}
	return calls, groups
}

// group splits n runs into script calls: all together (in chunks) on a
// single Redis, one call per job (named by job) on Cluster, where a script
// may only touch one hash slot.
func group(s *store, n int, job func(i int) string) [][]int {
	var groups [][]int
	if !s.cluster {
		for i := 0; i < n; i += maxBatch {
			g := make([]int, 0, min(maxBatch, n-i))
			for j := i; j < n && j < i+maxBatch; j++ {
				g = append(g, j)
			}
			groups = append(groups, g)
		}
		return groups
	}
	byJob := map[string]int{}
	for i := range n {
		k, ok := byJob[job(i)]
		if !ok {
			k = len(groups)
			byJob[job(i)] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], i)
	}
	return groups
}

func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claimReq asks to decide one run.
type claimReq struct {
	j          *jobState
	id, suffix string
	kind       byte // 's' scheduled, 'c' catch-up, 'm' manual, 'x' record missed
	sched      time.Time
	fire       time.Time
	owner      string
	known      string
	fenceFloor int64
	// overlap and maxWait are the job's, except for manual and catch-up
	// runs: someone asked for those, so they queue for a slot.
	overlap Overlap
	maxWait time.Duration
	// base is, for a catch-up run, the last decided instant when the gap
	// was found.
	base time.Time
	// readAt is, for a catch-up run, Redis' time when base was read.
	readAt time.Time
	// sent is when this claim was first sent. A claim whose answer was
	// lost and retried may have been granted by its first execution, so
	// its lease counts from then.
	sent time.Time
	// ticket orders the run in the job's queue if it must wait; "" for
	// arrival order.
	ticket string
	// slot is the concurrency slot (1..concurrency) the run holds once
	// started; 0 before.
	slot int
}

// appendTerms appends the claim's terms as claim.lua reads them, separated
// by '|' (no term contains one): kind, scheduled instant, fire instant,
// lease, concurrency, overlap, max wait, starting deadline, retention,
// history limit, paused, known epoch, fence floor, catch-up window,
// catch-up base, ticket, catch-up read time, pause after failures, in a
// blackout window (1|0).
func (r *claimReq) appendTerms(b []byte) []byte {
	j := r.j
	b = append(b, r.kind, '|')
	b = strconv.AppendInt(b, r.sched.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.fire.UnixMilli(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.Lease.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.Concurrency), 10)
	b = append(b, '|')
	b = append(b, r.overlap...)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.maxWait.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.StartingDeadline.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.retention(r.sched).Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.HistoryLimit), 10)
	b = append(b, '|')
	if j.Paused {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, '|')
	b = append(b, r.known...)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.fenceFloor, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, j.CatchupWindow.Milliseconds(), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, r.base.UnixMilli(), 10)
	b = append(b, '|')
	b = append(b, r.ticket...)
	b = append(b, '|')
	if r.kind == 'c' {
		b = strconv.AppendInt(b, r.readAt.UnixMilli(), 10)
	} else {
		b = append(b, '0')
	}
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(j.PauseAfterFailures), 10)
	b = append(b, '|')
	if r.kind != 'm' && len(j.blackouts) > 0 {
		if _, in := j.blackouts.at(r.sched); in {
			return append(b, '1')
		}
	}
	return append(b, '0')
}

// claimRes is the decision for one run.
type claimRes struct {
	status  string // started, decided, waiting, early, refused, or the outcome we recorded
	epoch   string
	fence   int64
	outcome string // decided: the outcome someone else recorded
	replica string // decided: by whom
	place   int64  // waiting: place in the queue
	server  time.Time
	reason  string
	unacked string // started, but too few replicas acknowledged it: why
	slot    int    // started: the run's concurrency slot, 1..concurrency
}

func (s *store) claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []claimReq) ([]claimRes, error) {
	out, err := s.claimOnly(ctx, replica, skew, waiterTTL, reqs)
	if err != nil || s.minAck <= 0 {
		return out, err
	}
	// Fail closed: a start too few replicas acknowledged could vanish in a
	// failover, and another replica start the run again. Take it back
	// before anyone runs it. Decisions that start nothing (skips, misses,
	// queue places) stand: losing them loses no exclusivity.
	var undo []undoReq
	var at []int
	for i, r := range out {
		if r.status == "started" && r.unacked != "" {
			undo = append(undo, undoReq{j: reqs[i].j, id: reqs[i].id, owner: reqs[i].owner, mode: "drop"})
			at = append(at, i)
		}
	}
	if len(undo) == 0 {
		return out, nil
	}
	// If the undo fails, the run still is not started here; the retry finds
	// the replica's own record and asks for acknowledgement again.
	_, uerr := s.undo(ctx, waiterTTL, undo)
	for _, i := range at {
		reason := "the claim was taken back: " + out[i].unacked
		if uerr != nil {
			reason += " (taking it back failed: " + uerr.Error() + ")"
		}
		out[i] = claimRes{status: "retry", epoch: out[i].epoch, fence: out[i].fence, reason: reason}
	}
	return out, nil
}

// claimOnly runs claim.lua; with min_replicas_ack, a start that too few
// replicas acknowledged says why in its unacked field.
func (s *store) claimOnly(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []claimReq) ([]claimRes, error) {
	head := []any{replica, skew.Milliseconds(), waiterTTL.Milliseconds(), newEpoch(), s.claimAhead.Milliseconds(), boolInt(s.fenceCheck)}
	var buf []byte
	calls, groups := batch(s, reqs, func(r *claimReq) *jobState { return r.j }, head, claimFields, func(args []any, r *claimReq) []any {
		buf = r.appendTerms(buf[:0])
		return append(args, r.suffix, r.owner, string(buf))
	})
	replies, acks, err := s.run(ctx, claimScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]claimRes, len(reqs))
	// A lost race answers "decided||outcome|fence|replica" in one string.
	err = scatterRows("claim", replies, groups, 2, 5, func(gi, i int, f []string) {
		res := claimRes{status: f[0], epoch: f[1]}
		switch res.status {
		case "started":
			res.fence, _ = strconv.ParseInt(at(f, 2), 10, 64)
			res.slot, _ = strconv.Atoi(at(f, 4))
			if ms, _ := strconv.ParseInt(at(f, 3), 10, 64); ms > 0 {
				res.server = time.UnixMilli(ms)
			}
			if acks != nil && !s.acked(acks[gi]) {
				res.unacked = s.why(acks[gi])
			}
		case "decided":
			res.outcome, res.replica = at(f, 2), at(f, 4)
			if s.minAck <= 0 {
				// The winner's token, learnt as a heartbeat learns the
				// job's: a failover to a copy older than it is noticed at
				// this replica's next claim, not only the winner's. With
				// min_replicas_ack, a claim that is taken back (unacked)
				// may be lost in a failover without any loss to notice.
				res.fence, _ = strconv.ParseInt(at(f, 3), 10, 64)
			}
		case "waiting":
			res.place, _ = strconv.ParseInt(at(f, 2), 10, 64)
		case "early", "later":
			ms, _ := strconv.ParseInt(at(f, 2), 10, 64)
			res.server = time.UnixMilli(ms)
		case "refused":
			res.reason = at(f, 2)
		}
		out[i] = res
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// admit polls a queued run.
func (s *store) admit(ctx context.Context, r *claimReq, waiterTTL time.Duration, fenceFloor int64) (status string, n int64, err error) {
	j := r.j
	c := call{keys: []string{j.metaKey}, args: []any{r.id, r.owner, j.Lease.Milliseconds(),
		j.Concurrency, waiterTTL.Milliseconds(), strconv.FormatInt(fenceFloor, 10), boolInt(j.Paused)}}
	replies, acks, err := s.run(ctx, admitScript, []call{c})
	if err != nil {
		return "", 0, err
	}
	f := strs(replies[0])
	if len(f) == 0 {
		return "", 0, fmt.Errorf("scheduler: unexpected admit reply %v", replies[0])
	}
	n, _ = strconv.ParseInt(at(f, 1), 10, 64)
	if f[0] == "started" {
		r.slot, _ = strconv.Atoi(at(f, 2))
	}
	if f[0] == "started" && acks != nil && !s.acked(acks[0]) {
		// As for a claim: an admission too few replicas hold is taken back,
		// and the run keeps its place in the queue.
		res, err := s.undo(ctx, waiterTTL, []undoReq{{j: j, id: r.id, owner: r.owner, mode: "requeue", maxWait: r.maxWait}})
		if err != nil {
			return "", 0, err
		}
		if res[0] != "requeued" {
			return "lost", 0, nil
		}
		return "waiting", 1, nil
	}
	return f[0], n, nil
}

// renewReq is one run's lease renewal.
type renewReq struct {
	j         *jobState
	id, owner string
}

// renew renews leases; the answer per run is "ok", "lost" or "replaced".
func (s *store) renew(ctx context.Context, reqs []renewReq) ([]string, error) {
	calls, groups := batch(s, reqs, func(r *renewReq) *jobState { return r.j }, nil, 3, func(args []any, r *renewReq) []any {
		return append(args, r.id, r.owner, r.j.Lease.Milliseconds())
	})
	replies, acks, err := s.run(ctx, renewScript, calls)
	if err != nil {
		return nil, err
	}
	// A renewal a failover could lose does not extend the lease: the
	// holder's deadline must not outrun the one a promoted replica would
	// enforce.
	return scatter("renew", replies, groups, len(reqs), func(gi int, v string) string {
		if v == "ok" && acks != nil && !s.acked(acks[gi]) {
			return "unacked"
		}
		return v
	})
}

// attempt issues the fencing token of a run's next attempt; 0 means the run
// is no longer held.
func (s *store) attempt(ctx context.Context, j *jobState, id, owner string, n int, fenceFloor int64) (int64, error) {
	v, err := attemptScript.Run(ctx, s.c, []string{j.metaKey}, id, owner, n, strconv.FormatInt(fenceFloor, 10)).Result()
	if err != nil {
		return 0, err
	}
	switch t := v.(type) {
	case int64:
		return t, nil
	case string:
		return strconv.ParseInt(t, 10, 64)
	}
	return 0, fmt.Errorf("scheduler: unexpected attempt reply %v", v)
}

// complete closes a run; the answer is "ok", "closed" or "lost".
// completeReq closes one run.
type completeReq struct {
	r        *claimReq
	replica  string
	outcome  Outcome
	attempts int
	errText  string
	output   string
	traceID  string // the run span's, "" without tracing
}

// completeFields is the number of ARGV fields per run in complete.lua.
const completeFields = 8

// entry is the history record of a run as its holder knows it: a JSON
// object of strings without its closing brace; complete.lua adds decision,
// fence, started and finished, which the server holds.
func (c completeReq) entry() string {
	r := c.r
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
	}{r.id, r.j.Name, recordKind(r.kind), strconv.FormatInt(r.sched.UnixMilli(), 10), string(c.outcome), c.replica,
		strconv.Itoa(c.attempts), c.errText, c.output, c.traceID, slotText(r.slot)})
	return string(b[:len(b)-1])
}

// recordKind is how a run record spells a claim kind.
func recordKind(kind byte) string {
	if kind == 'x' {
		return "s"
	}
	return string(kind)
}

// complete closes runs, grouped into as few script calls as the store
// allows; the answer per run is "ok", "closed" or "lost".
// closeUnacked is complete's answer for a close Redis applied but too few
// replicas acknowledged (min_replicas_ack): the holder sends it again.
const closeUnacked = "unacked"

func (s *store) complete(ctx context.Context, reqs []completeReq) ([]string, error) {
	calls, groups := batch(s, reqs, func(c *completeReq) *jobState { return c.r.j }, nil, completeFields, func(args []any, c *completeReq) []any {
		return append(args, c.r.id, c.r.owner, string(c.outcome), c.attempts, c.errText,
			c.entry(), c.r.j.retention(c.r.sched).Milliseconds(), c.r.j.HistoryLimit)
	})
	// With min_replicas_ack, a close counts once replicas have it: one the
	// primary alone took can be lost in a failover, and the run's slot then
	// stays held until its lease runs out.
	replies, acks, err := s.run(ctx, completeScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter("complete", replies, groups, len(reqs), func(gi int, v string) string {
		if acks != nil && !s.acked(acks[gi]) && (v == "ok" || v == "closed") {
			return closeUnacked
		}
		return v
	})
}

// syncReq is one job's heartbeat.
type syncReq struct {
	j     *jobState
	known string
	fence int64 // the highest fencing token the replica has seen
}

// syncRes is what a heartbeat learns about a job.
type syncRes struct {
	epoch  string
	paused bool
	last   time.Time // latest scheduled instant decided; zero if none
	floor  time.Time
	fence  int64
	stats  jobStats
	manual []string // pending manual run ids
}

func (s *store) sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []syncReq) ([]syncRes, error) {
	head := []any{skew.Milliseconds(), newEpoch(), manualTTL.Milliseconds(), s.claimAhead.Milliseconds()}
	calls, groups := batch(s, reqs, func(r *syncReq) *jobState { return r.j }, head, 5, func(args []any, r *syncReq) []any {
		seen := "0"
		if s.fenceCheck {
			seen = strconv.FormatInt(r.fence, 10)
		}
		return append(args, r.known, r.j.manualRetention().Milliseconds(), r.j.HistoryLimit, replica, seen)
	})
	replies, err := s.exec(ctx, syncScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]syncRes, len(reqs))
	err = scatterRows("sync", replies, groups, 6, 0, func(_, i int, f []string) {
		r := syncRes{epoch: f[0], paused: f[1] == "1", stats: parseStats(f[5]), manual: f[6:]}
		if ms, _ := strconv.ParseInt(f[2], 10, 64); ms > 0 {
			r.last = time.UnixMilli(ms)
		}
		if ms, _ := strconv.ParseInt(f[3], 10, 64); ms > 0 {
			r.floor = time.UnixMilli(ms)
		}
		r.fence, _ = strconv.ParseInt(f[4], 10, 64)
		out[i] = r
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

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
