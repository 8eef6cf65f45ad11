package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// pauseStores runs fn on a real redis-server and on miniredis.
func pauseStores(t *testing.T, fn func(t *testing.T, s *store.Redis, c *redis.Client)) {
	t.Run("redis-server", func(t *testing.T) {
		s, c := benchStore(t)
		fn(t, s, c)
	})
	t.Run("miniredis", func(t *testing.T) {
		_, c := redistest.Mini(t)
		s, err := store.NewRedis(c, store.BackendConfig{Prefix: "mini"})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s, c)
	})
}

// pauseProbe claims and closes runs of one job, one instant per call.
type pauseProbe struct {
	t   *testing.T
	s   *store.Redis
	j   *jobState
	at  time.Time
	ctl *Control
}

func newPauseProbe(t *testing.T, s *store.Redis, c *redis.Client, mod func(*Job)) *pauseProbe {
	j := testJob(t, s, "flaky", "@every 1s", func(j *Job) {
		j.StartingDeadline = time.Minute
		if mod != nil {
			mod(j)
		}
	})
	seed(t, c, j)
	// Instants in the recent past, inside the starting deadline, rising.
	return &pauseProbe{t: t, s: s, j: j, at: time.Now().Truncate(time.Second).Add(-40 * time.Second),
		ctl: &Control{store: s}}
}

// claim claims the next instant and returns its request and the answer.
func (p *pauseProbe) claim() (claimReq, store.ClaimRes) {
	p.t.Helper()
	p.at = p.at.Add(time.Second)
	r := claimOf(p.j, p.at, 's', store.NewEpoch())
	res, err := p.s.Claim(context.Background(), "r1", 2*time.Second, 3*time.Second, storeClaims(r))
	if err != nil {
		p.t.Fatal(err)
	}
	return r, res[0]
}

// end claims the next instant, which must start, and closes it with o.
func (p *pauseProbe) end(o Outcome) {
	p.t.Helper()
	r, res := p.claim()
	if res.Status != "started" {
		p.t.Fatalf("claim of %s: %+v, want started", r.ID, res)
	}
	got, err := p.s.Complete(context.Background(), []store.CompleteReq{{R: &r.StoreClaim, Replica: "r1", Outcome: o, Attempts: 1}})
	if err != nil || got[0] != "ok" {
		p.t.Fatalf("complete %s: %v %v", r.ID, got, err)
	}
}

func (p *pauseProbe) status() *Status {
	p.t.Helper()
	st, err := p.ctl.Status(context.Background(), p.j.Name, 20)
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}

// After pause_after_failures runs in a row end badly the job is paused in
// the store: the next claim is skipped_paused, the status and the run that
// paused it say why; a success in between resets the count; resume clears
// it.
func TestPauseAfterFailures(t *testing.T) {
	pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
		p := newPauseProbe(t, s, c, func(j *Job) { j.PauseAfterFailures = 3 })
		p.end(Failed)
		p.end(TimedOut)
		if st := p.status(); st.Paused || st.ConsecutiveFailures != 2 {
			t.Fatalf("after 2 bad ends: paused %v, failures %d; want not paused, 2", st.Paused, st.ConsecutiveFailures)
		}
		p.end(Succeeded)
		if st := p.status(); st.ConsecutiveFailures != 0 {
			t.Fatalf("a success left the count at %d", st.ConsecutiveFailures)
		}
		p.end(Failed)
		p.end(Interrupted) // neither good nor bad: the count stands
		p.end(Failed)
		if st := p.status(); st.Paused {
			t.Fatalf("paused after 2 failures and an interruption: %+v", st)
		}
		p.end(LeaseLost)
		st := p.status()
		if !st.Paused || st.ConsecutiveFailures != 3 || !strings.Contains(st.PausedWhy, "pause_after_failures: 3") {
			t.Fatalf("after 3 bad ends in a row: paused %v, failures %d, why %q", st.Paused, st.ConsecutiveFailures, st.PausedWhy)
		}
		last := st.History[0]
		if last.Outcome != LeaseLost || !strings.Contains(last.Paused, "3 runs in a row") {
			t.Fatalf("the run that paused the job: %+v; want its record to say why", last)
		}
		for _, r := range st.History[1:] {
			if r.Paused != "" {
				t.Errorf("run %s says it paused the job: %q", r.ID, r.Paused)
			}
		}
		if _, res := p.claim(); res.Status != "skipped_paused" {
			t.Fatalf("claim after the pause: %+v, want skipped_paused", res)
		}
		if err := p.ctl.Resume(context.Background(), p.j.Name); err != nil {
			t.Fatal(err)
		}
		if st := p.status(); st.Paused || st.ConsecutiveFailures != 0 || st.PausedWhy != "" {
			t.Fatalf("after resume: %+v", st)
		}
		// The count starts again from zero: two more failures do not pause.
		p.end(Failed)
		p.end(Failed)
		if st := p.status(); st.Paused || st.ConsecutiveFailures != 2 {
			t.Fatalf("after resume and 2 failures: paused %v, failures %d", st.Paused, st.ConsecutiveFailures)
		}
	})
}

