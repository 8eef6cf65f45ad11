package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// summaryOutcomes are the outcomes Overview.LastEnded keeps, in the order
// the meta's fields are read.
var summaryOutcomes = []Outcome{Failed, TimedOut, LeaseLost, Missed}

// Overview reads job by job: each master answers for every job.
func (rl *redlock) Overview(ctx context.Context, jobs []string, recent int) ([]Overview, error) {
	out := make([]Overview, len(jobs))
	for i, j := range jobs {
		st, err := rl.Status(ctx, j, recent)
		if err != nil {
			return nil, err
		}
		out[i] = Overview{Status: *st}
	}
	// The counts of the master that kept the most runs (a master that
	// missed writes kept fewer): two round trips per master.
	per, err := read(ctx, rl, "overview", func(ctx context.Context, m *Redis) ([]Overview, error) {
		return m.Overview(ctx, jobs, 1)
	})
	if err != nil {
		return nil, err
	}
	for _, ov := range per {
		for i := range out {
			if ov[i].KeptStarted > out[i].KeptStarted {
				out[i].KeptStarted, out[i].KeptSucceeded = ov[i].KeptStarted, ov[i].KeptSucceeded
			}
		}
	}
	return out, nil
}

// overviewChunk bounds the commands of one pipeline: 5 per job.
const overviewChunk = 2000

