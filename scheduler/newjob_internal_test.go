package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// A job without state in Redis may be new or may be one whose state Redis
// lost: its runs due within the margin never start either way (they may
// have run before a loss). A replica that remembered the job's epoch knows
// it is a loss, and they are recorded missed; when no replica that asked
// had seen the job, it is new as far as anyone knows: they are refused
// without a record, so a new job (or cluster) reports no miss. On a
// store that began empty with the process (WithEphemeralStore: the
// daemon's embedded default) a job without state is new: its first
// instants run.
func TestJobWithoutStateNewOrLost(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	ctx := context.Background()
	const skew, ttl = 2 * time.Second, 3 * time.Second
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Truncate(time.Millisecond)
	claim := func(s *store.Redis, j *jobState, known string) store.ClaimRes {
		t.Helper()
		r := claimOf(j, at, 's', "o1")
		r.Known = known
		res, err := s.Claim(ctx, "r1", skew, ttl, storeClaims(r))
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	errorOf := func(s *store.Redis, j *jobState) string {
		t.Helper()
		rec, _ := recordOf(t, s, c, j, runID(j.Name, at))
		return rec["error"]
	}
	for _, tc := range []struct {
		name      string
		ephemeral bool
		known     string // the epoch the asking replica remembers
		want      store.Answer
		why       string // the missed record's error starts so
	}{
		{"new or lost", false, "", store.AnswerRefused, ""},
		{"lost", false, "e-before", store.AnswerMissed, "Redis lost data"},
		{"new", true, "", store.AnswerStarted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.NewRedis(c, store.BackendConfig{Prefix: "nj-" + strings.ReplaceAll(tc.name, " ", "-"), Ephemeral: tc.ephemeral})
			if err != nil {
				t.Fatal(err)
			}
			j := testJob(t, s, "job", "@every 1s", nil)
			res := claim(s, j, tc.known)
			if res.Status != tc.want {
				t.Fatalf("claim of the first instant: %q, want %q", res.Status, tc.want)
			}
			if tc.why != "" {
				if e := errorOf(s, j); !strings.HasPrefix(e, tc.why) {
					t.Errorf("missed with %q, want it to start %q", e, tc.why)
				}
			}
			if tc.want == store.AnswerRefused {
				// Never the job's to run: no record, no history entry,
				// no miss in the statistics the metrics export.
				if res.Reason != store.ReasonBeforeState {
					t.Errorf("refused for %q, want %q", res.Reason, store.ReasonBeforeState)
				}
				rec, entry := recordOf(t, s, c, j, runID(j.Name, at))
				if len(rec) > 0 || entry != nil {
					t.Errorf("an instant before the job's state existed left a record %v / history entry %v", rec, entry)
				}
				if n, _ := c.HExists(ctx, j.metaKey, "at:missed").Result(); n {
					t.Error("a miss was noted in the job's statistics")
				}
				// A replica that remembers the job (another epoch) knows
				// it was lost: the rest of the floor is recorded missed.
				j.memo.observe("e-remembered", 0)
				r := claimOf(j, at.Add(time.Millisecond), 's', "o2")
				res2, err := s.Claim(ctx, "r2", skew, ttl, storeClaims(r))
				if err != nil {
					t.Fatal(err)
				}
				if res2[0].Status != store.AnswerMissed {
					t.Fatalf("a remembering replica's claim under the floor: %q, want missed", res2[0].Status)
				}
				rec, _ = recordOf(t, s, c, j, r.ID)
				if !strings.HasPrefix(rec["error"], "Redis lost data") {
					t.Errorf("a remembered loss recorded missed with %q", rec["error"])
				}
			}
		})
	}
	// A manual request that creates the job's state: on an ephemeral store
	// no floor, so the next scheduled instant runs as well.
	s, err := store.NewRedis(c, store.BackendConfig{Prefix: "nj-trigger", Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	j := testJob(t, s, "job", "@every 1s", nil)
	if err := s.Trigger(ctx, j.Name, j.Name+"@manual-1"); err != nil {
		t.Fatal(err)
	}
	if res := claim(s, j, ""); res.Status != store.AnswerStarted {
		t.Errorf("after a trigger created the state of a job on an ephemeral store: %q, want started", res.Status)
	}
}
