package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// transport runs scripts on one Redis deployment: plain calls in, their
// replies (and, with min_replicas_ack, the replicas' acknowledgements)
// out. It owns the pipelines, the NOSCRIPT retry and WAIT; the store above
// it encodes and decodes (protocol.go), the Redlock combinator above that
// runs one store per master (redlock.go).
type transport interface {
	// Preload loads every script.
	Preload(ctx context.Context) error
	// exec runs sc once per call, all calls pipelined in one round trip
	// (per cluster node).
	exec(ctx context.Context, sc *redis.Script, calls []call) ([]any, error)
	// run is exec, followed, when min_replicas_ack is set, by WAIT on
	// every connection that ran a call; acks[i] is call i's (nil without
	// WAIT).
	run(ctx context.Context, sc *redis.Script, calls []call) ([]any, []ack, error)
	// execHint runs one call and adds member to the sorted set HintKey,
	// scored with this replica's clock, in one round trip. The hint is only
	// a hint: its own error is not reported.
	execHint(ctx context.Context, sc *redis.Script, c call, hintKey, member string) (any, error)
}

var _ transport = redisConn{}

// redisConn is the transport over one go-redis client: standalone,
// Sentinel (a failover client) or Cluster.
type redisConn struct {
	c       redis.UniversalClient
	cluster bool // keys of different jobs must not share a script call

	// MinAck > 0: calls sent with run count only once that many replicas
	// acknowledged them (WAIT), within AckTimeout.
	minAck     int
	ackTimeout time.Duration
}

func NewRedisConn(c redis.UniversalClient, minAck int, ackTimeout time.Duration) (redisConn, error) {
	t := redisConn{c: c, minAck: minAck, ackTimeout: ackTimeout}
	switch c.(type) {
	case *redis.ClusterClient:
		t.cluster = true
	case *redis.Client:
	default:
		if minAck > 0 {
			// WAIT counts the writes of its own connection: only a client
			// whose pipelines stay on one connection can ask it.
			return t, fmt.Errorf("scheduler: WithMinReplicasAck needs a *redis.Client or *redis.ClusterClient, not %T", c)
		}
	}
	return t, nil
}

// Preload loads every script in one pipeline, so the first claim after a
// start is one round trip too (EVALSHA would otherwise meet NOSCRIPT once).
// It sends SCRIPT LOAD itself: redis.Script.Load on a pipeliner would read
// the reply before it exists and store an empty hash in the shared Script.
func (t redisConn) Preload(ctx context.Context) error {
	load := func(p redis.Pipeliner) error {
		for _, src := range sources {
			p.ScriptLoad(ctx, src)
		}
		return nil
	}
	if cc, ok := t.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			_, err := m.Pipelined(ctx, load)
			return err
		})
	}
	_, err := t.c.Pipelined(ctx, load)
	return err
}

// MaxBatch bounds the runs one script call decides, so no single call holds
// Redis for long.
const MaxBatch = 64

// call is one script invocation.
type call struct {
	keys []string
	Args []any
	// keyArgs, when set, are keys as the command sends them (references
	// into an ArgBuf): go-redis would box each key string, an allocation
	// per run of a batch.
	keyArgs []any
}

// scripter is a client or a pipeline that runs scripts.
type scripter interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// evalSha queues (or, on a client, runs) c as EVALSHA of sc on p.
func (c *call) evalSha(ctx context.Context, p scripter, sc *redis.Script) *redis.Cmd {
	if c.keyArgs == nil {
		return sc.EvalSha(ctx, p, c.keys, c.Args...)
	}
	args := make([]any, 0, 3+len(c.keyArgs)+len(c.Args))
	args = append(args, "evalsha", sc.Hash(), len(c.keyArgs))
	args = append(append(args, c.keyArgs...), c.Args...)
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3) // Cluster finds the slot by it, as go-redis' EvalSha sets it
	_ = p.Process(ctx, cmd)
	return cmd
}

