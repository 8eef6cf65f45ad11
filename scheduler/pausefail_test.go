package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// Three replicas run a job that always fails: after pause_after_failures
// runs in a row end failed, every replica stops starting it (the later
// instants are recorded skipped_paused); resume lets exactly that many fail
// again before the next pause.
func TestPauseAfterFailuresAcrossReplicas(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		fail := func(context.Context) error { return errors.New("downstream refused") }
		c.replicas(3, []scheduler.Job{{Name: "flaky", Schedule: "@every 1s", PauseAfterFailures: 3,
			Handler: c.ledger.Job(fail)}})
		time.Sleep(15 * time.Second)
		ctx := context.Background()
		st, err := c.ctl.Status(ctx, "flaky", 50)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Paused || st.ConsecutiveFailures != 3 || !strings.Contains(st.PausedWhy, "3 runs in a row") {
			t.Fatalf("status: paused %v, failures %d, why %q", st.Paused, st.ConsecutiveFailures, st.PausedWhy)
		}
		if o := c.outcomes("flaky"); o[scheduler.Failed] != 3 || o[scheduler.SkippedPaused] < 5 {
			t.Fatalf("outcomes %v: want 3 failed, then skipped_paused", o)
		}
		var tipped []string
		for _, r := range c.history("flaky") {
			if r.Paused != "" {
				tipped = append(tipped, r.ID+" "+string(r.Outcome))
			}
		}
		if len(tipped) != 1 || !strings.HasSuffix(tipped[0], " failed") {
			t.Fatalf("records saying they paused the job: %v; want the third failure only", tipped)
		}
		if err := c.ctl.Resume(ctx, "flaky"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second)
		c.stop()
		if o := c.outcomes("flaky"); o[scheduler.Failed] != 6 {
			t.Fatalf("outcomes after resume %v: want 3 more failed, then paused again", o)
		}
		if d := c.ledger.Duplicates(); len(d) > 0 {
			t.Errorf("duplicates: %v", d)
		}
	})
}
