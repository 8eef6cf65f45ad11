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

// The jobs page and a job's page show its pool's use; the job's page links
// the runs holding the pool's slots.
func TestPagesShowPoolUse(t *testing.T) {
	t.Parallel()
	long := jobs.Func(func(ctx context.Context) error {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return nil
	})
	tab := []scheduler.Job{{Name: "exa", Schedule: "@every 1s", Handler: long, Concurrency: 3, Pool: "exports", PoolSize: 2, Lease: time.Second}}
	c := newClusterOf(t, 1, tab)
	c.ctl.UseTable(tab)
	h := c.console(t, console.Config{})
	testkit.WaitFor(t, 15*time.Second, "the pool to fill", func() bool {
		return strings.Contains(get(t, h, "/").Body.String(), "pool exports 2/2")
	})
	body := get(t, h, "/jobs/exa").Body.String()
	if !strings.Contains(body, "<dt>Pool</dt><dd>exports 2/2 in use by ") || !strings.Contains(body, `href="/runs/exa@`) {
		t.Errorf("job page lacks the pool's use:\n%s", body)
	}
}