func (s *Redis) Overview(ctx context.Context, jobs []string, recent int) ([]Overview, error) {
	out := make([]Overview, len(jobs))
	type reads struct {
		meta    *redis.SliceCmd
		slots   *redis.ZSliceCmd
		waiting *redis.IntCmd
		manual  *redis.IntCmd
		hist    *redis.StringSliceCmd
	}
	rs := make([]reads, len(jobs))
	for lo := 0; lo < len(jobs); lo += overviewChunk {
		hi := min(lo+overviewChunk, len(jobs))
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < hi; i++ {
				j := jobs[i]
				rs[i] = reads{
					meta:    p.HMGet(ctx, s.MetaKey(j), "paused", "last", "h:s", "h:ok", "paused_why", "fails", "at:failed", "at:timed_out", "at:lease_lost", "at:missed", "h:n"),
					slots:   p.ZRangeWithScores(ctx, s.Key(j, "slots"), 0, -1),
					waiting: p.ZCard(ctx, s.Key(j, "queue")),
					manual:  p.ZCard(ctx, s.Key(j, "manual")),
					hist:    p.LRange(ctx, s.Key(j, "history"), 0, int64(recent-1)),
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	type held struct {
		i   int
		id  string
		cmd *redis.MapStringStringCmd
	}
	var running []held
	for i, r := range rs {
		o := &out[i]
		o.Status = Status{Job: jobs[i], Waiting: int(r.waiting.Val()), PendingManual: int(r.manual.Val()), Running: []Run{}}
		if m := r.meta.Val(); len(m) == 7+len(summaryOutcomes) {
			o.Paused = m[0] == "1"
			if v, ok := m[1].(string); ok {
				o.LastScheduled = MsTime(v)
			}
			o.KeptStarted, o.KeptSucceeded = MetaInt(m[2]), MetaInt(m[3])
			if o.Paused {
				o.PausedWhy, _ = m[4].(string)
			}
			o.ConsecutiveFailures = MetaInt(m[5])
			for k, oc := range summaryOutcomes {
				if v, ok := m[6+k].(string); ok {
					if o.LastEnded == nil {
						o.LastEnded = map[Outcome]time.Time{}
					}
					o.LastEnded[oc] = MsTime(v)
				}
			}
		}
		var err error
		var hn any
		if m := r.meta.Val(); len(m) == 7+len(summaryOutcomes) {
			hn = m[6+len(summaryOutcomes)]
		}
		if o.History, err = decodeHistory(keptWindow(r.hist.Val(), hn, 0)); err != nil {
			return nil, err
		}
		if m := r.meta.Val(); len(m) != 7+len(summaryOutcomes) || m[2] == nil {
			// Not counted yet (a store from before the counts; the next
			// record filed counts the list): the runs read.
			o.KeptStarted, o.KeptSucceeded = countRuns(o.History)
		}
		for _, z := range r.slots.Val() {
			id, _ := z.Member.(string)
			if o.LeaseUntil == nil {
				o.LeaseUntil = map[string]time.Time{}
			}
			o.LeaseUntil[id] = time.UnixMilli(int64(z.Score)).UTC()
			running = append(running, held{i: i, id: id})
		}
	}
	for lo := 0; lo < len(running); lo += overviewChunk {
		hi := min(lo+overviewChunk, len(running))
		if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k := lo; k < hi; k++ {
				h := &running[k]
				h.cmd = p.HGetAll(ctx, s.Key(jobs[h.i], "run:"+SuffixOf(h.id)))
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	for _, h := range running {
		if m := h.cmd.Val(); len(m) > 0 {
			out[h.i].Running = append(out[h.i].Running, runFromHash(h.id, m))
		}
	}
	return out, s.poolUses(ctx, jobs, out)
}

// poolUses fills in the pool use of the pooled jobs among jobs, reading
// each pool once, in one more round trip (none without pools).
func (s *Redis) poolUses(ctx context.Context, jobs []string, out []Overview) error {
	held, err := s.poolHolders(ctx, jobs)
	for i, j := range jobs {
		if ids, ok := held[s.pools.pool(j)]; ok {
			out[i].Pool = s.pools.use(j, ids)
		}
	}
	return err
}

// poolHolders reads the pools of the pooled jobs among jobs (as this
// store's table places them), each once, in one round trip (none without
// pools): pool -> the runs holding one of its slots, their leases valid on
// Redis' clock.
func (s *Redis) poolHolders(ctx context.Context, jobs []string) (map[string][]string, error) {
	cmds := map[string]*redis.ZSliceCmd{}
	for _, j := range jobs {
		if p := s.pools.pool(j); p != "" {
			cmds[p] = nil
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	var now *redis.TimeCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for name := range cmds {
			cmds[name] = p.ZRangeWithScores(ctx, s.PoolKey(name), 0, -1)
		}
		now = p.Time(ctx)
		return nil
	}); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(cmds))
	for name, cmd := range cmds {
		ids := []string{}
		for _, z := range cmd.Val() {
			if id := poolHolder(fmt.Sprint(z.Member)); int64(z.Score) > now.Val().UnixMilli() && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		out[name] = ids
	}
	return out, nil
}

func (s *Redis) HistoryPage(ctx context.Context, job string, offset, limit int) ([]Run, error) {
	var hn *redis.StringCmd
	var hist *redis.StringSliceCmd
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		hn = p.HGet(ctx, s.MetaKey(job), "h:n")
		hist = p.LRange(ctx, s.Key(job, "history"), int64(offset), int64(offset+limit-1))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if err := hist.Err(); err != nil {
		return nil, err
	}
	return decodeHistory(keptWindow(hist.Val(), hn.Val(), offset))
}

// HistoryPage merges the masters' histories up to the page's end.
func (rl *redlock) HistoryPage(ctx context.Context, job string, offset, limit int) ([]Run, error) {
	runs, err := rl.History(ctx, job, offset+limit)
	if err != nil || offset >= len(runs) {
		return nil, err
	}
	return runs[offset:], nil
}

// countRuns counts the runs that started, and of them those that
// succeeded.
func countRuns(runs []Run) (started, succeeded int) {
	for _, r := range runs {
		if r.Decision == Started {
			started++
			if r.Outcome == Succeeded {
				succeeded++
			}
		}
	}
	return started, succeeded
}

// MetaInt reads a count from an HMGET answer: 0 when missing or not one.
func MetaInt(v any) int {
	s, _ := v.(string)
	n, _ := strconv.Atoi(s)
	return max(n, 0)
}
