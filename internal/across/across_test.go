package across

import (
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		want string
		run  scheduler.Run
		ok   bool
	}{
		{"", scheduler.Run{Outcome: scheduler.Succeeded}, true},
		{"bad", scheduler.Run{Outcome: scheduler.LeaseLost}, true},
		{"bad", scheduler.Run{Outcome: scheduler.Missed}, false},
		{"skipped", scheduler.Run{Outcome: scheduler.SkippedBlackout}, true},
		{"running", scheduler.Run{Decision: scheduler.Waiting}, true},
		{"running", scheduler.Run{Outcome: scheduler.Succeeded, Decision: scheduler.Started}, false},
		{"missed", scheduler.Run{Decision: scheduler.Missed}, true},
	}
	for _, c := range cases {
		if got := Match(c.want, c.run); got != c.ok {
			t.Errorf("Match(%q, outcome %q decision %q) = %v, want %v", c.want, c.run.Outcome, c.run.Decision, got, c.ok)
		}
	}
}

func TestSummarize(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tab := []scheduler.Job{{Name: "a"}, {Name: "b", Paused: true}, {Name: "c"}}
	ov := []scheduler.Overview{
		{LastEnded: map[scheduler.Outcome]time.Time{scheduler.Failed: now.Add(-30 * time.Minute)}, Status: scheduler.Status{Running: []scheduler.Run{{}}}},
		{LastEnded: map[scheduler.Outcome]time.Time{scheduler.Missed: now.Add(-3 * time.Hour)}},
		{Status: scheduler.Status{Paused: true}, LastEnded: map[scheduler.Outcome]time.Time{scheduler.TimedOut: now.Add(-25 * time.Hour)}},
	}
	got := Summarize(tab, ov, now)
	want := Summary{Jobs: 3, Running: 1, BadHour: 1, BadDay: 1, MissedHour: 0, MissedDay: 1, Paused: 2}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
}

func TestPerJob(t *testing.T) {
	for jobs, want := range map[int]int{0: 100, 1: 100, 50: 100, 100: 50, 5000: 5} {
		if got := PerJob(jobs); got != want {
			t.Errorf("PerJob(%d) = %d, want %d", jobs, got, want)
		}
	}
}