// evalPipelined runs sc for the calls idx in one pipeline on c, with the
// commands extra adds after them (WAIT, a hint); call i's reply goes to
// out[i], and what extra returns is told which calls its pipeline
// answered. EVALSHA is tried first; a NOSCRIPT reply (after SCRIPT FLUSH or
// a restart) loads the script and sends the calls that met it again, once.
func evalPipelined(ctx context.Context, c redis.Cmdable, sc *redis.Script, calls []call, idx []int, out []any,
	extra func(p redis.Pipeliner) func(answered []int)) error {
	pending := idx
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(pending))
		var after func([]int)
		// Each command's own error is checked below; the pipeline's is the
		// first of them.
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, i := range pending {
				cmds[j] = calls[i].evalSha(ctx, p, sc)
			}
			if extra != nil {
				after = extra(p)
			}
			return nil
		})
		var again, answered []int
		for j, i := range pending {
			v, err := cmds[j].Result()
			switch {
			case err == nil:
				out[i] = v
				if after != nil {
					answered = append(answered, i)
				}
			case redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0:
				again = append(again, i)
			default:
				return err
			}
		}
		if after != nil {
			after(answered)
		}
		if len(again) == 0 {
			return nil
		}
		if err := sc.Load(ctx, c).Err(); err != nil {
			return err
		}
		pending = again
	}
}

// all is the indexes of n calls.
func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func (t redisConn) exec(ctx context.Context, sc *redis.Script, calls []call) ([]any, error) {
	if len(calls) == 1 {
		// Script.Run: EVALSHA, and EVAL once it meets NOSCRIPT.
		c := &calls[0]
		cmd := c.evalSha(ctx, t.c, sc)
		if err := cmd.Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
			cmd = sc.Eval(ctx, t.c, c.keys, c.Args...)
		}
		v, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		return []any{v}, nil
	}
	out := make([]any, len(calls))
	if err := evalPipelined(ctx, t.c, sc, calls, all(len(calls)), out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// ack is what WAIT said after a call: how many replicas acknowledged the
// connection's writes (need: how many were asked for), or why it could
// not say.
type ack struct {
	n, need int64
	err     error
}

// ok reports whether enough replicas acknowledged the call.
func (a ack) ok() bool { return a.err == nil && a.n >= a.need }

// why describes an ack that falls short, for logs and records.
func (a ack) why() string {
	if a.err != nil {
		return "WAIT failed: " + a.err.Error()
	}
	return fmt.Sprintf("%d of the %d replicas required (min_replicas_ack) acknowledged it", a.n, a.need)
}

func (t redisConn) run(ctx context.Context, sc *redis.Script, calls []call) ([]any, []ack, error) {
	if t.minAck <= 0 {
		out, err := t.exec(ctx, sc, calls)
		return out, nil, err
	}
	out := make([]any, len(calls))
	acks := make([]ack, len(calls))
	// WAIT counts the writes made on its own connection before it, so each
	// call and its WAIT travel in one pipeline on one connection — the
	// primary's on a single Redis, the slot's master's on Cluster.
	var nodes []*redis.Client
	byNode := map[*redis.Client][]int{}
	switch c := t.c.(type) {
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
		wg.Go(func() { errs[k] = t.execWait(ctx, n, sc, calls, byNode[n], out, acks) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if t.cluster && isMoved(err) {
			t.c.(*redis.ClusterClient).ReloadState(ctx)
		}
		return nil, nil, err
	}
	return out, acks, nil
}

// execWait runs calls idx on one node in one pipeline ending with WAIT.
func (t redisConn) execWait(ctx context.Context, node *redis.Client, sc *redis.Script, calls []call, idx []int, out []any, acks []ack) error {
	// WAIT must answer before the call's deadline and the client's read
	// timeout (a pipeline reads with the client's, not WAIT's own).
	timeout := t.ackTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)/2)
	}
	if rt := node.Options().ReadTimeout; rt > 0 {
		timeout = min(timeout, rt/2)
	}
	ms := max(timeout.Milliseconds(), 1) // WAIT n 0 would block for ever
	return evalPipelined(ctx, node, sc, calls, idx, out, func(p redis.Pipeliner) func([]int) {
		wait := p.Do(ctx, "wait", t.minAck, ms)
		return func(answered []int) {
			n, werr := wait.Int64()
			for _, i := range answered {
				acks[i] = ack{n: n, need: int64(t.minAck), err: werr}
			}
		}
	})
}

