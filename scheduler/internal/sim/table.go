package sim

import (
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"math/rand/v2"
	"os"
	"slices"
	"time"
)

// Table changes in the seeded search: for half the
// seeds the plan draws a second job table, v2, that changes some of the
// first — concurrency, overlap, lease, schedule, time zone, blackouts,
// starting deadline, a job added, a job removed (with its runs in
// flight) — and events that put
// it in force: a rolling deploy (replicas stop and start with v2 one after
// the other, the others still on v1 meanwhile), perhaps a rollback to v1
// the same way, and reloads (SIGHUP) of single replicas to either table.
// Before the calm period every replica reloads the table of the last
// deploy, so that the calm liveness check has one table to go by.
//
// A job's state is identified by its name alone: every invariant is
// checked per job name across both tables, and the limits are the largest
// in force (holders-within-concurrency: the largest concurrency of the job
// in any table; pool-limit-kept: the pool's largest size).
//
// The changes also move a job out of its pool, change the pool's size and
// change concurrency, up or down (while two tables
// are live, one of them raises the other's limit); SOLOCRON_SIM_TABLE_POOLS=0
// leaves those out (the plans seeds drew before they were the default).
// SOLOCRON_SIM_TABLES=0 draws no table change at all.

const (
	evDeploy   simEventKind = "deploy"   // every replica, one after the other every dur, stops and starts with table ver
	evReloadTo simEventKind = "reloadto" // the replica reloads table ver (SIGHUP)
)

// drawTables draws v2 and its events, from a generator of their own so
// that the rest of a seed's plan stays what it was.
func (p *simPlan) drawTables() {
	if os.Getenv("SOLOCRON_SIM_TABLES") == "0" {
		return
	}
	rng := rand.New(rand.NewPCG(p.seed, 0x7ab1e))
	if rng.IntN(2) == 0 {
		return
	}
	pools := os.Getenv("SOLOCRON_SIM_TABLE_POOLS") != "0"
	v2 := slices.Clone(p.jobs)
	job := func(name string) *simJob {
		for i := range v2 {
			if v2[i].Name == name {
				return &v2[i]
			}
		}
		return nil
	}
	kinds := []string{"overlap", "lease", "schedule", "timezone", "blackout", "added", "removed"}
	if pools {
		// Either way, a concurrency change is a raise for the replicas
		// still on the lower limit's table (seed 2: pair 2 -> 1, a v1
		// replica took slot 1 beside a v2 replica's run that held it).
		kinds = append(kinds, "concurrency-down", "concurrency-up", "pool-out", "pool-size")
	}
	rng.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })
	// "removed" last: another change may concern the job it removes.
	kinds = kinds[:1+rng.IntN(3)]
	if i := slices.Index(kinds, "removed"); i >= 0 {
		kinds = append(slices.Delete(kinds, i, i+1), "removed")
	}
	for _, k := range kinds {
		switch k {
		case "concurrency-down":
			job("pair").Concurrency = 1
		case "concurrency-up":
			if rng.IntN(2) == 0 {
				job("tick").Concurrency = 2
			} else {
				job("pair").Concurrency = 3
			}
		case "overlap":
			j := job("pair")
			others := slices.DeleteFunc([]scheduler.Overlap{scheduler.OverlapSkip, scheduler.OverlapWait, scheduler.OverlapReplace}, func(o scheduler.Overlap) bool { return o == j.Overlap })
			j.Overlap, j.MaxWait = others[rng.IntN(len(others))], 0
			if j.Overlap == scheduler.OverlapWait {
				j.MaxWait = time.Duration(2+rng.IntN(10)) * time.Second
			}
		case "lease":
			job("tick").Lease = []time.Duration{3 * time.Second, 5 * time.Second, 10 * time.Second}[rng.IntN(3)]
			job("slow").Lease = []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second}[rng.IntN(3)]
		case "schedule":
			job("jit").Schedule = "@every 5s"
		case "timezone":
			// The same instants, said another way: every 4 s of each
			// minute, read in Shanghai.
			j := job("catch")
			j.Schedule, j.Timezone = "*/4 * * * * *", "Asia/Shanghai"
		case "blackout":
			job("tick").Blackouts = []scheduler.Blackout{{Cron: "*/20 * * * * *", Duration: time.Duration(2+rng.IntN(6)) * time.Second}}
		case "added":
			v2 = append(v2, simJob{Job: scheduler.Job{Name: "extra", Schedule: "@every 2s", Lease: 3 * time.Second, HistoryLimit: 500},
				runFor: [2]time.Duration{0, 3 * time.Second}})
		case "removed":
			v2 = slices.DeleteFunc(v2, func(j simJob) bool { return j.Name == "jit" })
		case "pool-out":
			j := job("exb")
			j.Pool, j.PoolSize = "", 0
		case "pool-size":
			for _, name := range []string{"exa", "exb"} {
				if j := job(name); j.Pool != "" {
					j.PoolSize = 3 - j.PoolSize
				}
			}
		}
		p.changes = append(p.changes, k)
	}
	// A starting deadline changed, drawn apart so that the plans above stay
	// those the seeds drew before it: a replica of the table with the
	// longer deadline, frozen or cut off past the other table's record
	// retention, still claims the job's runs, and must find them decided
	// (TestRecordsOutliveEveryTablesClaims plays the same with jitter).
	if dl := rand.New(rand.NewPCG(p.seed, 0xdead1)); dl.IntN(2) == 0 {
		job("tick").StartingDeadline = []time.Duration{30 * time.Second, time.Minute}[dl.IntN(2)]
		p.changes = append(p.changes, "deadline")
	}
	p.tables = [][]simJob{p.jobs, v2}

	// A rolling deploy to v2, perhaps rolled back; reloads of single
	// replicas to either table. All done before the calm period.
	gap := time.Duration(1000+rng.IntN(5000)) * time.Millisecond
	span := time.Duration(p.replicas) * gap
	at := time.Duration(5+rng.IntN(50)) * time.Second
	p.events = append(p.events, simEvent{at: at, kind: evDeploy, replica: -1, dur: gap, ver: 1})
	p.final = 1
	if back := at + span + time.Duration(5+rng.IntN(30))*time.Second; rng.IntN(2) == 0 && back+span < simFaultsUntil-5*time.Second {
		p.events = append(p.events, simEvent{at: back, kind: evDeploy, replica: -1, dur: gap, ver: 0})
		p.final = 0
	}
	for range rng.IntN(3) {
		p.events = append(p.events, simEvent{at: time.Duration(3+rng.IntN(110)) * time.Second, kind: evReloadTo,
			replica: rng.IntN(p.replicas), ver: rng.IntN(2)})
	}
}

