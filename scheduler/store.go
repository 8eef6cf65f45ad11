package scheduler

import (
	"context"
	"embed"
	"errors"
	"fmt"
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

func (s *store) undo(ctx context.Context, waiterTTL time.Duration, reqs []undoReq) ([]undoAnswer, error) {
	calls, groups := batch(s, reqs, func(r *undoReq) *jobState { return r.j }, nil, undoFields, func(args []any, r *undoReq) []any {
		return appendUndo(args, r, waiterTTL)
	})
	replies, err := s.exec(ctx, undoScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter[undoAnswer]("undo", replies, groups, len(reqs), nil)
}

// handBack is undo.lua's drop and the job's manual hint, in one round trip.
func (s *store) handBack(ctx context.Context, r *claimReq, waiterTTL time.Duration) (bool, error) {
	u := undoReq{j: r.j, id: r.id, owner: r.owner, mode: undoDrop, maxWait: r.maxWait}
	v, err := s.scriptAndHint(ctx, undoScript, call{keys: []string{r.j.metaKey}, args: appendUndo(nil, &u, waiterTTL)}, r.j.Name)
	if err != nil {
		return false, err
	}
	return undoAnswer(at(strs(v), 0)) == undoDropped, nil
}

// scatter puts the answers of batched script calls (one string per run)
// back in request order. adjust, when set, may rewrite call gi's answer v.
func scatter[T ~string](op string, replies []any, groups [][]int, n int, adjust func(gi int, v T) T) ([]T, error) {
	out := make([]T, n)
	for gi, g := range groups {
		f := strs(replies[gi])
		if len(f) != len(g) {
			return nil, fmt.Errorf("scheduler: unexpected %s reply %v", op, replies[gi])
		}
		for k, i := range g {
			out[i] = T(f[k])
			if adjust != nil {
				out[i] = adjust(gi, out[i])
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
		if r.status == answerStarted && r.unacked != "" {
			undo = append(undo, undoReq{j: reqs[i].j, id: reqs[i].id, owner: reqs[i].owner, mode: undoDrop})
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
		out[i] = claimRes{status: answerRetry, epoch: out[i].epoch, fence: out[i].fence, reason: reason}
	}
	return out, nil
}

// claimOnly runs claim.lua; with min_replicas_ack, a start that too few
// replicas acknowledged says why in its unacked field.
func (s *store) claimOnly(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []claimReq) ([]claimRes, error) {
	head := claimHeadArgs(replica, skew, waiterTTL, s.claimAhead, s.fenceCheck)
	var buf []byte
	calls, groups := batch(s, reqs, func(r *claimReq) *jobState { return r.j }, head, claimFields, func(args []any, r *claimReq) []any {
		return appendClaim(args, r, &buf)
	})
	replies, acks, err := s.run(ctx, claimScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]claimRes, len(reqs))
	err = scatterRows("claim", replies, groups, claimLeast, claimPacked, func(gi, i int, f []string) {
		res := decodeClaim(f, s.minAck > 0)
		if res.status == answerStarted && acks != nil && !s.acked(acks[gi]) {
			res.unacked = s.why(acks[gi])
		}
		out[i] = res
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// admit polls a queued run.
func (s *store) admit(ctx context.Context, r *claimReq, waiterTTL time.Duration, fenceFloor int64) (status answer, n int64, err error) {
	replies, acks, err := s.run(ctx, admitScript, []call{admitCall(r, waiterTTL, fenceFloor)})
	if err != nil {
		return "", 0, err
	}
	status, n, slot, err := decodeAdmit(replies[0])
	if err != nil {
		return "", 0, err
	}
	if status == answerStarted {
		r.slot = slot
	}
	if status == answerStarted && acks != nil && !s.acked(acks[0]) {
		// As for a claim: an admission too few replicas hold is taken back,
		// and the run keeps its place in the queue.
		res, err := s.undo(ctx, waiterTTL, []undoReq{{j: r.j, id: r.id, owner: r.owner, mode: undoRequeue, maxWait: r.maxWait}})
		if err != nil {
			return "", 0, err
		}
		if res[0] != undoRequeued {
			return answerLost, 0, nil
		}
		return answerWaiting, 1, nil
	}
	return status, n, nil
}

// renew renews leases; the answer per run is leaseOK, leaseLost,
// leaseReplaced or leaseUnacked.
func (s *store) renew(ctx context.Context, reqs []renewReq) ([]leaseAnswer, error) {
	calls, groups := batch(s, reqs, func(r *renewReq) *jobState { return r.j }, nil, renewFields, appendRenew)
	replies, acks, err := s.run(ctx, renewScript, calls)
	if err != nil {
		return nil, err
	}
	// A renewal a failover could lose does not extend the lease: the
	// holder's deadline must not outrun the one a promoted replica would
	// enforce.
	return scatter("renew", replies, groups, len(reqs), func(gi int, v leaseAnswer) leaseAnswer {
		if v == leaseOK && acks != nil && !s.acked(acks[gi]) {
			return leaseUnacked
		}
		return v
	})
}

// attempt issues the fencing token of a run's next attempt; 0 means the run
// is no longer held.
func (s *store) attempt(ctx context.Context, j *jobState, id, owner string, n int, fenceFloor int64) (int64, error) {
	c := attemptCall(j, id, owner, n, fenceFloor)
	v, err := attemptScript.Run(ctx, s.c, c.keys, c.args...).Result()
	if err != nil {
		return 0, err
	}
	return decodeAttempt(v)
}

// complete closes runs, grouped into as few script calls as the store
// allows; the answer per run is closeOK, closeClosed, closeLost or
// closeUnacked.
func (s *store) complete(ctx context.Context, reqs []completeReq) ([]closeAnswer, error) {
	calls, groups := batch(s, reqs, func(c *completeReq) *jobState { return c.r.j }, nil, completeFields, appendComplete)
	// With min_replicas_ack, a close counts once replicas have it: one the
	// primary alone took can be lost in a failover, and the run's slot then
	// stays held until its lease runs out.
	replies, acks, err := s.run(ctx, completeScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter("complete", replies, groups, len(reqs), func(gi int, v closeAnswer) closeAnswer {
		if acks != nil && !s.acked(acks[gi]) && (v == closeOK || v == closeClosed) {
			return closeUnacked
		}
		return v
	})
}

func (s *store) sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []syncReq) ([]syncRes, error) {
	calls, groups := batch(s, reqs, func(r *syncReq) *jobState { return r.j }, syncHeadArgs(skew, manualTTL, s.claimAhead), syncFields, func(args []any, r *syncReq) []any {
		return appendSync(args, r, replica, s.fenceCheck)
	})
	replies, err := s.exec(ctx, syncScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]syncRes, len(reqs))
	err = scatterRows("sync", replies, groups, syncLeast, 0, func(_, i int, f []string) { out[i] = decodeSync(f) })
	if err != nil {
		return nil, err
	}
	return out, nil
}
