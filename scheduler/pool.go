package scheduler

import (
	"sync"
)

// Pools (Job.Pool): slots shared by jobs. A run of a pooled job holds one of
// its pool's slots as well as one of its job's, under the same lease: the
// scripts take, renew, free and expire both together (lua/common.lua: hold,
// release, pool_free). For one script to reach both on Redis Cluster, a
// pooled job's keys carry its pool's hash tag, "<prefix>:{pool:<pool>}{<job>}:",
// and the pool's slots are "<prefix>:{pool:<pool>}:held". Which jobs are in
// which pool is therefore part of where their keys are: the store keeps it
// (poolPlace), from the scheduler's table and from Control.UseTable.

// poolPlace says which pool each job's keys are under. One per Store, shared
// by every scheduler and Control it backs.
type poolPlace struct {
	mu   sync.RWMutex
	of   map[string]string // job -> pool
	size map[string]int    // pool -> size, as the table says
}

// PoolUse is how much of a job's pool is in use (Status.Pool).
type PoolUse struct {
	Name string `json:"name"`
	// Size is the pool's number of slots in the table this Control (or
	// Scheduler) knows.
	Size int `json:"size"`
	// Used counts the slots held by runs whose lease has not run out.
	Used int `json:"used"`
	// Holders are those runs' ids, of any of the pool's jobs.
	Holders []string `json:"holders"`
}

// use is job's pool's PoolUse with holders (run ids, their leases
// valid), or nil for a job in no pool.
func (p *poolPlace) use(job string, holders []string) *PoolUse {
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

func (p *poolPlace) pool(job string) string {
	if p == nil {
		return ""
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.of[job]
}

// set places the jobs of a table: the pooled ones under their pool, the
// others (and jobs not in it) under their own tag.
func (p *poolPlace) set(jobs []Job) {
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

// tag is the Redis Cluster hash tag of a job's keys.
func (p *poolPlace) tag(job string) string {
	if pool := p.pool(job); pool != "" {
		return "{pool:" + pool + "}{" + job + "}"
	}
	return "{" + job + "}"
}

// UseTable tells the Control which of the table's jobs share pools
// (Job.Pool): their keys are under their pool's hash tag. A Control made by
// a Scheduler (Scheduler.Control) follows its table by itself; one made by
// Store.Control for a table it does not run needs this, and again after the
// table changed a job's pool.
func (c *Control) UseTable(jobs []Job) { c.store.placePools(jobs) }

// clipName shortens a name quoted in an error.
func clipName(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// poolKey is the pool's slots: run id -> lease expiry (common.lua pool_of).
func (s *store) poolKey(pool string) string { return s.prefix + ":{pool:" + pool + "}:held" }
