package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps the cluster's shared state in one Redis deployment:
// standalone, Sentinel (a failover client) or Cluster. Every operation is
// one script per job (or per batch of runs), one round trip.
type Redis struct {
	redisConn // the transport: the scripts run through it
	Prefix    string
	pools     *PoolPlace // the table's pools, for status (not for keys)

	// ClaimAhead is how long before its instant a run may be claimed.
	ClaimAhead time.Duration
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
	// read (ManualHints, in its round trip): see backfill.go.
	backfillSeen atomic.Pointer[[]BackfillHint]
}

// BackendConfig is what a store reads of the scheduler's options and the
// Store's (config.backend).
type BackendConfig struct {
	Prefix         string
	Pools          *PoolPlace
	Skew           time.Duration
	MaxAhead       time.Duration
	MinAck         int
	AckTimeout     time.Duration
	RedlockTimeout time.Duration
	Ephemeral      bool
}

func NewRedis(c redis.UniversalClient, cfg BackendConfig) (*Redis, error) {
	conn, err := NewRedisConn(c, cfg.MinAck, cfg.AckTimeout)
	if err != nil {
		return nil, err
	}
	return &Redis{redisConn: conn, Prefix: cfg.Prefix, pools: cfg.Pools, ClaimAhead: cfg.MaxAhead, skew: cfg.Skew, fenceCheck: true, born: cfg.Ephemeral}, nil
}

func (s *Redis) MetaKey(job string) string { return s.Key(job, "meta") }

// Key is one of job's keys: the job's name alone says where its state is
// (pool.go), whatever the table.
func (s *Redis) Key(job, kind string) string {
	return s.Prefix + ":{" + job + "}:" + kind
}
func (s *Redis) PlacePools(jobs []PoolJob) {
	if s.pools == nil { // a store made without a Store (tests)
		s.pools = &PoolPlace{}
	}
	s.pools.set(jobs)
}

func (s *Redis) Undo(ctx context.Context, waiterTTL time.Duration, reqs []UndoReq) ([]UndoAnswer, error) {
	calls, groups := batch(s, reqs, func(r *UndoReq) *JobSpec { return r.Job }, nil, undoFields, func(args []any, r *UndoReq) []any {
		return AppendUndo(args, r, waiterTTL)
	})
	replies, err := s.exec(ctx, UndoScript, calls)
	if err != nil {
		return nil, err
	}
	return scatter[UndoAnswer]("undo", replies, groups, len(reqs), nil)
}

// HandBack is undo.lua's drop and the job's manual hint, in one round trip.
func (s *Redis) HandBack(ctx context.Context, r *StoreClaim, waiterTTL time.Duration) (bool, error) {
	u := UndoReq{Job: r.Job, ID: r.ID, Owner: r.Owner, Mode: UndoDrop, maxWait: r.MaxWait}
	v, err := s.execHint(ctx, UndoScript, call{keys: []string{r.Job.MetaKey}, Args: AppendUndo(nil, &u, waiterTTL)}, s.HintKey(), r.Job.Name)
	if err != nil {
		return false, err
	}
	if r.Pool != "" { // a pool slot held on Redis Cluster
		s.freePools(ctx, []call{s.poolCall("release", r.Pool, r.PoolMember, r.Owner, 0, 0)})
	}
	return UndoAnswer(at(strs(v), 0)) == UndoDropped, nil
}

func (s *Redis) Claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []StoreClaim) ([]ClaimRes, error) {
	ptrs := make([]*StoreClaim, len(reqs))
	for i := range reqs {
		ptrs[i] = &reqs[i]
	}
	if err := s.TakePools(ctx, ptrs, func(r *StoreClaim) string { return r.ID }); err != nil {
		return nil, err
	}
	out, err := s.ClaimAcked(ctx, replica, skew, waiterTTL, reqs)
	if err == nil && s.cluster {
		s.SettlePools(ctx, reqs, out)
	}
	return out, err
}

// ClaimAcked is claimOnly, then, with min_replicas_ack, takes back the
// starts too few replicas acknowledged.
func (s *Redis) ClaimAcked(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []StoreClaim) ([]ClaimRes, error) {
	out, err := s.claimOnly(ctx, replica, skew, waiterTTL, reqs)
	if err != nil || s.minAck <= 0 {
		return out, err
	}
	// Fail closed: a start too few replicas acknowledged could vanish in a
	// failover, and another replica start the run again. Take it back
	// before anyone runs it. Decisions that start nothing (skips, misses,
	// queue places) stand: losing them loses no exclusivity.
	var undo []UndoReq
	var at []int
	for i, r := range out {
		if r.Status == AnswerStarted && r.unacked != "" {
			undo = append(undo, UndoReq{Job: reqs[i].Job, ID: reqs[i].ID, Owner: reqs[i].Owner, Mode: UndoDrop})
			at = append(at, i)
		}
	}
	if len(undo) == 0 {
		return out, nil
	}
	// If the undo fails, the run still is not started here; the retry finds
	// the replica's own record and asks for acknowledgement again.
	_, uerr := s.Undo(ctx, waiterTTL, undo)
	for _, i := range at {
		reason := "the claim was taken back: " + out[i].unacked
		if uerr != nil {
			reason += " (taking it back failed: " + uerr.Error() + ")"
		}
		out[i] = ClaimRes{Status: AnswerRetry, Epoch: out[i].Epoch, Fence: out[i].Fence, Reason: reason}
	}
	return out, nil
}

