package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A new cluster (three replicas on a store that holds nothing of the job)
// shows no missed run: the instants before the job's state existed were
// never its to run, and nothing is recorded for them.
func TestNewClusterShowsNoMiss(t *testing.T) {
	t.Parallel()
	c := newClusterOf(t, 3, []scheduler.Job{{Name: "tick", Schedule: "@every 1s",
		Handler: jobs.Func(func(context.Context) error { return nil })},
		{Name: "hourly", Schedule: "@every 1h", Handler: jobs.Func(func(context.Context) error { return nil })}})
	testkit.WaitFor(t, 20*time.Second, "three runs of tick", func() bool {
		h, _ := c.ctl.History(t.Context(), "tick", 100)
		return len(h) >= 3
	})
	h := c.console(t, console.Config{})
	for _, path := range []string{"/", "/jobs/tick"} {
		if body := get(t, h, path).Body.String(); strings.Contains(body, "</span> missed") {
			t.Errorf("%s shows a missed run on a new cluster", path)
		}
	}
	// A job that never ran says so in words, with no symbol before them (a
	// lone "·" read as a stray separator).
	if body := get(t, h, "/jobs/hourly").Body.String(); !strings.Contains(body, `<dd><span class="outcome none">never ran</span></dd>`) {
		t.Errorf("/jobs/hourly does not say its last run as \"never ran\" alone:\n%s", body)
	}
}
