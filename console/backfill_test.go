package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// The job page shows the job's backfill: progress, what ran, and its end;
// the history says which runs were the backfill's.
func TestJobPageShowsBackfill(t *testing.T) {
	c := newCluster(t, 2)
	h := c.console(t, console.Config{})
	if body := get(t, h, "/jobs/sweep").Body.String(); strings.Contains(body, `id="backfill"`) {
		t.Fatal("a backfill shown before any")
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := c.ctl.Backfill(t.Context(), c.table[2], from, from.Add(5*time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "backfill done", func() bool {
		b, _ := c.ctl.BackfillStatus(t.Context(), "sweep")
		return b != nil && b.Done()
	})
	body := get(t, h, "/jobs/sweep").Body.String()
	for _, want := range []string{`<progress value="6" max="6"></progress> 6/6 instants decided · 6 ran · 0 had run before`,
		"parallel 2 · finished", "backfill"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if n := strings.Count(body, ">"+string(scheduler.KindBackfill)+"<"); n != 6 {
		t.Errorf("history shows %d backfill runs, want 6", n)
	}
}
