package sim

import (
	"context"
	"fmt"
	"github.com/solocron/solocron/scheduler"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/simhook"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// simPlay plays plan once and checks it: its violations, the report (when
// there are violations or verbose) and the trace a replay must repeat.
func simPlay(t *testing.T, plan *simPlan, verbose bool) (violations []simViolation, report string, trace []string) {
	t.Helper()
	// One core: goroutines woken at one instant then run in the order the
	// runtime queues them, not on two cores at once (replay.go).
	// No other test runs meanwhile (TestSimulation is not parallel).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var world atomic.Pointer[simWorld]
	// A call that never returns (a script that loops) stops fake time:
	// the watchdog, on the real clock, says which once the sequencer has
	// run nothing for simWatchdog (a slow machine, or -race, only makes
	// a seed take longer).
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(simWatchdog / 12)
		defer tick.Stop()
		var last uint64
		since := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				var ran uint64
				if w := world.Load(); w != nil {
					ran = w.seq.ran.Load()
				}
				if ran != last {
					last, since = ran, now
					continue
				}
				if now.Sub(since) < simWatchdog {
					continue
				}
				var calls []string
				if w := world.Load(); w != nil {
					w.flightMu.Lock()
					for _, c := range w.flight {
						calls = append(calls, c)
					}
					w.flightMu.Unlock()
				}
				panic(fmt.Sprintf("simulation seed %d: no progress for %s of real time; calls still running on the store: %q\nplan of %s",
					plan.seed, simWatchdog, calls, plan))
			}
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		w := newSimWorld(t, plan)
		world.Store(w)
		w.run()
		violations = w.check()
		if len(violations) > 0 || verbose {
			report = w.report(violations)
		}
		trace = w.replayTrace()
	})
	return violations, report, trace
}

// engine is what the simulation reaches of the engine beyond its API
// (scheduler/internal/simhook).
var engine = simhook.Engine.(*simhook.Hooks[scheduler.Job, scheduler.Option, *scheduler.Scheduler, *scheduler.Control])

// simWatchdog bounds the real time a seed may make no progress for (a
// seed takes about a second); SOLOCRON_SIM_WATCHDOG changes it.
var simWatchdog = 3 * time.Minute

// simKnownDefect is a scheduler defect the search finds that is not fixed
// yet: the invariants it breaks and how its violations read.
type simKnownDefect struct {
	name       string
	invariants []string
	match      func(v simViolation) bool
	exposed    func(p *simPlan) bool // the plan has the faults that trip it
}

// simKnownDefects are reported to the maintainers (docs/reliability.md,
// "What the search found"). Each matches only violations of its own
// invariants that carry its own signature.
var simKnownDefects = map[string]simKnownDefect{
	// A backfill does not run an instant from before a loss a replica
	// noticed (claim.lua; docs/cli.md), but a loss nobody saw (Redis lost
	// its data while every replica was down) looks like a new job, whose
	// past a backfill runs: an instant that had started before it runs
	// again if the backfill's range covers it (seed 80204). Documented.
	"B1-backfill-after-unseen-loss": {
		name:       "documented: a backfill after Redis lost its data while every replica was down runs again an instant whose record was lost",
		invariants: []string{invOneStart, invOneGrant, invOneRecord, invBackfillUndecided},
		match: func(v simViolation) bool {
			_, losses, ok := strings.Cut(v.detail, "in between, the store lost data: ")
			if !ok || !(strings.Contains(v.detail, "(backfill)") || strings.Contains(v.detail, "(claim b)") || strings.Contains(v.detail, "backfill granted")) {
				return false
			}
			for _, l := range strings.Split(losses, ", ") {
				if !strings.HasPrefix(l, simAllDown+" at ") {
					return false
				}
			}
			return true
		},
		exposed: func(p *simPlan) bool {
			return p.backfill != nil && simPlanHas(p, evAllDown, evAllCrash)
		},
	},
	// A failover to a copy that missed writes is noticed only when a
	// replica that saw one of the lost writes next talks to the new
	// primary (README, bad-day table): until then any replica whose own
	// knowledge of the job predates the copy can start a run again, and
	// the copy's stale running and waiting entries are closed a second
	// time (lease_lost, missed) after their holders closed them on the
	// lost primary. Inherent without min_replicas_ack, which is the
	// remedy; the search has no Redis replicas, so it cannot use it.
	"D3-failover-window": {
		name: "documented window: a failover to a stale copy before a replica that saw the lost writes talks to it",
		// A backfill judges an instant by its record: one the copy lost
		// with the writes it missed runs again (seed 12).
		// Per-slot tokens too: the copy gives a lower token than one
		// already handed out (seeds 70311, 70315).
		invariants: []string{invOneStart, invOneGrant, invOneRecord, invFenceRises, invLeaseLostRan, invBackfillUndecided, invSlotTokens},
		match: func(v simViolation) bool {
			return strings.Contains(v.detail, "failover to the copy")
		},
		exposed: func(p *simPlan) bool { return simPlanHas(p, evSnapshot) },
	},
}

