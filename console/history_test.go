package console_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// The success ratio on the jobs page and on a job's page is over the job's
// whole kept history, not over the runs either page reads (the last one on
// the jobs page, the timeline's 60 on a job's page).
func TestSuccessRatioOverKeptHistory(t *testing.T) {
	var n atomic.Int64
	c := newClusterOf(t, 1, []scheduler.Job{{Name: "flip", Schedule: "@every 1h", HistoryLimit: 70,
		Handler: jobs.Func(func(context.Context) error {
			if n.Add(1) == 1 {
				return errors.New("the first run fails")
			}
			return nil
		})}})
	for range 62 {
		c.runOnce(t, "flip")
	}
	h := c.console(t, console.Config{})
	for _, path := range []string{"/", "/jobs/flip"} {
		if body := get(t, h, path).Body.String(); !strings.Contains(body, "98% of 62") {
			t.Errorf("%s does not show the ratio over the 62 runs kept (98%% of 62)", path)
		}
	}
}
