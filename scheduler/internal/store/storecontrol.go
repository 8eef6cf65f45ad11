package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What Control asks of one Redis deployment.

func (s *Redis) SetPaused(ctx context.Context, job string, paused bool, why string) error {
	_, err := s.exec(ctx, pauseScript, []call{{keys: []string{s.MetaKey(job)}, Args: PauseArgs(paused, why)}})
	return err
}

func (s *Redis) Cancel(ctx context.Context, job, id, who string) (cancelAnswer, Outcome, error) {
	v, err := s.exec(ctx, cancelScript, []call{CancelCall(s.MetaKey(job), id, who)})
	if err != nil {
		return "", "", err
	}
	return decodeCancel(v[0])
}

func (s *Redis) Retry(ctx context.Context, job, id, newID, who string, ended bool) (retryAnswer, error) {
	v, err := s.execHint(ctx, retryScript, RetryCall(s.MetaKey(job), id, newID, who, ended), s.HintKey(), job)
	if err != nil {
		return "", err
	}
	return decodeRetry(v)
}

// Retries reads the job's list of retries (retry.lua): "<new id>\n<run
// id>\n<who>" per entry, oldest first.
func (s *Redis) Retries(ctx context.Context, job string) ([]RetryLink, error) {
	raw, err := s.c.ZRange(ctx, s.Key(job, "retries"), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]RetryLink, 0, len(raw))
	for _, e := range raw {
		if f := strings.SplitN(e, "\n", 3); len(f) == 3 {
			out = append(out, RetryLink{ID: f[0], Of: f[1], By: f[2]})
		}
	}
	return out, nil
}

// HintKey is the store-wide set of jobs with recent manual requests
// (job -> request time, ms). Replicas read it every heartbeat instead of
// polling every job's manual set; it lives outside any job's hash tag, so
// it is never touched by a script.
func (s *Redis) HintKey() string { return s.Prefix + ":manual" }

// HintLookback is how long a manual request's hint keeps its job in every
// heartbeat; requests older than that are found by the full sweep.
const HintLookback = time.Minute

func (s *Redis) Trigger(ctx context.Context, job, id string) error {
	v, err := s.execHint(ctx, triggerScript, TriggerCall(s.MetaKey(job), id, s.skew, s.born), s.HintKey(), job)
	if err != nil {
		return err
	}
	full, err := decodeTrigger(v)
	if full {
		return fmt.Errorf("%w: job %q has %d manual runs waiting (pending or queued for a slot)", ErrQueueFull, job, MaxPendingManual)
	}
	return err
}

// ChangedKey is the store-wide set of jobs whose run statistics changed
// lately (statsEntry -> a score that rises with each publication, on
// Redis' clock in µs: changed.lua). Its hash tag is its own (Redis
// Cluster), never a job's. Named apart from the set earlier versions kept
// (":{changed}", scored on the publishing replica's clock in ms): during a
// rolling upgrade the two versions do not see each other's published
// statistics, which then follow from the full sweep, a few heartbeats late.
func (s *Redis) ChangedKey() string { return s.Prefix + ":{changed}:us" }

// changedTTL is how long ChangedKey lives after its last change, and how
// long an entry of it is kept when the heartbeat does not say
// (HintReq.changedKeep).
const changedTTL = time.Minute

// HintReq is what a heartbeat's first round trip reads and writes, besides
// Redis' clock.
type HintReq struct {
	Since time.Time     // manual requests made since
	TTL   time.Duration // manual hints older than that are dropped
	// ChangedSince: jobs whose statistics changed since (on this
	// replica's clock); ChangedAfter, when not zero, replaces it: the
	// changes published after the last read (its hints.changedAt, a
	// cursor: each change is read once). changed: those this
	// replica changed since its last heartbeat (statsEntry); ChangedKeep:
	// how long a published change is kept (older ones are dropped).
	ChangedSince time.Time
	ChangedAfter int64
	Changed      []string
	ChangedKeep  time.Duration
	// Take, when set, adds to changed: called at the start of the store's
	// call (the heartbeat's takeChanged; it answers the same list to every
	// Redlock master).
	Take func() []string
}