// table is version v of the job table.
func (p *simPlan) table(v int) []simJob {
	if len(p.tables) == 0 {
		return p.jobs
	}
	return p.tables[v]
}

// allJobs is every job of every table, each once: the first table's
// definition, or the first that has it.
func (p *simPlan) allJobs() []simJob {
	out := slices.Clone(p.jobs)
	for _, t := range p.tables {
		for _, j := range t {
			if !slices.ContainsFunc(out, func(o simJob) bool { return o.Name == j.Name }) {
				out = append(out, j)
			}
		}
	}
	return out
}

// limit is the largest concurrency of job in any table.
func (p *simPlan) limit(job string) int {
	n := 0
	for _, t := range append([][]simJob{p.jobs}, p.tables...) {
		for _, j := range t {
			if j.Name == job {
				n = max(n, max(1, engine.WithDefaults(j.Job).Concurrency))
			}
		}
	}
	return n
}

// deadline is the shortest starting deadline of job in any table: while
// two tables are live, a replica of the one with the shorter deadline
// records a run missed once it passes (the run is then decided, and the
// other table's replicas find it so).
func (p *simPlan) deadline(job string) time.Duration {
	d := time.Duration(-1)
	for _, t := range append([][]simJob{p.jobs}, p.tables...) {
		for _, j := range t {
			if j.Name == job {
				if jd := engine.WithDefaults(j.Job).StartingDeadline; d < 0 || jd < d {
					d = jd
				}
			}
		}
	}
	return max(d, 0)
}

// poolSizes is each pool's largest size in any table, and its jobs: those
// in it in every table that has them (a job that leaves the pool runs
// without its slots under the other table).
func (p *simPlan) poolSizes() (map[string]int, map[string][]string) {
	size, members, out := map[string]int{}, map[string][]string{}, map[string]bool{}
	for _, t := range append([][]simJob{p.jobs}, p.tables...) {
		for _, j := range t {
			if j.Pool == "" {
				out[j.Name] = true
				continue
			}
			size[j.Pool] = max(size[j.Pool], j.PoolSize)
			if !slices.Contains(members[j.Pool], j.Name) {
				members[j.Pool] = append(members[j.Pool], j.Name)
			}
		}
	}
	for pool, names := range members {
		members[pool] = slices.DeleteFunc(names, func(n string) bool { return out[n] })
	}
	return size, members
}

// inTable reports whether job is in version v of the table.
func (p *simPlan) inTable(job string, v int) bool {
	return slices.ContainsFunc(p.table(v), func(j simJob) bool { return j.Name == job })
}

// deploy stops and starts every replica with table ver, one after the
// other, gap apart (on the sequencer).
func (w *simWorld) deploy(ver int, gap time.Duration) {
	for i, r := range w.reps {
		w.after(time.Duration(i)*gap, func() {
			r.mu.Lock()
			r.ver = ver
			r.mu.Unlock()
			w.restartAfter(r, w.down(r, false), 0)
		})
	}
}

// reloadTo has r reload table ver, if it is up (on the sequencer).
func (w *simWorld) reloadTo(r *simReplica, ver int) {
	r.mu.Lock()
	r.ver = ver
	in := r.cur
	r.mu.Unlock()
	if in == nil || in.s == nil {
		return
	}
	in.ver = ver
	if err := in.s.Reload(w.table(in)); err != nil {
		w.t.Errorf("reload of table v%d: %v", ver+1, err)
	}
	w.noteLife(in, fmt.Sprintf("reloaded table v%d", ver+1))
}
