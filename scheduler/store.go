package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// store keeps the cluster's shared state in one Redis deployment:
// standalone, Sentinel (a failover client) or Cluster. Every operation is
// one script per job (or per batch of runs), one round trip.
type store struct {
	redisConn // the transport: the scripts run through it
	prefix    string
	pools     *poolPlace // the table's pools, for status (not for keys)

	// claimAhead is how long before its instant a run may be claimed.
	claimAhead time.Duration
	// skew is the max clock skew (a job state created by a trigger places
	// its data-loss floor with it).
	skew time.Duration
	// fenceCheck: the scripts compare the highest fencing token a replica
	// has seen with the store's last (a store below it lost writes). Off
	// for a Redlock master: the token a replica saw may be another's.
	fenceCheck bool
	// born: the store began empty with this process and cannot lose data
	// while it runs (WithEphemeralStore): a job without state is new.
	born bool
	// backfillSeen is the list of jobs with a backfill the last heartbeat
	// read (manualHints, in its round trip): see backfill.go.
	backfillSeen atomic.Pointer[[]backfillHint]
}

// backendConfig is what a store reads of the scheduler's options and the
// Store's (config.backend).
type backendConfig struct {
	prefix         string
	pools          *poolPlace
	skew           time.Duration
	maxAhead       time.Duration
	minAck         int
	ackTimeout     time.Duration
	redlockTimeout time.Duration
	ephemeral      bool
}

func newStore(c redis.UniversalClient, cfg backendConfig) (*store, error) {
	conn, err := newRedisConn(c, cfg.minAck, cfg.ackTimeout)
	if err != nil {
		return nil, err
	}
	return &store{redisConn: conn, prefix: cfg.prefix, pools: cfg.pools, claimAhead: cfg.maxAhead, skew: cfg.skew, fenceCheck: true, born: cfg.ephemeral}, nil
}

func (s *store) metaKey(job string) string { return s.key(job, "meta") }

// key is one of job's keys: the job's name alone says where its state is
// (pool.go), whatever the table.
func (s *store) key(job, kind string) string {
	return s.prefix + ":{" + job + "}:" + kind
}
func (s *store) placePools(jobs []poolJob) {
	if s.pools == nil { // a store made without a Store (tests)
		s.pools = &poolPlace{}
	}
	s.pools.set(jobs)
}

func (s *store) undo(ctx context.Context, waiterTTL time.Duration, reqs []undoReq) ([]undoAnswer, error) {
	calls, groups := batch(s, reqs, func(r *undoReq) *jobSpec { return r.job }, nil, undoFields, func(args []any, r *undoReq) []any {
		return appendUndo(args, r, waiterTTL)
	})
	replies, err := s.exec(ctx, undoScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter[undoAnswer]("undo", replies, groups, len(reqs), nil)
}

// handBack is undo.lua's drop and the job's manual hint, in one round trip.
func (s *store) handBack(ctx context.Context, r *storeClaim, waiterTTL time.Duration) (bool, error) {
	u := undoReq{job: r.job, id: r.id, owner: r.owner, mode: undoDrop, maxWait: r.maxWait}
	v, err := s.execHint(ctx, undoScript, call{keys: []string{r.job.MetaKey}, args: appendUndo(nil, &u, waiterTTL)}, s.hintKey(), r.job.Name)
	if err != nil {
		return false, err
	}
	if r.pool != "" { // a pool slot held on Redis Cluster
		s.freePools(ctx, []call{s.poolCall("release", r.pool, r.poolMember, r.owner, 0, 0)})
	}
	return undoAnswer(at(strs(v), 0)) == undoDropped, nil
}

func (s *store) claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []storeClaim) ([]claimRes, error) {
	ptrs := make([]*storeClaim, len(reqs))
	for i := range reqs {
		ptrs[i] = &reqs[i]
	}
	if err := s.takePools(ctx, ptrs, func(r *storeClaim) string { return r.id }); err != nil {
		return nil, err
	}
	out, err := s.claimAcked(ctx, replica, skew, waiterTTL, reqs)
	if err == nil && s.cluster {
		s.settlePools(ctx, reqs, out)
	}
	return out, err
}