// simKnownFor lists the known defects seed's plan exposes the engine to:
// a seed is skipped only when every violation it shows matches one of
// them, so nothing new is hidden. The engine's goroutines interleave as Go
// schedules them, so whether an exposed seed trips a defect varies from
// run to run: the plan's faults, not a list of seeds seen failing, say
// which may. Replaying a seed (SOLOCRON_SIM_SEED) ignores this. Remove a
// defect from simKnownDefects once it is fixed.
func simKnownFor(p *simPlan) []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(simKnownDefects)) {
		if simKnownDefects[k].exposed(p) {
			keys = append(keys, k)
		}
	}
	return keys
}

// simPlanHas reports whether p has an event of one of kinds.
func simPlanHas(p *simPlan, kinds ...simEventKind) bool {
	for _, e := range p.events {
		if slices.Contains(kinds, e.kind) {
			return true
		}
	}
	return false
}

// simKnownOnly reports whether every violation matches one of the known
// defects keys names, and which of them.
func simKnownOnly(vs []simViolation, keys []string) ([]string, bool) {
	used := map[string]bool{}
	for _, v := range vs {
		ok := false
		for _, k := range keys {
			d := simKnownDefects[k]
			if slices.Contains(d.invariants, v.invariant) && d.match(v) {
				ok, used[k] = true, true
				break
			}
		}
		if !ok {
			return nil, false
		}
	}
	var names []string
	for _, k := range keys {
		if used[k] {
			names = append(names, k)
		}
	}
	return names, true
}

// simSeeds reads which seeds to run from the environment.
func simSeeds(short bool) ([]uint64, error) {
	num := func(name string, def uint64) (uint64, error) {
		v := os.Getenv(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: not a non-negative integer", name, v)
		}
		return n, nil
	}
	if os.Getenv("SOLOCRON_SIM_SEED") != "" {
		s, err := num("SOLOCRON_SIM_SEED", 0)
		return []uint64{s}, err
	}
	def := uint64(1)
	if testkit.Full() && !short {
		def = 2
	}
	n, err := num("SOLOCRON_SIM_SEEDS", def)
	if err != nil {
		return nil, err
	}
	first, err := num("SOLOCRON_SIM_FIRST", 1)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, n)
	for i := range n {
		out = append(out, first+i)
	}
	return out, nil
}

// simLog is where the replicas log: SOLOCRON_SIM_LOG, or nowhere.
var simLog = sync.OnceValue(func() io.Writer {
	if p := os.Getenv("SOLOCRON_SIM_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			return &lockedWriter{w: f}
		}
	}
	return io.Discard
})

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// simWorld is one seed's simulation: the store, the replicas, and what
// happened.
type simWorld struct {
	t      *testing.T
	plan   *simPlan
	m      *miniredis.Miniredis
	admin  *redis.Client // the operator's client: no faults
	ctl    *scheduler.Control
	start  time.Time
	ledger *testkit.Ledger
	reps   []*simReplica
	trace  bool
	log    *slog.Logger

	seq  *simSequencer  // runs store calls and events one at a time (replay.go)
	bg   sync.WaitGroup // follow-ups of events, stalled calls
	incs []*simInc      // every incarnation, to wait for at the end

	flightMu sync.Mutex
	flight   map[int]string // calls running on the store now, for the watchdog
	flightN  int

	mu          sync.Mutex
	outageUntil time.Time
	stallUntil  time.Time
	obs         simObs
}

