package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
)

// A job without state in Redis may be new or may be one whose state Redis
// lost: its runs due within the margin are recorded missed either way (they
// may have run before a loss), but the record says which it can tell. A
// replica that remembered the job's epoch knows it is a loss; one that
// never saw the job cannot tell a new job from a loss, and says so. On a
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
	claim := func(s *store, j *jobState, known string) claimRes {
		t.Helper()
		r := claimOf(j, at, 's', "o1")
		r.known = known
		res, err := s.claim(ctx, "r1", skew, ttl, []claimReq{r})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	errorOf := func(s *store, j *jobState) string {
		t.Helper()
		rec, _ := recordOf(t, s, c, j, runID(j.Name, at))
		return rec["error"]
	}
	for _, tc := range []struct {
		name      string
		ephemeral bool
		known     string // the epoch the asking replica remembers
		want      answer
		why       string // the missed record's error starts so
	}{
		{"new or lost", false, "", answerMissed, "Redis held no state of this job when this run was due: a new job"},
		{"lost", false, "e-before", answerMissed, "Redis lost data"},
		{"new", true, "", answerStarted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newStore(c, config{prefix: "nj-" + strings.ReplaceAll(tc.name, " ", "-"), ephemeral: tc.ephemeral})
			if err != nil {
				t.Fatal(err)
			}
			j := testJob(t, s, "job", "@every 1s", nil)
			res := claim(s, j, tc.known)
			if res.status != tc.want {
				t.Fatalf("claim of the first instant: %q, want %q", res.status, tc.want)
			}
			if tc.why != "" {
				if e := errorOf(s, j); !strings.HasPrefix(e, tc.why) {
					t.Errorf("missed with %q, want it to start %q", e, tc.why)
				}
			}
		})
	}
	// A manual request that creates the job's state: on an ephemeral store
	// no floor, so the next scheduled instant runs as well.
	s, err := newStore(c, config{prefix: "nj-trigger", ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	j := testJob(t, s, "job", "@every 1s", nil)
	if err := s.trigger(ctx, j.Name, j.Name+"@manual-1"); err != nil {
		t.Fatal(err)
	}
	if res := claim(s, j, ""); res.status != answerStarted {
		t.Errorf("after a trigger created the state of a job on an ephemeral store: %q, want started", res.status)
	}
}