// taken returns h with changed taken by h.take.
func (h HintReq) taken() HintReq {
	if h.Take != nil {
		h.Changed = append(h.Changed, h.Take()...)
		h.Take = nil
	}
	return h
}

// Hints is what a heartbeat's first round trip learns: the jobs with
// manual requests, and the jobs whose run statistics changed, read up to
// ChangedAt (changed.lua's cursor; 0: none, as on Redlock, whose masters
// each have their own: the next read looks back instead).
type Hints struct {
	Manual, Changed []string
	ChangedAt       int64
}

// ManualHints returns the jobs with manual requests since h.since, and
// those whose statistics changed since h.changedSince (after adding
// h.changed), and drops the hints older than their time to live. One
// round trip.
func (s *Redis) ManualHints(ctx context.Context, h HintReq) (Hints, time.Time, error) {
	h = h.taken()
	var jobs *redis.StringSliceCmd
	var changed *redis.Cmd
	var backfills *redis.ZSliceCmd
	var now *redis.TimeCmd
	// The statistics changes: published and read by one script
	// (changed.lua), on Redis' clock.
	from := ""
	if h.ChangedAfter > 0 {
		from = strconv.FormatInt(h.ChangedAfter, 10)
	} else if !h.ChangedSince.IsZero() {
		from = strconv.FormatInt(h.ChangedSince.UnixMicro(), 10)
	}
	var changedArgs []any
	if from != "" || len(h.Changed) > 0 {
		changedArgs = make([]any, 0, 3+len(h.Changed))
		changedArgs = append(changedArgs, from, cmp.Or(h.ChangedKeep, changedTTL).Milliseconds(), changedTTL.Milliseconds())
		for _, e := range h.Changed {
			changedArgs = append(changedArgs, e)
		}
	}
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		if s.fenceCheck { // not a Redlock master: Redlock cannot backfill
			backfills = p.ZRangeWithScores(ctx, s.BackfillHintKey(), 0, -1)
		}
		jobs = p.ZRangeByScore(ctx, s.HintKey(), &redis.ZRangeBy{Min: strconv.FormatInt(h.Since.UnixMilli(), 10), Max: "+inf"})
		p.ZRemRangeByScore(ctx, s.HintKey(), "-inf", strconv.FormatInt(time.Now().Add(-h.TTL).UnixMilli(), 10))
		if changedArgs != nil {
			changed = ChangedScript.EvalSha(ctx, p, []string{s.ChangedKey()}, changedArgs...)
		}
		return nil
	})
	if changed != nil && redis.HasErrorPrefix(changed.Err(), "NOSCRIPT") {
		// After SCRIPT FLUSH or a restart: the rest of the pipeline read
		// and dropped hints only; the script alone runs again.
		changed = ChangedScript.Run(ctx, s.c, []string{s.ChangedKey()}, changedArgs...)
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			err = changed.Err()
		}
	}
	if err == nil && backfills != nil {
		zs := backfills.Val()
		bf := make([]BackfillHint, len(zs))
		for i, z := range zs {
			bf[i] = BackfillHint{Job: fmt.Sprint(z.Member), Score: z.Score}
		}
		s.backfillSeen.Store(&bf)
	}
	out := Hints{Manual: jobs.Val()}
	if changed != nil && err == nil {
		v, cerr := changed.StringSlice()
		if cerr != nil {
			return out, now.Val(), cerr
		}
		if len(v) == 0 {
			return out, now.Val(), fmt.Errorf("scheduler: changed.lua answered nothing")
		}
		at, perr := strconv.ParseInt(v[0], 10, 64)
		if perr != nil {
			return out, now.Val(), fmt.Errorf("scheduler: changed.lua answered time %q: %w", v[0], perr)
		}
		if from != "" {
			out.Changed, out.ChangedAt = v[1:], at
		}
	}
	return out, now.Val(), err
}