func newSimWorld(t *testing.T, plan *simPlan) *simWorld {
	m, admin := redistest.MiniPipe(t)
	st, err := scheduler.NewRedisStore(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctl := st.Control()
	var table []scheduler.Job
	for _, sj := range plan.allJobs() {
		table = append(table, sj.Job)
	}
	ctl.UseTable(table) // the pooled jobs' keys
	w := &simWorld{t: t, plan: plan, m: m, admin: admin, ctl: ctl, start: time.Now(), ledger: testkit.NewLedger(),
		trace: os.Getenv("SOLOCRON_SIM_TRACE") == "1", obs: newSimObs(), flight: map[int]string{}, seq: newSimSequencer(plan.seed)}
	w.log = slog.New(slog.NewTextHandler(simLog(), &slog.HandlerOptions{Level: slog.LevelDebug})).With("seed", plan.seed)
	for i := range plan.replicas {
		w.reps = append(w.reps, &simReplica{w: w, idx: i, id: fmt.Sprintf("r%d", i), changed: make(chan struct{}), offset: plan.offsets[i]})
	}
	return w
}

// inFlight notes a call running on the store until done is called.
func (w *simWorld) inFlight(what string) (done func()) {
	w.flightMu.Lock()
	defer w.flightMu.Unlock()
	w.flightN++
	n := w.flightN
	w.flight[n] = fmt.Sprintf("t=%s %s", w.rel(time.Now()), what)
	return func() {
		w.flightMu.Lock()
		delete(w.flight, n)
		w.flightMu.Unlock()
	}
}

// rel is t as an offset from the simulation's start.
func (w *simWorld) rel(t time.Time) time.Duration { return t.Sub(w.start).Truncate(time.Millisecond) }

func (w *simWorld) outage() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Before(w.outageUntil)
}

func (w *simWorld) stalledUntil() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Now().Before(w.stallUntil) {
		return w.stallUntil
	}
	return time.Time{}
}