func (t redisConn) execHint(ctx context.Context, sc *redis.Script, c call, hintKey, member string) (any, error) {
	out := make([]any, 1)
	err := evalPipelined(ctx, t.c, sc, []call{c}, []int{0}, out, func(p redis.Pipeliner) func([]int) {
		p.ZAdd(ctx, hintKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: member})
		return nil
	})
	return out[0], err
}

func isMoved(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "CLUSTERDOWN")
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
//
// A packed row's fields are split into one slice that the next row reuses:
// fn must not keep f (a lost race is most of a replica's claims, and each
// would otherwise make one).
func scatterRows(op string, replies []any, groups [][]int, least, packed int, fn func(gi, i int, f []string)) error {
	var scratch []string
	for gi, g := range groups {
		rows, ok := replies[gi].([]any)
		if !ok || len(rows) != len(g) {
			return fmt.Errorf("scheduler: unexpected %s reply %v", op, replies[gi])
		}
		for k, i := range g {
			var f []string
			if row, ok := rows[k].(string); ok && packed > 0 {
				scratch = splitInto(scratch[:0], row, packed)
				f = scratch
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

// splitInto appends to dst the fields of s separated by '|', at most n (the
// last one the rest), as strings.SplitN(s, "|", n) returns them.
func splitInto(dst []string, s string, n int) []string {
	for range n - 1 {
		f, rest, ok := strings.Cut(s, "|")
		if !ok {
			break
		}
		dst = append(dst, f)
		s = rest
	}
	return append(dst, s)
}

// batch builds the script calls for runs of reqs: each call carries head
// (the script's own arguments) and then, for each run, its job's meta key
// (job gives the job) and the PerRun arguments add appends. It returns the
// calls and, per call, the indexes of the runs it carries (see group).
func batch[T any](s *Redis, reqs []T, job func(*T) *JobSpec, head []any, perRun int, add func(args []any, r *T) []any) ([]call, [][]int) {
	groups := group(s, len(reqs), func(i int) string { return job(&reqs[i]).Name })
	calls := make([]call, len(groups))
	for gi, g := range groups {
		c := call{keys: make([]string, 0, len(g)), Args: make([]any, 0, len(head)+perRun*len(g))}
		c.Args = append(c.Args, head...)
		for _, i := range g {
			r := &reqs[i]
			c.keys = append(c.keys, job(r).MetaKey)
			c.Args = add(c.Args, r)
		}
		calls[gi] = c
	}
	return calls, groups
}

// group splits n runs into script calls: all together (in chunks) on a
// single Redis, one call per job (named by job) on Cluster, where a script
// may only touch one hash slot.
func group(s *Redis, n int, job func(i int) string) [][]int {
	var groups [][]int
	if !s.cluster {
		for i := 0; i < n; i += MaxBatch {
			g := make([]int, 0, min(MaxBatch, n-i))
			for j := i; j < n && j < i+MaxBatch; j++ {
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

// SentNothing reports whether a call that failed with err certainly ran no
// script: every part of it failed before its request went out (no
// connection could be made, or the client had none to give). Anything else
// — a timeout, a reset connection, a Redlock quorum short of answers — may
// have lost the answer of a script that ran.
func SentNothing(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case interface{ Unwrap() []error }: // one pipeline per node, joined
		errs := e.Unwrap()
		for _, x := range errs {
			if !SentNothing(x) {
				return false
			}
		}
		return len(errs) > 0
	case *net.OpError:
		return e.Op == "dial"
	}
	if err == redis.ErrPoolTimeout || err == redis.ErrClosed {
		return true
	}
	return SentNothing(errors.Unwrap(err))
}
