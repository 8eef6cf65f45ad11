package scheduler

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solocron/solocron/scheduler/internal/store"
)

// Heartbeat pacing, in sync intervals: a job no claim answer touched for
// idleSyncEvery intervals is synced; every job is synced every
// fullSweepEvery intervals whatever happened, a slice of the table at each
// beat (and all of it at start).
const (
	idleSyncEvery  = 5
	fullSweepEvery = 30
)

// heartbeat checks every job's state in Redis each sync interval.
func (s *Scheduler) heartbeat(ctx context.Context) {
	every(ctx, s.cfg.syncInterval, func() {
		if claims := s.sync(ctx); len(claims) > 0 {
			s.loops.Go(func() { s.claim(ctx, claims) })
		}
	})
}

// every calls fn every d until ctx is done.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A tick and the end of ctx both ready (fn took longer than d):
		// select picks one at random, so without this a stopped loop ran
		// round after round (a miss round against a Redis that was down,
		// 1.5 s each: TestStopDuringAMissRoundIsPrompt, one CI run).
		if ctx.Err() != nil {
			return
		}
		fn()
	}
}

// sync runs one heartbeat and returns the claims it calls for: manual runs
// requested, and catch-up runs.
func (s *Scheduler) sync(ctx context.Context) []claimReq {
	tab, _ := s.table()
	cctx, cancel := context.WithTimeout(ctx, max(s.cfg.syncInterval, time.Second))
	defer cancel()
	// One read says which jobs have fresh manual requests.
	sent := time.Now()
	// It also publishes the jobs whose run statistics this replica changed
	// since its last heartbeat, and reads those the others published: every
	// replica syncs them at this beat, so the per-job metrics agree within
	// a heartbeat or two, without a round trip of their own.
	// The list is taken inside the store's call (take), not before it: a
	// claim answered meanwhile notes its change in the same order as the
	// store saw the calls, so a seed replays exactly.
	// Taken once: a call the store runs after this heartbeat gave up on
	// it (a stalled store) takes nothing, as the heartbeat seals it below.
	var publish []string
	var once sync.Once
	hinted, server, err := s.store.ManualHints(cctx, store.HintReq{
		Since: sent.Add(-store.HintLookback), TTL: s.cfg.manualTTL,
		ChangedSince: sent.Add(-changedLookback(s.cfg.syncInterval, s.cfg.skew)),
		Take: func() []string {
			once.Do(func() { publish = s.takeChanged() })
			return publish
		},
		// Where the last read ended, on Redis' clock: each change is read
		// once (the look-back above only serves the first beat, and
		// Redlock).
		ChangedAfter: s.changedAt,
		// Entries carry values now, one per change rather than one per job:
		// kept twice as long as any heartbeat looks back, no longer.
		ChangedKeep: max(2*changedLookback(s.cfg.syncInterval, s.cfg.skew), 10*time.Second),
	})
	once.Do(func() {})
	if err != nil {
		s.unTakeChanged(publish)
		if ctx.Err() == nil {
			s.storeFailed(err)
		}
		return nil
	}
	s.storeAnswered()
	s.changedAt = hinted.ChangedAt
	s.lastSync.Store(time.Now().UnixNano())
	s.redisClock.observe(server, sent, time.Now())
	// A job is synced when it has a manual request, when no claim answer
	// touched it lately (a won claim already checked its epoch and reaped
	// its slots), and in its turn of the sweep: each beat syncs every
	// fullSweepEvery-th job of the table, so every job is synced at least
	// that often, and no beat syncs them all at once (ten thousand jobs in
	// one beat would hold up the runs of the instant it falls on). The
	// first beat syncs every job. That keeps the heartbeat's cost flat as
	// the table grows with jobs that fire every second.
	//
	// A job whose run statistics changed (a run of it ended, on any
	// replica) needs them read only when they were published without their
	// value (changes a replica made without learning the result: a skip, a
	// miss, a reaped run; and every change on Redlock): one read of its
	// meta, not a sync. A close publishes the statistics it left, with the
	// server time they held, and the others take them from the published
	// entry, reading nothing per job. With jobs that run every second a
	// change is every job at every beat on every replica: a whole sync
	// (reaping slots and waiters, reading manual requests) for each cost
	// more Redis work than the runs themselves.
	first, turn := s.syncs == 0, s.syncs%fullSweepEvery
	s.syncs++
	hint := make(map[string]bool, len(hinted.Manual))
	for _, h := range hinted.Manual {
		hint[h] = true
	}
	changed := make(map[string]bool, len(hinted.Changed))
	var valued map[string]*jobState
	for _, h := range hinted.Changed {
		job, at, raw, ok := parseStatsEntry(h)
		if !ok {
			changed[job] = true
			continue
		}
		// Published with their value: taken as they are, unless this
		// replica holds a later reading.
		if valued == nil {
			valued = make(map[string]*jobState, len(tab))
			for _, j := range tab {
				valued[j.Name] = j
			}
		}
		if j := valued[job]; j != nil {
			j.memo.setStats(raw, store.ParseStats(raw), at)
		}
	}
	idle := time.Now().Add(-idleSyncEvery * s.cfg.syncInterval)
	var jobs []*jobState
	var reqs []store.SyncReq
	for i, j := range tab {
		full := first || i%fullSweepEvery == turn || hint[j.Name] || !j.memo.touchedAfter(idle)
		if !full && !changed[j.Name] {
			continue
		}
		known, fence := j.memo.snapshot()
		jobs = append(jobs, j)
		reqs = append(reqs, store.SyncReq{Job: j.spec, Known: known, Fence: fence, StatsOnly: !full})
	}
	if len(reqs) == 0 {
		return nil
	}
	res, err := s.store.Sync(cctx, s.cfg.replicaID, s.cfg.skew, s.cfg.manualTTL, reqs)
	if err != nil {
		if ctx.Err() == nil {
			s.storeFailed(err)
		}
		return nil
	}
	now := s.now()
	// Catch-up waits for a clock that agrees with Redis': one an hour
	// ahead would take an hour of future instants for missed ones.
	trusted := s.clockTrusted(now)
	var claims []claimReq
	var others *otherTables
	for i, r := range res {
		j := jobs[i]
		if lost := j.memo.observe(r.Epoch, r.Fence); lost != "" {
			s.log.Warn("Redis lost this job's state (a restart without persistence, a flush, or a failover to a copy that missed writes); runs scheduled before now+max_clock_skew+claim ahead, and manual runs requested before now, are recorded missed",
				"job", j.Name, "old_epoch", lost, "new_epoch", r.Epoch)
			s.lostState.Store(true)
		}
		if j.memo.setStats(r.StatsRaw, r.Stats, r.StatsAt) {
			// Another replica may not know yet (a run its holder never
			// closed, reaped by this sync): tell them at the next beat.
			s.statsKnown(j)
		}
		j.memo.mu.Lock()
		j.memo.paused, j.memo.last, j.memo.touched = r.Paused, r.Last, time.Now()
		gap := trusted && !j.memo.caughtUp
		catchup := gap && j.CatchupWindow > 0
		j.memo.caughtUp = j.memo.caughtUp || trusted
		j.memo.mu.Unlock()
		for k := 0; k+1 < len(r.Manual); k += 2 {
			id := r.Manual[k]
			if _, busy := s.manual.LoadOrStore(id, struct{}{}); busy || !strings.HasPrefix(id, j.Name+"@") {
				continue
			}
			ms, _ := strconv.ParseInt(r.Manual[k+1], 10, 64)
			at := time.UnixMilli(ms)
			claims = append(claims, s.claimFor(j, id, at, at, store.RunManual))
		}
		if gap && others == nil {
			others = s.otherTables(ctx, tab)
		}
		var runs []time.Time
		if catchup {
			runs = others.drop(j, catchupInstants(j, r.Last, now))
			for _, t := range runs {
				c := s.newClaim(j, t, store.RunCatchup)
				c.Base, c.ReadAt = r.Last, server
				claims = append(claims, c)
			}
		}
		if gap {
			// Instants nobody decided before this replica started: the
			// whole cluster was down (or cut off from Redis). Recorded
			// missed, never run; bounded by the history the job keeps.
			until := s.first(j, s.runStart)
			for _, t := range others.drop(j, outageInstants(j, r.Last, until, s.runStart, min(j.HistoryLimit, maxCatchup), runs)) {
				c := s.newClaim(j, t, store.RunOutage)
				c.Base, c.ReadAt = r.Last, server
				s.queueMiss(c)
			}
		}
	}
	return claims
}