// claimOnly runs claim.lua; with min_replicas_ack, a start that too few
// replicas acknowledged says why in its unacked field.
func (s *Redis) claimOnly(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []StoreClaim) ([]ClaimRes, error) {
	head := ClaimHeadArgs(replica, skew, waiterTTL, s.ClaimAhead, s.fenceCheck, s.born)
	calls, groups := s.claimCalls(head, reqs)
	replies, acks, err := s.run(ctx, claimScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]ClaimRes, len(reqs))
	err = scatterRows("claim", replies, groups, claimLeast, claimPacked, func(gi, i int, f []string) {
		res := decodeClaim(f, s.minAck > 0)
		if res.Status == AnswerStarted && acks != nil && !acks[gi].ok() {
			res.unacked = acks[gi].why()
		}
		out[i] = res
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimCalls are claim.lua's calls for reqs, head their own arguments:
// each run's arguments and key are references into one ArgBuf, none a
// string boxed on its own.
func (s *Redis) claimCalls(head []any, reqs []StoreClaim) ([]call, [][]int) {
	ab := NewArgBuf((claimFields+1)*len(reqs), claimArgBytes*len(reqs))
	calls, groups := batch(s, reqs, func(r *StoreClaim) *JobSpec { return r.Job }, head, claimFields, func(args []any, r *StoreClaim) []any {
		return AppendClaim(args, r, ab)
	})
	for gi := range calls {
		c := &calls[gi]
		c.keyArgs = make([]any, len(c.keys))
		for k, key := range c.keys {
			c.keyArgs[k] = ab.str(key)
		}
	}
	return calls, groups
}

// Admit polls rs, queued runs of one job, in one call. On Redis Cluster
// each pooled run's pool slot is taken first (pool.lua, under admitMember):
// a run that started keeps it, the others give it back.
func (s *Redis) Admit(ctx context.Context, rs []*StoreClaim, waiterTTL time.Duration, fenceFloor int64) ([]AdmitRes, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	if err := s.TakePools(ctx, rs, func(r *StoreClaim) string { return admitMember(r.ID) }); err != nil {
		return nil, err
	}
	out, err := s.admitOnly(ctx, rs, waiterTTL, fenceFloor)
	var free []call
	for i, r := range rs {
		switch {
		case r.Pgrant != '1' || err != nil:
			// An answer lost may have been a start: the hold stays (the
			// next poll takes it again), or ends with its lease.
		case out[i].Status == AnswerStarted:
			r.Pool, r.PoolMember = r.Job.Pool, admitMember(r.ID)
		default:
			free = append(free, s.poolCall("release", r.Job.Pool, admitMember(r.ID), r.Owner, 0, 0))
		}
	}
	s.freePools(ctx, free)
	return out, err
}

func (s *Redis) admitOnly(ctx context.Context, rs []*StoreClaim, waiterTTL time.Duration, fenceFloor int64) ([]AdmitRes, error) {
	replies, acks, err := s.run(ctx, AdmitScript, []call{AdmitCall(rs, waiterTTL, fenceFloor)})
	if err != nil {
		return nil, err
	}
	rows, ok := replies[0].([]any)
	if !ok || len(rows) != len(rs) {
		return nil, fmt.Errorf("scheduler: admit answered %v for %d runs", replies[0], len(rs))
	}
	out := make([]AdmitRes, len(rs))
	var undo []UndoReq
	var at []int
	for i, row := range rows {
		status, n, slot, err := decodeAdmit(row)
		if err != nil {
			return nil, err
		}
		if status == AnswerStarted {
			rs[i].Slot = slot
			if acks != nil && !acks[0].ok() {
				// As for a claim: an admission too few replicas hold is
				// taken back, and the run keeps its place in the queue.
				undo = append(undo, UndoReq{Job: rs[i].Job, ID: rs[i].ID, Owner: rs[i].Owner, Mode: undoRequeue, maxWait: rs[i].MaxWait})
				at = append(at, i)
			}
		}
		out[i] = AdmitRes{status, n}
	}
	if len(undo) > 0 {
		res, err := s.Undo(ctx, waiterTTL, undo)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			out[i] = AdmitRes{AnswerWaiting, 1}
			if res[k] != undoRequeued {
				out[i] = AdmitRes{Status: AnswerLost}
			}
		}
	}
	return out, nil
}

// Renew renews leases; the answer per run is LeaseOK, LeaseLostAnswer,
// LeaseReplaced or LeaseUnacked.
func (s *Redis) Renew(ctx context.Context, reqs []RenewReq) ([]LeaseAnswer, error) {
	calls, groups := batch(s, reqs, func(r *RenewReq) *JobSpec { return r.Job }, nil, renewFields, AppendRenew)
	replies, acks, err := s.run(ctx, renewScript, calls)
	if err != nil {
		return nil, err
	}
	// A renewal a failover could lose does not extend the lease: the
	// holder's deadline must not outrun the one a promoted replica would
	// enforce.
	out, err := scatter("renew", replies, groups, len(reqs), func(gi int, v LeaseAnswer) LeaseAnswer {
		if v == LeaseOK && acks != nil && !acks[gi].ok() {
			return LeaseUnacked
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
func (s *Redis) renewPools(ctx context.Context, reqs []RenewReq, out []LeaseAnswer) error {
	var calls []call
	var idx []int
	for i, r := range reqs {
		if r.Pool != "" && out[i] == LeaseOK {
			calls = append(calls, s.poolCall("renew", r.Pool, r.Member, r.Owner, 0, r.Job.Lease))
			idx = append(idx, i)
		}
	}
	return s.poolCalls(ctx, calls, idx, func(i int, held bool) {
		if !held {
			out[i] = LeaseLostAnswer
		}
	})
}

// Attempt issues the fencing token of a run's next attempt; 0 means the run
// is no longer held.
func (s *Redis) Attempt(ctx context.Context, j *JobSpec, id, owner string, n int, fenceFloor int64) (int64, error) {
	v, err := s.exec(ctx, attemptScript, []call{AttemptCall(j, id, owner, n, fenceFloor)})
	if err != nil {
		return 0, err
	}
	return decodeAttempt(v[0])
}

// Complete closes runs, grouped into as few script calls as the store
// allows; the answer per run is CloseOK, CloseClosed, CloseLost or
// CloseUnacked.
func (s *Redis) Complete(ctx context.Context, reqs []CompleteReq) ([]CloseAnswer, error) {
	calls, groups := batch(s, reqs, func(c *CompleteReq) *JobSpec { return c.R.Job }, nil, completeFields, AppendComplete)
	// With min_replicas_ack, a close counts once replicas have it: one the
	// primary alone took can be lost in a failover, and the run's slot then
	// stays held until its lease runs out.
	replies, acks, err := s.run(ctx, completeScript, calls)
	if err != nil {
		return nil, err
	}
	var free []call
	for _, c := range reqs {
		if c.R.Pool != "" { // a pool slot held on Redis Cluster
			free = append(free, s.poolCall("release", c.R.Pool, c.R.PoolMember, c.R.Owner, 0, 0))
		}
	}
	s.freePools(ctx, free)
	out, err := scatter("complete", replies, groups, len(reqs), func(gi int, v CloseAnswer) CloseAnswer {
		v, stats := closeStats(v)
		if acks != nil && !acks[gi].ok() && (v == CloseOK || v == CloseClosed) {
			return CloseUnacked
		}
		return v + stats
	})
	if err != nil {
		return nil, err
	}
	for i, v := range out {
		var stats CloseAnswer
		out[i], stats = closeStats(v)
		if stats == "" || !s.fenceCheck {
			// A Redlock master's statistics are one of several: the
			// replica merges them at its heartbeat.
			continue
		}
		at, raw, _ := strings.Cut(string(stats[1:]), "|")
		if us, err := strconv.ParseInt(at, 10, 64); err == nil {
			reqs[i].StatsRaw, reqs[i].StatsAt = raw, us
		}
	}
	return out, nil
}

// closeStats splits complete.lua's answer "ok|<µs>|<stats>" into the answer
// and the rest ("|<µs>|<stats>").
func closeStats(v CloseAnswer) (CloseAnswer, CloseAnswer) {
	if i := strings.IndexByte(string(v), '|'); i >= 0 {
		return v[:i], v[i:]
	}
	return v, ""
}

func (s *Redis) Sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []SyncReq) ([]SyncRes, error) {
	calls, groups := batch(s, reqs, func(r *SyncReq) *JobSpec { return r.Job }, SyncHeadArgs(skew, manualTTL, s.ClaimAhead, s.born), syncFields, func(args []any, r *SyncReq) []any {
		return AppendSync(args, r, replica, s.fenceCheck)
	})
	replies, err := s.exec(ctx, SyncScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]SyncRes, len(reqs))
	err = scatterRows("sync", replies, groups, syncLeast, 0, func(_, i int, f []string) { out[i] = decodeSync(f) })
	if err != nil {
		return nil, err
	}
	return out, nil
}
