package console

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func TestWords(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	bar := map[string]tlBar{}
	for _, b := range tl.Bars {
		bar[b.ID] = b
	}
	live := bar["j@4"]
	if !live.Running || live.X+live.W > tlWidth || live.Class != "run" {
		t.Errorf("running bar %+v", live)
	}
	if a, b := bar["j@1"], bar["j@3"]; a.Y == b.Y || a.X >= b.X || a.Class != "ok" || b.Class != "bad" {
		t.Errorf("bars on the wrong lanes or out of order: %+v %+v", a, b)
	}
	if !strings.Contains(tl.Marks[0].Title, "skipped (overlap)") {
		t.Errorf("mark %q", tl.Marks[0].Title)
	}
	if empty := drawTimeline(nil, nil, now); !empty.Empty {
		t.Error("no runs: not empty")
	}
}

// Sub-second runs one after another on one lane were drawn on top of each
// other, each widened to show its symbol: a failure among them hidden under
// the next success. No two bars of a lane may overlap, on either timeline,
// and every run stays counted, its outcome's symbol kept.
func TestTimelineBarsOfALaneNeverOverlap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var hist []scheduler.Run
	add := func(id string, at, took time.Duration, o scheduler.Outcome) {
		hist = append(hist, scheduler.Run{ID: "j@" + id, Replica: "a", Decision: scheduler.Started, Outcome: o,
			ScheduledAt: now.Add(at), StartedAt: now.Add(at), FinishedAt: now.Add(at + took)})
	}
	// Four runs of a few milliseconds, 100 ms apart, a failure among them;
	// a lone run later; a long run; a burst right at the end, against the
	// timeline's right edge.
	for i, o := range []scheduler.Outcome{scheduler.Succeeded, scheduler.Failed, scheduler.Succeeded, scheduler.Succeeded} {
		add(fmt.Sprint("burst", i), -60*time.Second+time.Duration(i)*100*time.Millisecond, 5*time.Millisecond, o)
	}
	add("lone", -40*time.Second, 10*time.Millisecond, scheduler.Succeeded)
	add("long", -30*time.Second, 20*time.Second, scheduler.Succeeded)
	for i := range 3 {
		add(fmt.Sprint("end", i), -300*time.Millisecond+time.Duration(i)*100*time.Millisecond, 5*time.Millisecond, scheduler.TimedOut)
	}
	for _, tl := range []*timeline{drawTimeline(hist, nil, now), drawNarrowTimeline(hist, nil, now)} {
		runs := 0
		for i, a := range tl.Bars {
			runs += a.Runs
			if !a.Sym || a.X+a.W > tl.Width {
				t.Errorf("%s: bar %s (%q) shows no symbol or leaves the timeline: x %.1f w %.1f", tl.Class, a.ID, a.Label, a.X, a.W)
			}
			for _, b := range tl.Bars[i+1:] {
				if a.Y == b.Y && a.X < b.X+b.W && b.X < a.X+a.W {
					t.Errorf("%s: bars %s [%.1f, %.1f] and %s [%.1f, %.1f] overlap on one lane", tl.Class, a.ID, a.X, a.X+a.W, b.ID, b.X, b.X+b.W)
				}
			}
		}
		if runs != len(hist) {
			t.Errorf("%s: the bars stand for %d runs, want %d", tl.Class, runs, len(hist))
		}
		labels := map[string]tlBar{}
		for _, b := range tl.Bars {
			labels[b.Label] = b
		}
		// The burst: one bar, red, that says a run failed and links to it.
		if b, ok := labels["1✗ 3✓"]; !ok || b.Class != "bad" || b.ID != "j@burst1" || !strings.Contains(b.Title, "4 runs") || !strings.Contains(b.Title, "1 failed") {
			t.Errorf("%s: the burst's bar is %+v (labels %v)", tl.Class, b, slices.Collect(maps.Keys(labels)))
		}
		if b, ok := labels["3◷"]; !ok || b.Runs != 3 {
			t.Errorf("%s: the burst at the right edge is %+v", tl.Class, b)
		}
	}
}

// A paused job skips an instant every second: their triangles, 12 units
// wide, were drawn over each other, a miss among them hidden. Marks too
// close to draw apart share one, with their count, coloured by the worst.
func TestTimelineMarksNeverOverlap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	hist := []scheduler.Run{{ID: "j@ran", Replica: "a", Decision: scheduler.Started, Outcome: scheduler.Succeeded,
		ScheduledAt: now.Add(-90 * time.Second), StartedAt: now.Add(-90 * time.Second), FinishedAt: now.Add(-89 * time.Second)}}
	for i := range 60 {
		d := scheduler.SkippedPaused
		if i == 30 {
			d = scheduler.Missed
		}
		hist = append(hist, scheduler.Run{ID: fmt.Sprint("j@", i), Decision: d, ScheduledAt: now.Add(time.Duration(i-60) * time.Second)})
	}
	for _, tl := range []*timeline{drawTimeline(hist, nil, now), drawNarrowTimeline(hist, nil, now)} {
		n, missed := 0, false
		for i, a := range tl.Marks {
			n += a.Runs
			if (a.Runs > 1) != (a.Label != "") || a.Right > tl.Width {
				t.Errorf("%s: mark %s stands for %d instants, label %q, extent [%.1f, %.1f]", tl.Class, a.ID, a.Runs, a.Label, a.Left, a.Right)
			}
			if a.ID == "j@30" {
				missed = a.Class == "bad" && strings.Contains(a.Title, "1 missed")
			}
			for _, b := range tl.Marks[i+1:] {
				if a.Left < b.Right && b.Left < a.Right {
					t.Errorf("%s: marks %s [%.1f, %.1f] and %s [%.1f, %.1f] overlap", tl.Class, a.ID, a.Left, a.Right, b.ID, b.Left, b.Right)
				}
			}
		}
		if n != 60 || !missed {
			t.Errorf("%s: the marks stand for %d instants (want 60); the miss shows: %v", tl.Class, n, missed)
		}
	}
}
