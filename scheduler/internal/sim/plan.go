package sim

import (
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"math/rand/v2"
	"strings"
	"time"
)

// The seeded fault search (TestSimulation, docs/reliability.md): a plan is
// everything one seed decides before the simulation starts — how many
// replicas, their clocks, the job table, and a schedule of faults. Two runs
// of one seed get the same plan; the engine's goroutines interleave as the
// Go scheduler has them, so a replay reproduces the faults exactly and the
// engine's answers to them very nearly (see simTrace for what happened).

// Timeline of one simulated run, in fake time from its start.
const (
	simFaultsUntil = 120 * time.Second // faults are injected before this
	simSettle      = 45 * time.Second  // then every replica is up and nothing fails
	simLength      = simFaultsUntil + simSettle
)

// simEventKind names one kind of fault or operator action.
type simEventKind string

const (
	evCrash     simEventKind = "crash"      // kill -9: no more writes, its jobs die; restarted after dur
	evStop      simEventKind = "stop"       // SIGTERM: graceful shutdown; started again after dur
	evFreeze    simEventKind = "freeze"     // SIGSTOP: its store calls stall for dur, then go on
	evOutage    simEventKind = "outage"     // the store refuses every call for dur
	evStall     simEventKind = "stall"      // the store takes calls but answers only after dur
	evLossy     simEventKind = "lossy"      // for dur, one replica's answers are lost, late or errors
	evFlush     simEventKind = "flush"      // the store loses all its data (restart without persistence)
	evAllDown   simEventKind = "alldown"    // every replica dies, the store loses its data, all restart after dur
	evSnapshot  simEventKind = "snapshot"   // a replica of the store stops receiving writes...
	evFailover  simEventKind = "failover"   // ...and is promoted: the store goes back to that copy
	evClockStep simEventKind = "clockstep"  // a replica's clock steps by arg beyond the max skew, for dur
	evTrigger   simEventKind = "trigger"    // Control.Trigger on job
	evTriggers  simEventKind = "triggers"   // several triggers on a busy job
	evPause     simEventKind = "pause"      // Control.Pause on job, Resume after dur
	evReload    simEventKind = "reload"     // the replica reloads its table (unchanged)
	evStopStart simEventKind = "stopstart"  // stop then start at once (a rolling restart)
	evLateClaim simEventKind = "lateanswer" // for dur, every answer to a replica arrives arg late
	// every replica dies and restarts after dur, the store keeps its data;
	// with arg > 0, replica r freezes for arg when it sends its first
	// catch-up claim (a SIGSTOP between the heartbeat that read the gap
	// and the claim)
	evAllCrash simEventKind = "allcrash"
	// a replica's clock jumps ahead by arg (beyond the skew) while a
	// seeded share of its calls fail, for dur
	evSkewLoss simEventKind = "skewloss"
)

// simEvent is one planned fault or action.
type simEvent struct {
	at      time.Duration
	kind    simEventKind
	replica int // -1: not about one replica
	job     string
	dur     time.Duration
	arg     time.Duration
	ver     int // evDeploy, evReloadTo: the table (0: v1, 1: v2)
}

func (e simEvent) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "t=%-8s %s", e.at, e.kind)
	if e.replica >= 0 {
		fmt.Fprintf(&b, " r%d", e.replica)
	}
	if e.job != "" {
		fmt.Fprintf(&b, " job=%s", e.job)
	}
	if e.dur > 0 {
		fmt.Fprintf(&b, " for=%s", e.dur)
	}
	if e.arg != 0 {
		fmt.Fprintf(&b, " by=%s", e.arg)
	}
	if e.kind == evDeploy || e.kind == evReloadTo {
		fmt.Fprintf(&b, " table=v%d", e.ver+1)
	}
	return b.String()
}

// simJob is one job of the simulated table with how long its runs take.
type simJob struct {
	scheduler.Job
	runFor  [2]time.Duration // each run lasts within [min, max), by its run id
	failPct int              // attempts that fail, percent, by run id and attempt
}

// simPlan is one seed's simulation.
type simPlan struct {
	seed     uint64
	replicas int
	skew     time.Duration
	offsets  []time.Duration // each replica's clock offset, within the skew
	grace    time.Duration   // shutdown grace
	jobs     []simJob
	events   []simEvent
	// faultPct is, inside a lossy window, the percentage of calls that
	// fail; of those a third lose the answer after the store ran the call,
	// a third answer late, a third fail before reaching the store.
	faultPct int
	// tables are the job tables the plan changes between (table.go):
	// none, or v1 (jobs) and v2; final is the one in force at the end.
	tables  [][]simJob
	changes []string
	final   int
	// backfill is the backfill the operator asks for, if any
	// (backfill.go).
	backfill *simBackfill
}

