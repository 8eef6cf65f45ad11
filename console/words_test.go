package console

import (
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func TestWords(t *testing.T) {
	for spec, want := range map[string]string{
		"@hourly":                      "every hour, on the hour",
		"@every 90s":                   "every 1m30s",
		"*/5 * * * *":                  "every 5 minutes",
		"0 3 * * *":                    "every day at 03:00",
		"30 2 * * 1-5":                 "at 02:30 on Mon–Fri",
		"CRON_TZ=Asia/Tokyo 0 9 * * *": "every day at 09:00",
		"*/10 * * * * *":               "every 10 seconds",
		"15 * * * *":                   "every hour at minute 15",
		"0 0 1 * *":                    "at 00:00 on day 1 of the month",
		"0 0 * 1 *":                    "", // months: shown as written only
		"5 4 * * sun":                  "at 04:05 on Sun",
	} {
		if got := words(spec); got != want {
			t.Errorf("words(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond:       "1.5s",
		90 * time.Second:              "1m30s",
		12*time.Hour + 40*time.Minute: "12h40m",
		3 * time.Hour:                 "3h",
		5 * 24 * time.Hour:            "5d",
		40 * time.Minute:              "40m",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%s) = %q, want %q", d, got, want)
		}
	}
}

// One lane per replica that ran the job, a bar per started run (running
// ones to now), a mark per skipped or missed instant.
func TestTimeline(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	run := func(id, replica string, start, end time.Duration, d, o scheduler.Outcome) scheduler.Run {
		r := scheduler.Run{ID: "j@" + id, Replica: replica, ScheduledAt: now.Add(start), Decision: d, Outcome: o}
		if d == scheduler.Started {
			r.StartedAt = now.Add(start)
			if end != 0 {
				r.FinishedAt = now.Add(end)
			}
		}
		return r
	}
	hist := []scheduler.Run{
		run("3", "b", -20*time.Second, -15*time.Second, scheduler.Started, scheduler.Failed),
		run("2", "", -40*time.Second, 0, scheduler.SkippedOverlap, scheduler.SkippedOverlap),
		run("1", "a", -60*time.Second, -30*time.Second, scheduler.Started, scheduler.Succeeded),
	}
	running := []scheduler.Run{run("4", "a", -5*time.Second, 0, scheduler.Started, scheduler.Running)}
	tl := drawTimeline(hist, running, now)
	var lanes []string
	for _, l := range tl.Lanes {
		lanes = append(lanes, l.Name)
	}
	if strings.Join(lanes, ",") != "a,b,not started" {
		t.Errorf("lanes %v", lanes)
	}
	if len(tl.Bars) != 3 || len(tl.Marks) != 1 {
		t.Fatalf("%d bars, %d marks", len(tl.Bars), len(tl.Marks))
	}
	live := tl.Bars[0]
	if !live.Running || live.X+live.W > tlWidth || live.Class != "run" {
		t.Errorf("running bar %+v", live)
	}
	if a, b := tl.Bars[2], tl.Bars[1]; a.Y == b.Y || a.X >= b.X || a.Class != "ok" || b.Class != "bad" {
		t.Errorf("bars on the wrong lanes or out of order: %+v %+v", a, b)
	}
	if !strings.Contains(tl.Marks[0].Title, "skipped (overlap)") {
		t.Errorf("mark %q", tl.Marks[0].Title)
	}
	if empty := drawTimeline(nil, nil, now); !empty.Empty {
		t.Error("no runs: not empty")
	}
}