// Without pause_after_failures the count is kept, but nothing pauses.
func TestNoPauseWithoutLimit(t *testing.T) {
	pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
		p := newPauseProbe(t, s, c, nil)
		for range 5 {
			p.end(Failed)
		}
		if st := p.status(); st.Paused || st.ConsecutiveFailures != 5 {
			t.Fatalf("paused %v, failures %d; want not paused, 5", st.Paused, st.ConsecutiveFailures)
		}
	})
}

// A run the cluster closes lease_lost (its replica stopped renewing) counts
// too: the job pauses without its holder ever reporting.
func TestPauseAfterClusterClosedLeaseLost(t *testing.T) {
	pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
		p := newPauseProbe(t, s, c, func(j *Job) { j.PauseAfterFailures = 1; j.Lease = 100 * time.Millisecond })
		r, res := p.claim()
		if res.Status != "started" {
			t.Fatalf("claim: %+v", res)
		}
		ctx := context.Background()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := s.Renew(ctx, []store.RenewReq{{Job: p.j.spec, ID: r.ID, Owner: r.Owner}})
			if err != nil {
				t.Fatal(err)
			}
			if got[0] == "lost" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the lease never expired")
			}
			time.Sleep(150 * time.Millisecond) // the lease's own expiry, on Redis' clock
		}
		st := p.status()
		if !st.Paused || st.ConsecutiveFailures != 1 {
			t.Fatalf("after a lease lost: paused %v, failures %d", st.Paused, st.ConsecutiveFailures)
		}
		if h := st.History[0]; h.Outcome != LeaseLost || h.Paused == "" {
			t.Fatalf("the lease_lost record: %+v; want it to say it paused the job", h)
		}
	})
}

func TestPauseAfterFailuresValidation(t *testing.T) {
	j := Job{Name: "x", Schedule: "@every 1s", Handler: testJob(t, &store.Redis{Prefix: "p"}, "x", "@every 1s", nil).Handler,
		PauseAfterFailures: -1}
	err := j.Validate()
	if err == nil || !strings.Contains(err.Error(), "PauseAfterFailures") {
		t.Fatalf("Validate: %v", err)
	}
}

// An instant inside a blackout window is recorded skipped_blackout by the
// claim, on a real Redis as on miniredis; one outside it starts.
func TestClaimRecordsBlackout(t *testing.T) {
	pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
		p := newPauseProbe(t, s, c, nil)
		from := p.at.Add(time.Second) // the next instant claimed
		w, errs := Blackout{From: from, To: from.Add(time.Second)}.parse()
		if errs != nil {
			t.Fatal(errs)
		}
		p.j.blackouts = blackouts{w}
		r, res := p.claim()
		if res.Status != "skipped_blackout" {
			t.Fatalf("claim of %s inside the window: %+v", r.ID, res)
		}
		if got, err := p.ctl.Get(context.Background(), r.ID); err != nil || got == nil || got.Outcome != SkippedBlackout {
			t.Fatalf("record of %s: %+v, %v", r.ID, got, err)
		}
		if r, res := p.claim(); res.Status != "started" {
			t.Fatalf("claim of %s outside the window: %+v", r.ID, res)
		}
	})
}

