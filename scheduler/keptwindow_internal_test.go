package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// The history list is trimmed to history_limit in steps (lua/parts/history.lua's
// push_entry: once it holds H_SLACK = 8 entries more), so it may hold a few
// entries past the kept ones: every reader shows only the kept ones, and
// the kept counts (h:n, h:s, h:ok) are those of exactly the entries shown,
// while the list grows and is trimmed, after history_limit is lowered and
// raised, and after the per-entry marks (h:f), the counts or the list were
// lost.
// On redis-server and on miniredis (the embedded store's Lua).
func TestHistoryTrimmedInStepsReadsKeptOnly(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		srv := redistest.Start(t)
		trimmedInSteps(t, srv.Client(t, nil))
	})
	t.Run("miniredis", func(t *testing.T) {
		_, c := redistest.Mini(t)
		trimmedInSteps(t, c)
	})
}

func trimmedInSteps(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	st, err := store.NewRedis(c, store.BackendConfig{Prefix: "kw", Pools: &store.PoolPlace{}})
	if err != nil {
		t.Fatal(err)
	}
	const name, slack = "kw", 8
	hk, mk := st.Key(name, "history"), st.MetaKey(name)
	job := func(limit int) *jobState {
		spec := Job{Name: name, Schedule: "@every 1s", HistoryLimit: limit,
			Handler: jobs.Func(func(context.Context) error { return nil })}.withDefaults()
		j, err := newJobState(spec, mk, &memo{}, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	check := func(when string, limit int) {
		t.Helper()
		all, err := c.LRange(ctx, hk, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) > limit+slack {
			t.Fatalf("%s: the list holds %d entries, history_limit %d + %d", when, len(all), limit, slack)
		}
		kept := all[:min(limit, len(all))]
		started, ok := 0, 0
		for _, e := range kept {
			if strings.Contains(e, `"decision":"started"`) {
				started++
				if strings.Contains(e, `"outcome":"succeeded"`) {
					ok++
				}
			}
		}
		m, err := c.HMGet(ctx, mk, "h:n", "h:s", "h:ok").Result()
		if err != nil {
			t.Fatal(err)
		}
		if store.MetaInt(m[0]) != len(kept) || store.MetaInt(m[1]) != started || store.MetaInt(m[2]) != ok {
			t.Fatalf("%s: counts %v, the %d kept entries: %d started, %d succeeded", when, m, len(kept), started, ok)
		}
		h, err := st.History(ctx, name, 1000)
		if err != nil || len(h) != len(kept) {
			t.Fatalf("%s: history shows %d runs (%v), want %d", when, len(h), err, len(kept))
		}
		if p, err := st.HistoryPage(ctx, name, 1, 1000); err != nil || len(p) != len(kept)-1 {
			t.Fatalf("%s: history page from 1 shows %d runs (%v), want %d", when, len(p), err, len(kept)-1)
		}
		if s, err := st.Status(ctx, name, 1000); err != nil || len(s.History) != len(kept) {
			t.Fatalf("%s: status shows %d runs (%v), want %d", when, len(s.History), err, len(kept))
		}
		if s, err := st.Statuses(ctx, []string{name}, 1000); err != nil || len(s[0].History) != len(kept) {
			t.Fatalf("%s: statuses show %d runs (%v), want %d", when, len(s[0].History), err, len(kept))
		}
		if o, err := st.Overview(ctx, []string{name}, 1000); err != nil || len(o[0].History) != len(kept) ||
			o[0].KeptStarted != started || o[0].KeptSucceeded != ok {
			t.Fatalf("%s: overview shows %d runs, %d started, %d succeeded (%v)", when, len(o[0].History),
				o[0].KeptStarted, o[0].KeptSucceeded, err)
		}
	}
	base := time.Now().Truncate(time.Second).Add(time.Hour)
	k := 0
	runs := func(j *jobState, n int, when string) {
		t.Helper()
		for range n {
			// A run closed (every third failed) and a miss of its own:
			// entries started and succeeded, started and failed, and
			// decided without starting.
			outcome := Succeeded
			if k%3 == 2 {
				outcome = Failed
			}
			fileRun(t, st, j, base.Add(time.Duration(k)*time.Second), outcome)
			k++
			check(when, j.HistoryLimit)
		}
	}
	runs(job(5), 12, "history_limit 5")
	runs(job(2), 6, "lowered to 2")
	runs(job(7), 6, "raised to 7")
	if err := c.HDel(ctx, mk, "h:f").Err(); err != nil {
		t.Fatal(err)
	}
	runs(job(7), 2, "marks lost")
	if err := c.HDel(ctx, mk, "h:n", "h:s", "h:ok").Err(); err != nil {
		t.Fatal(err)
	}
	runs(job(7), 2, "counts lost")
	// The list gone apart from the meta (expired, or lost): counted afresh.
	if err := c.Del(ctx, hk).Err(); err != nil {
		t.Fatal(err)
	}
	runs(job(7), 2, "list lost")
}

// fileRun claims the run of j at at, closes it with outcome, and records a
// miss of an instant of its own (a day later): two history entries.
func fileRun(t *testing.T, st *store.Redis, j *jobState, at time.Time, outcome Outcome) {
	t.Helper()
	ctx := context.Background()
	claim := func(kind store.RunKind, sched, fire time.Time, want store.Answer) claimReq {
		t.Helper()
		r := newClaimReq(j, store.StoreClaim{ID: runID(j.Name, sched), Kind: kind, Sched: sched, Fire: fire,
			Owner: store.NewEpoch(), Overlap: j.Overlap, MaxWait: j.MaxWait})
		r.Suffix = r.ID[len(j.Name)+1:]
		r.Known, r.FenceFloor = j.memo.snapshot()
		res, err := st.Claim(ctx, "a", 2*time.Second, 3*time.Second, storeClaims(r))
		if err != nil || res[0].Status != want {
			t.Fatalf("claim of %s answered %+v, %v; want %s", r.ID, res, err, want)
		}
		j.memo.observe(res[0].Epoch, res[0].Fence)
		return r
	}
	w := claim(store.RunScheduled, at, time.Now(), store.AnswerStarted)
	if res, err := st.Complete(ctx, []store.CompleteReq{{R: &w.StoreClaim, Replica: "a", Outcome: outcome, Attempts: 1}}); err != nil || res[0] != store.CloseOK {
		t.Fatalf("close answered %v, %v", res, err)
	}
	sched := at.Add(24 * time.Hour)
	claim(store.RunMiss, sched, time.Now().Add(-j.StartingDeadline-5*time.Second), store.AnswerMissed)
}
