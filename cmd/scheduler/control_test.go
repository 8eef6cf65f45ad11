package main

import (
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// status without a job shows, per job, who runs what now: the replica,
// since when and the fencing token of every run in flight (SPEC: status
// [JOB] shows running now with replica, since, token), not only a count.
func TestStatusTableShowsRunsInFlight(t *testing.T) {
	since := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	states := []jobState{
		{Status: &scheduler.Status{Job: "idle"}},
		{Status: &scheduler.Status{Job: "export", Running: []scheduler.Run{
			{ID: "export@2026-11-27T09:30:00Z", Job: "export", Replica: "web-2", StartedAt: since, FencingToken: 1795772191518256, Slot: 1, Attempts: 1},
			{ID: "export@manual-tp5mov179564d59e82", Job: "export", Replica: "web-3", StartedAt: since.Add(time.Minute), FencingToken: 1795772191518257, Slot: 2, Attempts: 2},
		}}},
	}
	var b strings.Builder
	printStatusTable(&b, states)
	out := b.String()
	for _, want := range []string{
		"running now:",
		"export@2026-11-27T09:30:00Z       web-2    2026-11-27T09:30:00Z  1     1795772191518256  1",
		"export@manual-tp5mov179564d59e82  web-3    2026-11-27T09:31:00Z  2     1795772191518257  2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printStatusTable(&b, states[:1])
	if strings.Contains(b.String(), "running now") {
		t.Errorf("nothing runs, yet:\n%s", b.String())
	}
}
