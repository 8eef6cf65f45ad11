package store

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Pools (Job.Pool): slots shared by jobs. A run of a pooled job holds one of
// its pool's slots as well as one of its job's, under the same lease. A job's
// state is identified by its name alone: its keys carry the hash tag {<job>}
// whether it is in a pool or not, so moving a job into or out of a pool (by
// a reload, a restart, or replicas running different tables during a rolling
// deploy) keeps its pause, history, manual runs, notifications and backfill,
// and every run id is still decided once, in one place. The pool's slots are
// a key of their own, "<prefix>:{pool:<pool>}:held" (run id -> lease expiry).
//
// Where one script may reach any key (standalone, Sentinel, the embedded
// store) the job's scripts take, renew and free the pool slot with the job
// slot, in the same round trip; the run's record names the pool key it took,
// so a table that moved the job out of the pool still renews and frees it.
// On Redis Cluster the pool's key lives in another hash slot: the replica
// takes the pool slot first (pool.lua, on the pool's node), then claims the
// run telling the script whether it got one; a run the claim did not start
// gives it back. That is two round trips (three when the claim does not
// start the run) for pooled jobs on Cluster only. The pool slot is held
// under the run's id: replicas racing for one run share one hold, and a
// replica gives back only a hold it created (a run another replica started
// keeps it). A queued run's admission holds "<run id>#a", which only its own
// replica uses. Renewals renew both, a close frees both.

// PoolJob is what the pools' placement needs of a table's job (Job.Name,
// Pool, PoolSize).
type PoolJob struct {
	Name, Pool string
	PoolSize   int
}

// PoolPlace says which pool each job's keys are under. One per Store, shared
// by every scheduler and Control it backs.
type PoolPlace struct {
	mu   sync.RWMutex
	of   map[string]string // job -> pool
	size map[string]int    // pool -> size, as the table says
}

// use is job's pool's PoolUse with holders (run ids, their leases
// valid), or nil for a job in no pool.
func (p *PoolPlace) use(job string, holders []string) *PoolUse {
	pool := p.pool(job)
	if pool == "" {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if holders == nil {
		holders = []string{}
	}
	return &PoolUse{Name: pool, Size: p.size[pool], Used: len(holders), Holders: holders}
}

func (p *PoolPlace) pool(job string) string {
	if p == nil {
		return ""
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.of[job]
}

// set places the jobs of a table: the pooled ones under their pool, the
// others (and jobs not in it) under their own tag.
func (p *PoolPlace) set(jobs []PoolJob) {
	m, sizes := make(map[string]string), make(map[string]int)
	for _, j := range jobs {
		if j.Pool != "" {
			m[j.Name], sizes[j.Pool] = j.Pool, j.PoolSize
		}
	}
	p.mu.Lock()
	p.of, p.size = m, sizes
	p.mu.Unlock()
}

// PoolKey is the pool's slots: run id -> lease expiry (lua/parts/keys.lua's
// pool_key).
func (s *Redis) PoolKey(pool string) string { return s.Prefix + ":{pool:" + pool + "}:held" }

// poolScript holds pool slots on Redis Cluster (pool.lua).
var poolScript = script("pool")

// Answers of pool.lua.
const (
	poolOK   = "ok"   // held, renewed, or given back
	poolFull = "full" // take: every slot held
)

// admitMember is the pool slot's member for an admission of queued run id:
// apart from the claims' (the run id), which other replicas may share.
func admitMember(id string) string { return id + "#a" }

// poolHolder is the run id a pool member stands for.
func poolHolder(member string) string {
	if i := strings.LastIndexByte(member, '#'); i > 0 {
		return member[:i]
	}
	return member
}

// poolCall is one pool.lua call: op on pool's slot member, for the claim
// (or admission) with owner token owner.
func (s *Redis) poolCall(op, pool, member, owner string, size int, lease time.Duration) call {
	return call{keys: []string{s.PoolKey(pool)}, Args: []any{op, member, owner, size, lease.Milliseconds()}}
}

// TakePools takes, on Redis Cluster, the pool slot of each pooled run of
// reqs (member names its hold) before its claim or admission, and sets its
// pgrant for the script: '1' held, '0' the pool is full. Elsewhere, and for
// jobs in no pool, pgrant stays 0: the script takes the slot itself.
func (s *Redis) TakePools(ctx context.Context, reqs []*StoreClaim, member func(*StoreClaim) string) error {
	var calls []call
	var idx []int
	for i, r := range reqs {
		r.Pgrant = 0
		if !s.cluster || r.Job.Pool == "" {
			continue
		}
		calls = append(calls, s.poolCall("take", r.Job.Pool, member(r), r.Owner, r.Job.PoolSize, r.Job.Lease))
		idx = append(idx, i)
	}
	return s.poolCalls(ctx, calls, idx, func(i int, held bool) {
		if held {
			reqs[i].Pgrant = '1'
		} else {
			reqs[i].Pgrant = '0'
		}
	})
}

// poolCalls runs pool.lua's calls (take or renew) in one round trip, and
// tells each, by the index of its request (idx[k] for calls[k]), whether
// its slot is held.
func (s *Redis) poolCalls(ctx context.Context, calls []call, idx []int, each func(i int, held bool)) error {
	if len(calls) == 0 {
		return nil
	}
	replies, err := s.exec(ctx, poolScript, calls)
	if err != nil {
		return err
	}
	for k, i := range idx {
		v, _ := replies[k].(string)
		each(i, v == poolOK)
	}
	return nil
}

// freePools gives pool holds back on Redis Cluster, best effort: a hold not
// given back ends with its lease, holding the pool's slot till then (never
// giving one away twice).
func (s *Redis) freePools(ctx context.Context, calls []call) {
	if len(calls) > 0 {
		_, _ = s.exec(ctx, poolScript, calls)
	}
}

// SettlePools, after a claim on Redis Cluster, keeps the pool slot of each
// run the claim started (res.pool names it), and gives back this replica's
// share of the others' (a hold another replica's claim started stays its).
func (s *Redis) SettlePools(ctx context.Context, reqs []StoreClaim, out []ClaimRes) {
	var free []call
	for i := range reqs {
		r := &reqs[i]
		if r.Pgrant != '1' {
			continue
		}
		if out[i].Status == AnswerStarted {
			out[i].Pool, out[i].PoolMember = r.Job.Pool, r.ID
			continue
		}
		free = append(free, s.poolCall("release", r.Job.Pool, r.ID, r.Owner, 0, 0))
	}
	s.freePools(ctx, free)
}
