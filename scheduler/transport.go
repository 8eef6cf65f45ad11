package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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

// scriptAndHint runs one script call and adds job to the manual hints (so
// that every replica looks at the job at its next heartbeat) in one round
// trip. A NOSCRIPT answer loads the script and sends both again. The hint
// is only a hint: its own error is not reported.
func (s *store) scriptAndHint(ctx context.Context, sc *redis.Script, c call, job string) (any, error) {
	for attempt := 0; ; attempt++ {
		var cmd *redis.Cmd
		_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = sc.EvalSha(ctx, p, c.keys, c.args...)
			p.ZAdd(ctx, s.hintKey(), redis.Z{Score: float64(time.Now().UnixMilli()), Member: job})
			return nil
		})
		v, err := cmd.Result()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0 {
			if err := sc.Load(ctx, s.c).Err(); err != nil {
				return nil, err
			}
			continue
		}
		return v, err
	}
}