// tracef notes one injected fault (printed with SOLOCRON_SIM_TRACE=1).
func (w *simWorld) tracef(format string, args ...any) {
	if !w.trace {
		return
	}
	w.mu.Lock()
	w.obs.faults = append(w.obs.faults, fmt.Sprintf("t=%-8s ", w.rel(time.Now()))+fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

// table is the job table of one incarnation: the plan's jobs, whose
// handlers log to the ledger, die with the incarnation and cannot start
// while it is frozen.
func (w *simWorld) table(in *simInc) []scheduler.Job {
	tab := w.plan.table(in.ver)
	out := make([]scheduler.Job, len(tab))
	for i, sj := range tab {
		j := sj.Job
		if w.plan.notifies(j.Name) {
			j.Notify = []string{simNotifyTarget}
		}
		body := w.ledger.Job(func(ctx context.Context) error {
			info, _ := jobs.FromContext(ctx)
			h := fnv.New64a()
			fmt.Fprintf(h, "%d|%s|%d", w.plan.seed, info.RunID, info.Attempt)
			v := h.Sum64()
			d := sj.runFor[0]
			if span := sj.runFor[1] - sj.runFor[0]; span > 0 {
				d += time.Duration(v % uint64(span)).Truncate(time.Millisecond)
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-in.dead:
				return errSimDead
			}
			if int((v>>32)%100) < sj.failPct {
				return fmt.Errorf("sim: attempt %d failed", info.Attempt)
			}
			return nil
		})
		j.Handler = jobs.Func(func(ctx context.Context) error {
			// A frozen process starts nothing; a dead one never will.
			if !in.r.runnable(in) {
				return errSimDead
			}
			if info, ok := jobs.FromContext(ctx); ok {
				w.noteAttempt(in, info)
			}
			return body(ctx)
		})
		out[i] = j
	}
	return out
}

// startReplica starts a new incarnation of r, unless r is up already.
func (w *simWorld) startReplica(r *simReplica) {
	r.mu.Lock()
	if r.cur != nil {
		r.mu.Unlock()
		return
	}
	r.incs++
	n := r.incs
	ctx, cancel := context.WithCancel(context.Background())
	in := &simInc{r: r, n: n, ver: r.ver, cancel: cancel, done: make(chan struct{}), dead: make(chan struct{})}
	r.cur = in // taken: a second restart of r now finds it up
	r.mu.Unlock()
	opts := append([]scheduler.Option{scheduler.WithReplicaID(r.id), scheduler.WithClock(scheduler.ClockFunc(r.now)), scheduler.WithMaxClockSkew(w.plan.skew),
		scheduler.WithShutdownGrace(w.plan.grace), scheduler.WithLogger(w.log.With("replica", in.String()))}, w.simNotifyOptions(in)...)
	rep := simhook.Replica{
		// Backoff jitter from the seed, the replica, the fake time and
		// what it is for: the same on every replay (replay.go).
		Jitter: func(key string, n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			h := fnv.New64a()
			fmt.Fprintf(h, "%d|%s|%d|%s", w.plan.seed, in, time.Now().UnixNano(), key)
			return time.Duration(h.Sum64() % uint64(n))
		},
		Backend: func(cfg store.BackendConfig) (store.Backend, error) {
			st, err := store.NewRedis(redistest.PipeClient(w.t, w.m), cfg)
			if err != nil {
				return nil, err
			}
			sst := &simStore{Backend: st, in: in}
			if w.plan.notifyOn() {
				nc := redistest.PipeClient(w.t, w.m)
				nc.AddHook(simNotifyHook{st: sst})
				if sst.notify, err = store.NewRedis(nc, cfg); err != nil {
					return nil, err
				}
			}
			return sst, nil
		},
	}
	s, err := engine.NewScheduler(rep, w.table(in), opts)
	if err != nil {
		w.t.Fatal(err)
	}
	r.mu.Lock()
	in.s = s
	r.mu.Unlock()
	go func() {
		_ = s.Run(ctx)
		w.noteExit(in)
		close(in.done)
	}()
	w.mu.Lock()
	w.incs = append(w.incs, in)
	w.mu.Unlock()
	w.noteLife(in, "up")
}

// down takes r's incarnation away: killed, or stopped (gracefully). It
// returns the incarnation, nil if r was down already.
func (w *simWorld) down(r *simReplica, kill bool) *simInc {
	r.mu.Lock()
	in := r.cur
	r.cur = nil
	r.mu.Unlock()
	if in == nil {
		return nil
	}
	if kill {
		close(in.dead)
		w.noteLife(in, "killed")
	} else {
		w.noteLife(in, "stopping")
	}
	in.cancel()
	return in
}

// after runs fn after d, in the background, on the sequencer: fn must not
// wait for anything that needs it.
func (w *simWorld) after(d time.Duration, fn func()) {
	w.bg.Go(func() {
		time.Sleep(d)
		w.seq.do("after", true, fn)
	})
}

// restartAfter starts r again d after old went down, once old has exited.
func (w *simWorld) restartAfter(r *simReplica, old *simInc, d time.Duration) {
	w.bg.Go(func() {
		time.Sleep(d)
		if old != nil {
			<-old.done
		}
		w.seq.do("start "+r.id, true, func() { w.startReplica(r) })
	})
}

// run plays the plan: every replica starts, the events happen at their
// times, then nothing fails for simSettle, then every replica stops.
func (w *simWorld) run() {
	go w.seq.loop()
	w.seq.do("start", true, func() {
		for _, r := range w.reps {
			w.startReplica(r)
		}
	})
	for _, e := range w.plan.events {
		time.Sleep(time.Until(w.start.Add(e.at)))
		w.seq.do("event "+e.String(), true, func() { w.apply(e) })
	}
	time.Sleep(time.Until(w.start.Add(simFaultsUntil)))
	w.bg.Wait() // every fault is over (the plan ends each before simFaultsUntil)
	if len(w.plan.tables) > 1 {
		// The calm period runs one table: the last deploy's.
		w.seq.do("align tables", true, func() {
			for _, r := range w.reps {
				r.mu.Lock()
				same := r.ver == w.plan.final && (r.cur == nil || r.cur.ver == w.plan.final)
				r.mu.Unlock()
				if !same {
					w.reloadTo(r, w.plan.final)
				}
			}
		})
	}
	if b := w.plan.backfill; b != nil {
		time.Sleep(time.Until(w.start.Add(simFaultsUntil + b.at)))
		w.seq.do("backfill", true, w.requestBackfill)
	}
	time.Sleep(time.Until(w.start.Add(simLength)))
	w.seq.do("read backfill", true, w.readBackfill)
	var downs []*simInc
	w.seq.do("stop", true, func() {
		for _, r := range w.reps {
			if in := w.down(r, false); in != nil {
				downs = append(downs, in)
			}
		}
	})
	for _, in := range downs {
		<-in.done
	}
	w.mu.Lock()
	incs := w.incs
	w.mu.Unlock()
	for _, in := range incs {
		<-in.done
	}
	w.seq.close()
	w.collect()
}

// apply makes one planned event happen (on the sequencer).
func (w *simWorld) apply(e simEvent) {
	ctx := context.Background()
	{
		w.mu.Lock()
		w.obs.events = append(w.obs.events, e)
		w.mu.Unlock()
		var r *simReplica
		if e.replica >= 0 {
			r = w.reps[e.replica]
		}
		switch e.kind {
		case evCrash:
			w.restartAfter(r, w.down(r, true), e.dur)
		case evStop:
			w.restartAfter(r, w.down(r, false), e.dur)
		case evStopStart:
			w.restartAfter(r, w.down(r, false), 0)
		case evFreeze:
			r.mu.Lock()
			already := r.frozen
			r.mu.Unlock()
			if !already {
				r.freezeNow(e.dur)
			}
		case evOutage:
			w.mu.Lock()
			w.outageUntil = simLater(w.outageUntil, time.Now().Add(e.dur))
			w.mu.Unlock()
		case evStall:
			w.mu.Lock()
			w.stallUntil = simLater(w.stallUntil, time.Now().Add(e.dur))
			w.mu.Unlock()
		case evLossy:
			r.mu.Lock()
			r.lossyUntil = simLater(r.lossyUntil, time.Now().Add(e.dur))
			r.mu.Unlock()
		case evLateClaim:
			r.mu.Lock()
			r.lateUntil, r.lateBy = simLater(r.lateUntil, time.Now().Add(e.dur)), e.arg
			r.mu.Unlock()
		case evFlush:
			w.collect()
			w.noteLoss("flush")
			w.admin.FlushAll(ctx)
		case evAllCrash:
			var old []*simInc
			for _, r := range w.reps {
				old = append(old, w.down(r, true))
			}
			r.mu.Lock()
			r.freezeAtCatchup = e.arg
			r.mu.Unlock()
			for i, r := range w.reps {
				w.restartAfter(r, old[i], e.dur)
			}
		case evAllDown:
			var old []*simInc
			for _, r := range w.reps {
				old = append(old, w.down(r, true))
			}
			w.collect()
			w.noteLoss(simAllDown)
			w.admin.FlushAll(ctx)
			for i, r := range w.reps {
				w.restartAfter(r, old[i], e.dur)
			}
		case evSnapshot:
			w.snapshot()
			w.after(e.dur, func() {
				w.collect()
				w.noteLoss("failover to the copy of t=" + e.at.String())
				w.m.DB(0).FlushDB()
				w.m.SwapDB(0, 1)
			})
		case evSkewLoss:
			r.mu.Lock()
			r.offset += e.arg
			r.lossyUntil = simLater(r.lossyUntil, time.Now().Add(e.dur))
			r.mu.Unlock()
			w.after(e.dur, func() {
				r.mu.Lock()
				r.offset -= e.arg
				r.mu.Unlock()
			})
		case evClockStep:
			r.mu.Lock()
			r.offset += e.arg
			r.mu.Unlock()
			w.after(e.dur, func() {
				r.mu.Lock()
				r.offset -= e.arg
				r.mu.Unlock()
			})
		case evTrigger:
			w.trigger(e.job)
		case evTriggers:
			for range 3 {
				w.trigger(e.job)
			}
		case evPause:
			w.pause(e.job, true)
			w.after(e.dur, func() { w.pause(e.job, false) })
		case evDeploy:
			w.deploy(e.ver, e.dur)
		case evReloadTo:
			w.reloadTo(r, e.ver)
		case evReload:
			r.mu.Lock()
			in := r.cur
			var s *scheduler.Scheduler
			if in != nil {
				s = in.s
			}
			r.mu.Unlock()
			if s != nil {
				if err := s.Reload(w.table(in)); err != nil {
					w.t.Errorf("reload: %v", err)
				}
			}
		}
	}
}

func simLater(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// snapshot copies the store to database 1: the state a replica of the
// store that stops receiving writes now would have when promoted.
func (w *simWorld) snapshot() {
	ctx := context.Background()
	w.m.DB(1).FlushDB()
	for _, k := range w.m.DB(0).Keys() {
		if err := w.admin.Do(ctx, "copy", k, k, "db", 1, "replace").Err(); err != nil {
			w.t.Errorf("snapshot: copy %s: %v", k, err)
		}
	}
}

func (w *simWorld) trigger(job string) {
	// Control.Trigger's id, with a suffix drawn from the seed rather than
	// crypto/rand: the store orders pending requests of one instant by id,
	// so a random suffix would order them differently on every replay.
	w.mu.Lock()
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%d", w.plan.seed, len(w.obs.manual))
	w.mu.Unlock()
	id := fmt.Sprintf("%s@manual-%s%012x", job, strconv.FormatInt(time.Now().Unix(), 36), h.Sum64()&(1<<48-1))
	err := engine.Store(w.ctl).Trigger(context.Background(), job, id)
	if err != nil {
		w.t.Errorf("trigger %s: %v", job, err)
		return
	}
	w.mu.Lock()
	w.obs.manual = append(w.obs.manual, simManual{id: id, job: job, at: time.Now()})
	w.mu.Unlock()
	w.notef(id, "triggered")
}

func (w *simWorld) pause(job string, v bool) {
	var err error
	if v {
		err = w.ctl.Pause(context.Background(), job)
	} else {
		err = w.ctl.Resume(context.Background(), job)
	}
	if err != nil {
		w.t.Errorf("pause %s %v: %v", job, v, err)
		return
	}
	w.mu.Lock()
	w.obs.pauses[job] = append(w.obs.pauses[job], simPause{on: v, at: time.Now()})
	w.mu.Unlock()
}

// collect reads every job's records from the store (before it loses them,
// and at the end).
func (w *simWorld) collect() {
	ctx := context.Background()
	for _, j := range w.plan.allJobs() {
		h, err := w.ctl.History(ctx, j.Name, 100000)
		if err != nil {
			w.t.Errorf("history %s: %v", j.Name, err)
			continue
		}
		w.mu.Lock()
		for _, r := range h {
			w.obs.addRecord(r)
		}
		w.mu.Unlock()
	}
}

// report formats a failing (or replayed) seed.
func (w *simWorld) report(vs []simViolation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulation seed %d: %d invariant violation(s)\n", w.plan.seed, len(vs))
	runs := map[string]bool{}
	var ids []string
	for _, v := range vs {
		fmt.Fprintf(&b, "  [%s] %s\n", v.invariant, v.detail)
		if v.run != "" && !runs[v.run] {
			runs[v.run] = true
			ids = append(ids, v.run)
		}
	}
	sort.Strings(ids)
	if want := os.Getenv("SOLOCRON_SIM_RUN"); want != "" {
		var more []string
		for id := range w.obs.runs {
			if strings.Contains(id, want) && !runs[id] {
				more = append(more, id)
			}
		}
		sort.Strings(more)
		ids = append(more, ids...)
	}
	for i, id := range ids {
		if i == 8 && os.Getenv("SOLOCRON_SIM_RUN") == "" {
			fmt.Fprintf(&b, "  (traces of %d more runs left out)\n", len(ids)-i)
			break
		}
		fmt.Fprintf(&b, "trace of %s:\n", id)
		for _, l := range w.obs.runs[id] {
			fmt.Fprintf(&b, "    %s\n", l)
		}
		for _, e := range w.ledger.Entries() {
			if e.RunID == id {
				fmt.Fprintf(&b, "    ledger: attempt %d on %s token %d from t=%s to t=%s err=%v\n", e.Attempt, e.Replica, e.Token,
					w.rel(e.Start), w.rel(e.End), e.Err)
			}
		}
		for _, r := range w.obs.records[id] {
			fmt.Fprintf(&b, "    record: decision=%q outcome=%q replica=%q fence=%d started=%s finished=%s error=%q\n",
				r.Decision, r.Outcome, r.Replica, r.FencingToken, w.relZ(r.StartedAt), w.relZ(r.FinishedAt), r.Error)
		}
	}
	fmt.Fprintf(&b, "what happened:\n")
	for _, l := range w.obs.life {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if w.trace {
		fmt.Fprintf(&b, "faults injected on calls:\n")
		for _, l := range w.obs.faults {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintf(&b, "plan of %s", w.plan)
	fmt.Fprintf(&b, "replay: SOLOCRON_SIM_SEED=%d SOLOCRON_SIM_TRACE=1 go test -run TestSimulation ./scheduler/internal/sim/\n", w.plan.seed)
	return b.String()
}

func (w *simWorld) relZ(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return w.rel(t).String()
}

// simPool is the pool of the plan's pooled jobs.
const simPool = "exports"