// storeFailed logs that Redis cannot be reached: at once, then every 30s.
func (s *Scheduler) storeFailed(err error) {
	now := time.Now().UnixNano()
	s.downSince.CompareAndSwap(0, now)
	if last := s.lastDownAt.Load(); now-last > int64(30*time.Second) && s.lastDownAt.CompareAndSwap(last, now) {
		s.log.Error("store unreachable: runs that cannot be claimed before their starting deadline will be recorded missed", "err", err)
	}
}

func (s *Scheduler) storeAnswered() {
	if since := s.downSince.Swap(0); since != 0 {
		s.lastDownAt.Store(0)
		s.log.Info("store reachable again", "down_for", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
}

// otherTables are the live replicas that run another job table than this
// one, read from the replica registry when a heartbeat finds a gap.
type otherTables struct {
	up    []store.Replica
	parts string // this replica's table by parts (tableParts)
	skew  time.Duration
	beat  time.Duration // a live replica beats at least this often
}

// otherTables reads the registry for the live replicas (this one aside)
// whose job table differs from tab: during a rolling deploy, or after a
// reload, the instants after a job's last decided one that nobody decided
// may be instants only this table has (a schedule changed, a job put back),
// not runs every replica missed. Empty when the store keeps no registry or
// does not answer.
func (s *Scheduler) otherTables(ctx context.Context, tab []*jobState) *otherTables {
	o := &otherTables{skew: s.cfg.skew, beat: s.cfg.syncInterval}
	if !s.store.Caps().Registry {
		return o
	}
	cctx, cancel := context.WithTimeout(ctx, max(s.cfg.syncInterval, time.Second))
	defer cancel()
	live, err := s.store.Registry(cctx, store.RegistryList, "", nil)
	if err != nil {
		return o
	}
	jobs := make([]Job, len(tab))
	for i, j := range tab {
		jobs[i] = j.Job
	}
	mine := TableFingerprint(jobs)
	o.parts = tableParts(jobs)
	for _, r := range live {
		if r.ID != s.cfg.replicaID && r.Table != mine && !r.Started.IsZero() {
			o.up = append(o.up, r)
		}
	}
	return o
}

// drop leaves out of ts, instants of j that nobody decided, those a
// replica with another table was up for, unless its table has j as this
// one has (the part of the table j falls in is the same): it had started (by its own clock,
// within the skew) before the instant's starting deadline passed, and beat
// after (or was listed live when it would beat next). It ran the job as its table says, which may not have that instant
// (a schedule changed, a job removed): catching it up, or recording it
// missed as if every replica had been down, would run or report an instant
// no table in force had while a replica was up.
func (o *otherTables) drop(j *jobState, ts []time.Time) []time.Time {
	if o == nil || len(o.up) == 0 {
		return ts
	}
	return slices.DeleteFunc(ts, func(t time.Time) bool {
		end := j.fire(t).Add(j.StartingDeadline)
		for _, r := range o.up {
			if samePart(r.Parts, o.parts, j.Name) {
				// Its table has this job as this one has: it would
				// have claimed the instant as this replica does
				// (it died first, or was cut off: an outage).
				continue
			}
			if r.Started.Add(o.skew).Before(end) && !r.LastHeartbeat.Add(o.beat).Before(end) {
				return true
			}
		}
		return false
	})
}