// Slots are numbered 1..concurrency, the lowest free first; a slot whose
// holder lost its lease goes to the next run with a higher token, so a sink
// keyed by slot refuses the stale holder (real Redis and miniredis).
func TestSlotsAreNumberedAndReused(t *testing.T) {
	pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
		p := newPauseProbe(t, s, c, func(j *Job) { j.Concurrency = 3; j.Lease = 200 * time.Millisecond })
		ctx := context.Background()
		var held []claimReq
		tokens := map[int]int64{}
		for want := 1; want <= 3; want++ {
			r, res := p.claim()
			if res.Status != "started" || res.Slot != want {
				t.Fatalf("claim %d: %+v, want started in slot %d", want, res, want)
			}
			r.Slot = res.Slot
			tokens[res.Slot] = res.Fence
			held = append(held, r)
		}
		if _, res := p.claim(); res.Status != "skipped_overlap" {
			t.Fatalf("a fourth run with 3 slots held: %+v", res)
		}
		// Slot 2's holder ends; the next run takes slot 2.
		if got, err := s.Complete(ctx, []store.CompleteReq{{R: &held[1].StoreClaim, Replica: "r1", Outcome: Succeeded, Attempts: 1}}); err != nil || got[0] != "ok" {
			t.Fatalf("complete: %v %v", got, err)
		}
		if h, _ := p.ctl.History(ctx, p.j.Name, 5); len(h) == 0 || h[0].Slot != 2 {
			t.Fatalf("the record of slot 2's run: %+v", h)
		}
		r, res := p.claim()
		if res.Status != "started" || res.Slot != 2 || res.Fence <= tokens[2] {
			t.Fatalf("after slot 2 freed: %+v; want slot 2 with a token above %d", res, tokens[2])
		}
		// Every holder stops renewing: once the leases ran out, the next
		// runs take slots 1.. again, each with a token above its slot's old.
		tokens[2] = res.Fence
		deadline := time.Now().Add(30 * time.Second)
		for {
			// Read only: the lease's expiry against Redis' clock.
			exp, err := c.ZScore(ctx, s.Key(p.j.Name, "slots"), r.ID).Result()
			now, terr := c.Time(ctx).Result()
			if err != nil || terr != nil {
				t.Fatal(err, terr)
			}
			if int64(exp) < now.UnixMilli() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the lease never expired")
			}
			time.Sleep(50 * time.Millisecond)
		}
		for want := 1; want <= 3; want++ {
			_, res := p.claim()
			if res.Status != "started" || res.Slot != want || res.Fence <= tokens[want] {
				t.Fatalf("claim after the leases expired: %+v; want slot %d with a token above %d", res, want, tokens[want])
			}
		}
	})
}

// A run decided after its starting deadline (its replica was frozen, or
// Redis out of reach) that could not have started anyway is recorded as
// what kept it from starting: skipped_paused for a job paused in the table
// or in the store, skipped_blackout inside a blackout window — never
// missed, which would count, alert and notify a miss of a run nobody was to
// run. A late run of a job that is neither is still missed.
func TestLateRunThatCouldNotStartIsSkippedNotMissed(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(t *testing.T, p *pauseProbe)
		want Outcome
	}{
		{"paused in the table", func(t *testing.T, p *pauseProbe) { p.j.spec.Paused = true }, SkippedPaused},
		{"paused in the store", func(t *testing.T, p *pauseProbe) {
			if err := p.ctl.Pause(context.Background(), p.j.Name); err != nil {
				t.Fatal(err)
			}
		}, SkippedPaused},
		{"inside a blackout", func(t *testing.T, p *pauseProbe) {
			w, errs := Blackout{From: p.at.Add(-time.Hour), To: p.at.Add(time.Hour)}.parse()
			if errs != nil {
				t.Fatal(errs)
			}
			p.j.blackouts = blackouts{w}
		}, SkippedBlackout},
		{"neither", func(t *testing.T, p *pauseProbe) {}, Missed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pauseStores(t, func(t *testing.T, s *store.Redis, c *redis.Client) {
				// Instants 40 s ago with a 1 s starting deadline: every claim
				// comes after the deadline, within the records' retention
				// (which covers a wait for a slot: 5 minutes).
				p := newPauseProbe(t, s, c, func(j *Job) {
					j.StartingDeadline, j.Overlap, j.MaxWait = time.Second, OverlapWait, 5*time.Minute
				})
				tc.mod(t, p)
				for _, kind := range []store.RunKind{'s', 'x'} {
					p.at = p.at.Add(time.Second)
					r := claimOf(p.j, p.at, kind, store.NewEpoch())
					res, err := p.s.Claim(context.Background(), "r1", 2*time.Second, 3*time.Second, storeClaims(r))
					if err != nil {
						t.Fatal(err)
					}
					if string(res[0].Status) != string(tc.want) {
						t.Fatalf("late claim (kind %c) of %s: %+v, want %s", kind, r.ID, res[0], tc.want)
					}
					if got, err := p.ctl.Get(context.Background(), r.ID); err != nil || got == nil || got.Outcome != tc.want {
						t.Fatalf("record of %s: %+v, %v; want %s", r.ID, got, err, tc.want)
					}
				}
			})
		})
	}
}