func (p *simPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d replicas, max clock skew %s, offsets %v, shutdown grace %s, lossy calls %d%%\n",
		p.seed, p.replicas, p.skew, p.offsets, p.grace, p.faultPct)
	for _, j := range p.jobs {
		fmt.Fprintf(&b, "  job %s: %s concurrency=%d overlap=%s lease=%s deadline=%s max_wait=%s catchup=%s/%s jitter=%s retries=%d runs=%s..%s fail=%d%%\n",
			j.Name, j.Schedule, j.Concurrency, j.Overlap, j.Lease, j.StartingDeadline, j.MaxWait, j.CatchupWindow, j.Catchup,
			j.Jitter, j.Retries, j.runFor[0], j.runFor[1], j.failPct)
		if j.Pool != "" {
			fmt.Fprintf(&b, "    pool %s of %d\n", j.Pool, j.PoolSize)
		}
	}
	if len(p.tables) > 1 {
		fmt.Fprintf(&b, "  table v2 changes %v; in force at the end: v%d\n", p.changes, p.final+1)
		for _, j := range p.tables[1] {
			fmt.Fprintf(&b, "    v2 job %s: %s tz=%q concurrency=%d overlap=%s lease=%s pool=%s/%d blackouts=%v\n",
				j.Name, j.Schedule, j.Timezone, j.Concurrency, j.Overlap, j.Lease, j.Pool, j.PoolSize, j.Blackouts)
		}
	}
	for _, e := range p.events {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	if p.backfill != nil {
		fmt.Fprintf(&b, "  %s\n", p.backfill)
	}
	return b.String()
}