// keptWindow cuts a read of a job's history list (from its entry offset
// on) to the kept history: the list's first h:n entries (the meta's count,
// hn as read). The store trims the list to history_limit in steps, not on
// every record filed (lua/parts/history.lua's push_entry), so it may hold a few
// older entries past them, which no reader shows. hn nil or not a number
// (no counts yet, a store from before them): the list is trimmed exactly,
// and all of it is kept.
func keptWindow(raw []string, hn any, offset int) []string {
	var n int
	switch v := hn.(type) {
	case string:
		k, err := strconv.Atoi(v)
		if err != nil {
			return raw
		}
		n = k
	default:
		return raw
	}
	n -= offset
	if n <= 0 {
		return nil
	}
	if n < len(raw) {
		return raw[:n]
	}
	return raw
}

func (s *Redis) History(ctx context.Context, job string, limit int) ([]Run, error) {
	var hn *redis.StringCmd
	var hist *redis.StringSliceCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		hn = p.HGet(ctx, s.MetaKey(job), "h:n")
		hist = p.LRange(ctx, s.Key(job, "history"), 0, int64(limit-1))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if err := hist.Err(); err != nil {
		return nil, err
	}
	return decodeHistory(keptWindow(hist.Val(), hn.Val(), 0))
}

func (s *Redis) Status(ctx context.Context, job string, limit int) (*Status, error) {
	var meta *redis.SliceCmd
	var slots *redis.StringSliceCmd
	var waiting, manual *redis.IntCmd
	var hist *redis.StringSliceCmd
	var backfill func() *Backfill
	var pool *redis.ZSliceCmd
	var now *redis.TimeCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		backfill = s.backfillStatus(ctx, p, job)
		meta = p.HMGet(ctx, s.MetaKey(job), "paused", "last", "paused_why", "fails", "h:n")
		slots = p.ZRange(ctx, s.Key(job, "slots"), 0, -1)
		waiting = p.ZCard(ctx, s.Key(job, "queue"))
		manual = p.ZCard(ctx, s.Key(job, "manual"))
		hist = p.LRange(ctx, s.Key(job, "history"), 0, int64(limit-1))
		if name := s.pools.pool(job); name != "" {
			pool = p.ZRangeWithScores(ctx, s.PoolKey(name), 0, -1)
			now = p.Time(ctx)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	st := &Status{Job: job, Waiting: int(waiting.Val()), PendingManual: int(manual.Val()), Running: []Run{}, Backfill: backfill()}
	if pool != nil {
		// Held with a valid lease on Redis' clock, as status.lua reads it.
		var held []string
		for _, z := range pool.Val() {
			if id := poolHolder(fmt.Sprint(z.Member)); int64(z.Score) > now.Val().UnixMilli() && !slices.Contains(held, id) {
				held = append(held, id)
			}
		}
		st.Pool = s.pools.use(job, held)
	}
	if m := meta.Val(); len(m) == 5 {
		st.Paused = m[0] == "1"
		if v, ok := m[1].(string); ok {
			st.LastScheduled = MsTime(v)
		}
		if st.Paused {
			st.PausedWhy, _ = m[2].(string)
		}
		if v, ok := m[3].(string); ok {
			st.ConsecutiveFailures, _ = strconv.Atoi(v)
		}
	}
	var err error
	var hn any
	if m := meta.Val(); len(m) == 5 {
		hn = m[4]
	}
	if st.History, err = decodeHistory(keptWindow(hist.Val(), hn, 0)); err != nil {
		return nil, err
	}
	if ids := slots.Val(); len(ids) > 0 {
		cmds := make([]*redis.MapStringStringCmd, len(ids))
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HGetAll(ctx, s.Key(job, "run:"+SuffixOf(id)))
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for i, cmd := range cmds {
			if h := cmd.Val(); len(h) > 0 {
				st.Running = append(st.Running, runFromHash(ids[i], h))
			}
		}
	}
	return st, nil
}

func (s *Redis) Get(ctx context.Context, job, suffix string) (*Run, error) {
	h, err := s.c.HGetAll(ctx, s.Key(job, "run:"+suffix)).Result()
	if err != nil || len(h) == 0 || h["outcome"] == "" {
		return nil, err
	}
	r := runFromHash(job+"@"+suffix, h)
	return &r, nil
}

// RetryLink is one entry of a job's latest retries.
type RetryLink struct{ ID, Of, By string }