// claimAcked is claimOnly, then, with min_replicas_ack, takes back the
// starts too few replicas acknowledged.
func (s *store) claimAcked(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []storeClaim) ([]claimRes, error) {
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
			undo = append(undo, undoReq{job: reqs[i].job, id: reqs[i].id, owner: reqs[i].owner, mode: undoDrop})
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
func (s *store) claimOnly(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []storeClaim) ([]claimRes, error) {
	head := claimHeadArgs(replica, skew, waiterTTL, s.claimAhead, s.fenceCheck, s.born)
	var buf []byte
	calls, groups := batch(s, reqs, func(r *storeClaim) *jobSpec { return r.job }, head, claimFields, func(args []any, r *storeClaim) []any {
		return appendClaim(args, r, &buf)
	})
	replies, acks, err := s.run(ctx, claimScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]claimRes, len(reqs))
	err = scatterRows("claim", replies, groups, claimLeast, claimPacked, func(gi, i int, f []string) {
		res := decodeClaim(f, s.minAck > 0)
		if res.status == answerStarted && acks != nil && !acks[gi].ok() {
			res.unacked = acks[gi].why()
		}
		out[i] = res
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// admit polls rs, queued runs of one job, in one call. On Redis Cluster
// each pooled run's pool slot is taken first (pool.lua, under admitMember):
// a run that started keeps it, the others give it back.
func (s *store) admit(ctx context.Context, rs []*storeClaim, waiterTTL time.Duration, fenceFloor int64) ([]admitRes, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	if err := s.takePools(ctx, rs, func(r *storeClaim) string { return admitMember(r.id) }); err != nil {
		return nil, err
	}
	out, err := s.admitOnly(ctx, rs, waiterTTL, fenceFloor)
	var free []call
	for i, r := range rs {
		switch {
		case r.pgrant != '1' || err != nil:
			// An answer lost may have been a start: the hold stays (the
			// next poll takes it again), or ends with its lease.
		case out[i].status == answerStarted:
			r.pool, r.poolMember = r.job.Pool, admitMember(r.id)
		default:
			free = append(free, s.poolCall("release", r.job.Pool, admitMember(r.id), r.owner, 0, 0))
		}
	}
	s.freePools(ctx, free)
	return out, err
}

func (s *store) admitOnly(ctx context.Context, rs []*storeClaim, waiterTTL time.Duration, fenceFloor int64) ([]admitRes, error) {
	replies, acks, err := s.run(ctx, admitScript, []call{admitCall(rs, waiterTTL, fenceFloor)})
	if err != nil {
		return nil, err
	}
	rows, ok := replies[0].([]any)
	if !ok || len(rows) != len(rs) {
		return nil, fmt.Errorf("scheduler: admit answered %v for %d runs", replies[0], len(rs))
	}
	out := make([]admitRes, len(rs))
	var undo []undoReq
	var at []int
	for i, row := range rows {
		status, n, slot, err := decodeAdmit(row)
		if err != nil {
			return nil, err
		}
		if status == answerStarted {
			rs[i].slot = slot
			if acks != nil && !acks[0].ok() {
				// As for a claim: an admission too few replicas hold is
				// taken back, and the run keeps its place in the queue.
				undo = append(undo, undoReq{job: rs[i].job, id: rs[i].id, owner: rs[i].owner, mode: undoRequeue, maxWait: rs[i].maxWait})
				at = append(at, i)
			}
		}
		out[i] = admitRes{status, n}
	}
	if len(undo) > 0 {
		res, err := s.undo(ctx, waiterTTL, undo)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = admitRes{answerWaiting, 1}
			if res[k] != undoRequeued {
				out[i] = admitRes{status: answerLost}
			}
		}
	}
	return out, nil
}

// renew renews leases; the answer per run is leaseOK, leaseLost,
// leaseReplaced or leaseUnacked.
func (s *store) renew(ctx context.Context, reqs []renewReq) ([]leaseAnswer, error) {
	calls, groups := batch(s, reqs, func(r *renewReq) *jobSpec { return r.job }, nil, renewFields, appendRenew)
	replies, acks, err := s.run(ctx, renewScript, calls)
	if err != nil {
		return nil, err
	}
	// A renewal a failover could lose does not extend the lease: the
	// holder's deadline must not outrun the one a promoted replica would
	// enforce.
	out, err := scatter("renew", replies, groups, len(reqs), func(gi int, v leaseAnswer) leaseAnswer {
		if v == leaseOK && acks != nil && !acks[gi].ok() {
			return leaseUnacked
		}
		return v
	})
	if err != nil {
		return nil, err
	}
	return out, s.renewPools(ctx, reqs, out)
}

// renewPools renews, on Redis Cluster, the pool slots of the runs whose job
// slot was just renewed: a renewal counts only if both were. A pool slot
// found gone is a lost lease.
func (s *store) renewPools(ctx context.Context, reqs []renewReq, out []leaseAnswer) error {
	var calls []call
	var idx []int
	for i, r := range reqs {
		if r.pool != "" && out[i] == leaseOK {
			calls = append(calls, s.poolCall("renew", r.pool, r.member, r.owner, 0, r.job.Lease))
			idx = append(idx, i)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	replies, err := s.exec(ctx, poolScript, calls)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if v, _ := replies[k].(string); v != poolOK {
			out[i] = leaseLost
		}
	}
	return nil
}

// attempt issues the fencing token of a run's next attempt; 0 means the run
// is no longer held.
func (s *store) attempt(ctx context.Context, j *jobSpec, id, owner string, n int, fenceFloor int64) (int64, error) {
	v, err := s.exec(ctx, attemptScript, []call{attemptCall(j, id, owner, n, fenceFloor)})
	if err != nil {
		return 0, err
	}
	return decodeAttempt(v[0])
}

// complete closes runs, grouped into as few script calls as the store
// allows; the answer per run is closeOK, closeClosed, closeLost or
// closeUnacked.
func (s *store) complete(ctx context.Context, reqs []completeReq) ([]closeAnswer, error) {
	calls, groups := batch(s, reqs, func(c *completeReq) *jobSpec { return c.r.job }, nil, completeFields, appendComplete)
	// With min_replicas_ack, a close counts once replicas have it: one the
	// primary alone took can be lost in a failover, and the run's slot then
	// stays held until its lease runs out.
	replies, acks, err := s.run(ctx, completeScript, calls)
	if err != nil {
		return nil, err
	}
	var free []call
	for _, c := range reqs {
		if c.r.pool != "" { // a pool slot held on Redis Cluster
			free = append(free, s.poolCall("release", c.r.pool, c.r.poolMember, c.r.owner, 0, 0))
		}
	}
	s.freePools(ctx, free)
	out, err := scatter("complete", replies, groups, len(reqs), func(gi int, v closeAnswer) closeAnswer {
		v, stats := closeStats(v)
		if acks != nil && !acks[gi].ok() && (v == closeOK || v == closeClosed) {
			return closeUnacked
		}
		return v + stats
	})
	if err != nil {
		return nil, err
	}
	for i, v := range out {
		var stats closeAnswer
		out[i], stats = closeStats(v)
		if stats == "" || !s.fenceCheck {
			// A Redlock master's statistics are one of several: the
			// replica merges them at its heartbeat.
			continue
		}
		at, raw, _ := strings.Cut(string(stats[1:]), "|")
		if us, err := strconv.ParseInt(at, 10, 64); err == nil {
			reqs[i].statsRaw, reqs[i].statsAt = raw, us
		}
	}
	return out, nil
}

// closeStats splits complete.lua's answer "ok|<µs>|<stats>" into the answer
// and the rest ("|<µs>|<stats>").
func closeStats(v closeAnswer) (closeAnswer, closeAnswer) {
	if i := strings.IndexByte(string(v), '|'); i >= 0 {
		return v[:i], v[i:]
	}
	return v, ""
}

func (s *store) sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []syncReq) ([]syncRes, error) {
	calls, groups := batch(s, reqs, func(r *syncReq) *jobSpec { return r.job }, syncHeadArgs(skew, manualTTL, s.claimAhead, s.born), syncFields, func(args []any, r *syncReq) []any {
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