// newSimPlan draws seed's plan.
func newSimPlan(seed uint64) *simPlan {
	rng := rand.New(rand.NewPCG(seed, 0x5eed5011c0))
	dur := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Truncate(time.Millisecond)
	}
	p := &simPlan{seed: seed, replicas: 3 + rng.IntN(4), skew: 2 * time.Second, faultPct: 10 + rng.IntN(40)}
	p.grace = dur(time.Second, 8*time.Second)
	for range p.replicas {
		// Any two replicas differ by less than the max skew.
		p.offsets = append(p.offsets, dur(-p.skew*45/100, p.skew*45/100))
	}
	pick := func(xs ...time.Duration) time.Duration { return xs[rng.IntN(len(xs))] }
	// tick: frequent, short, overlap skip.
	p.jobs = append(p.jobs, simJob{Job: scheduler.Job{Name: "tick", Schedule: fmt.Sprintf("@every %ds", 1+rng.IntN(3)),
		Lease: pick(3*time.Second, 5*time.Second, 10*time.Second)}, runFor: [2]time.Duration{0, 1500 * time.Millisecond}})
	// slow: runs longer than its lease and than its period, so runs queue
	// (overlap: wait) — manual runs on it queue too.
	p.jobs = append(p.jobs, simJob{Job: scheduler.Job{Name: "slow", Schedule: "@every 5s", Overlap: scheduler.OverlapWait,
		Lease: pick(2*time.Second, 3*time.Second, 4*time.Second), MaxWait: dur(8*time.Second, 25*time.Second)},
		runFor: [2]time.Duration{3 * time.Second, 9 * time.Second}})
	// pair: concurrency 2, retries, replace or wait.
	p.jobs = append(p.jobs, simJob{Job: scheduler.Job{Name: "pair", Schedule: "@every 3s", Concurrency: 2,
		Overlap: []scheduler.Overlap{scheduler.OverlapReplace, scheduler.OverlapWait, scheduler.OverlapSkip}[rng.IntN(3)], Retries: 1 + rng.IntN(2),
		RetryBackoff: 500 * time.Millisecond, Lease: pick(3*time.Second, 6*time.Second)},
		runFor: [2]time.Duration{time.Second, 8 * time.Second}, failPct: 30})
	if p.jobs[2].Overlap == scheduler.OverlapWait {
		p.jobs[2].MaxWait = dur(2*time.Second, 12*time.Second)
	}
	// catch: catches up after every replica was down.
	p.jobs = append(p.jobs, simJob{Job: scheduler.Job{Name: "catch", Schedule: "@every 4s", CatchupWindow: dur(20*time.Second, 90*time.Second),
		Catchup: []scheduler.Catchup{scheduler.CatchupAll, scheduler.CatchupLatest}[rng.IntN(2)], Lease: pick(3*time.Second, 6*time.Second),
		StartingDeadline: pick(2*time.Second, 5*time.Second, 10*time.Second)},
		runFor: [2]time.Duration{0, 2 * time.Second}})
	// jit: jitter, a longer period.
	p.jobs = append(p.jobs, simJob{Job: scheduler.Job{Name: "jit", Schedule: "@every 7s", Jitter: dur(100*time.Millisecond, 3*time.Second),
		Lease: pick(2*time.Second, 5*time.Second)}, runFor: [2]time.Duration{0, 3 * time.Second}})
	for i := range p.jobs {
		p.jobs[i].HistoryLimit = 500
	}

	// Faults, each at a random time before simFaultsUntil.
	at := func() time.Duration { return dur(3*time.Second, simFaultsUntil-5*time.Second) }
	replica := func() int { return rng.IntN(p.replicas) }
	job := func() string { return p.jobs[rng.IntN(len(p.jobs))].Name }
	n := 6 + rng.IntN(10)
	for range n {
		e := simEvent{at: at(), replica: -1}
		switch k := rng.IntN(100); {
		case k < 11:
			e.kind, e.replica, e.dur = evCrash, replica(), dur(500*time.Millisecond, 20*time.Second)
		case k < 20:
			e.kind, e.replica, e.dur = evStop, replica(), dur(0, 15*time.Second)
		case k < 29:
			e.kind, e.replica, e.dur = evFreeze, replica(), dur(time.Second, 45*time.Second)
		case k < 35:
			e.kind, e.dur = evOutage, dur(500*time.Millisecond, 15*time.Second)
		case k < 41:
			e.kind, e.dur = evStall, dur(500*time.Millisecond, 12*time.Second)
		case k < 50:
			e.kind, e.replica, e.dur = evLossy, replica(), dur(2*time.Second, 30*time.Second)
		case k < 54:
			e.kind, e.replica, e.dur, e.arg = evLateClaim, replica(), dur(2*time.Second, 20*time.Second), dur(500*time.Millisecond, 8*time.Second)
		case k < 57:
			e.kind = evFlush
		case k < 60:
			e.kind, e.dur = evAllDown, dur(0, 8*time.Second)
		case k < 65:
			e.kind, e.replica, e.dur = evAllCrash, replica(), dur(15*time.Second, 35*time.Second)
			if rng.IntN(2) == 0 {
				e.arg = dur(5*time.Second, 40*time.Second)
			}
		case k < 69:
			e.kind, e.dur = evSnapshot, dur(time.Second, 25*time.Second)
		case k < 72:
			e.kind, e.replica, e.dur = evClockStep, replica(), dur(2*time.Second, 30*time.Second)
			e.arg = pick(-time.Hour, -time.Minute, -10*time.Second, 10*time.Second, time.Minute, time.Hour)
		case k < 75:
			e.kind, e.replica, e.dur = evSkewLoss, replica(), dur(2*time.Second, 20*time.Second)
			e.arg = dur(time.Second, 15*time.Second)
		case k < 84:
			e.kind, e.job = evTrigger, job()
		case k < 89:
			e.kind, e.job = evTriggers, "slow"
		case k < 94:
			e.kind, e.job, e.dur = evPause, job(), dur(time.Second, 20*time.Second)
		case k < 97:
			e.kind, e.replica = evReload, replica()
		default:
			e.kind, e.replica = evStopStart, replica()
		}
		p.events = append(p.events, e)
	}
	// Every fault ends before simFaultsUntil: the settle period is calm.
	for i := range p.events {
		p.events[i].dur = min(p.events[i].dur, simFaultsUntil-5*time.Second-p.events[i].at)
	}
	// exa, exb: two jobs sharing a pool of 1 or 2 slots, each with slots of
	// its own to spare, any overlap (replace once stopped a run claimed
	// ahead that then started all the same: seeds 20, 48; claim.lua now
	// replaces only older runs that have started). Drawn from a generator
	// of their own, after the rest, so that the other jobs and the faults
	// of a seed stay what they were before pools.
	prng := rand.New(rand.NewPCG(seed, 0x9001))
	size := 1 + prng.IntN(2)
	for _, name := range []string{"exa", "exb"} {
		sj := simJob{Job: scheduler.Job{Name: name, Schedule: fmt.Sprintf("@every %ds", 2+prng.IntN(2)), Concurrency: 1 + prng.IntN(2),
			Overlap: []scheduler.Overlap{scheduler.OverlapSkip, scheduler.OverlapWait, scheduler.OverlapReplace}[prng.IntN(3)], Pool: simPool, PoolSize: size,
			Lease: []time.Duration{3 * time.Second, 5 * time.Second}[prng.IntN(2)], HistoryLimit: 500},
			runFor: [2]time.Duration{500 * time.Millisecond, 4 * time.Second}}
		if sj.Overlap == scheduler.OverlapWait {
			sj.MaxWait = time.Duration(2+prng.IntN(9)) * time.Second
		}
		p.jobs = append(p.jobs, sj)
	}
	p.drawTables()
	p.drawBackfill()
	// Events are applied in time order; equal times keep the drawn order.
	for i := 1; i < len(p.events); i++ {
		for k := i; k > 0 && p.events[k].at < p.events[k-1].at; k-- {
			p.events[k], p.events[k-1] = p.events[k-1], p.events[k]
		}
	}
	return p
}

// jobByName returns the plan's job named name.
func (p *simPlan) job(name string) *simJob {
	for i := range p.jobs {
		if p.jobs[i].Name == name {
			return &p.jobs[i]
		}
	}
	return nil
}
