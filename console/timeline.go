package console

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// The timeline of a job's recent runs, drawn on the server as SVG: one lane
// per replica, a bar per started run from its start to its end (or now),
// marks for the instants that were skipped or missed. Overlap skips,
// takeovers after a crash and retries show as shapes, and every bar carries
// its outcome in words (a <title>, and a symbol when it is wide enough).

// A timeline is drawn twice: wide, scaled to a desktop's page, and narrow,
// for a phone (CSS shows one). Scaled down from 1000 units to a phone's
// 370 px its labels were 4 px tall; shown at a width that keeps them
// readable it scrolled sideways and opened on its oldest end, the recent
// runs out of view. The narrow one fits a phone's width with labels of
// about 11 px, every run in view.
const (
	tlWidth       = 1000.0 // the wide SVG's user units; it scales to the page
	tlLabel       = 140.0  // room for the lane names
	tlNarrowWidth = 400.0  // the narrow SVG's, for a phone about 370 px wide
	tlNarrowLabel = 96.0
	tlLaneH       = 30.0
	tlTop         = 8.0
	tlAxis        = 22.0
	// tlMinBar is the narrowest bar: wide enough for its outcome's symbol,
	// so that a sub-second run is never a sliver told by colour alone.
	tlMinBar = 16.0
)

type timeline struct {
	Width, Height float64
	Label         float64 // room for the lane names
	Class         string  // "wide" or "narrow"
	Lanes         []tlLane
	Bars          []tlBar
	Marks         []tlMark
	Ticks         []tlTick
	Empty         bool
	From, To      time.Time
	AxisY         float64
}

type tlLane struct {
	Name  string
	Y, TY float64
}

type tlBar struct {
	ID         string
	X, Y, W, H float64
	TX, TY     float64 // where the symbol goes
	Label      string  // the outcome's symbol
	Sym        bool    // the bar is wide enough for it
	Title      string
	Class      string
	Running    bool
}

type tlMark struct {
	ID, Title, Class, Symbol string
	X, Y                     float64
	Path                     string
}

type tlTick struct {
	X      float64
	Label  string
	Anchor string // text-anchor: the first and last labels stay inside
}

// drawTimeline is the wide timeline.
func drawTimeline(hist, running []scheduler.Run, now time.Time) *timeline {
	return drawTimelineAt(hist, running, now, tlWidth, tlLabel, "wide")
}

// drawNarrowTimeline is the phone's.
func drawNarrowTimeline(hist, running []scheduler.Run, now time.Time) *timeline {
	return drawTimelineAt(hist, running, now, tlNarrowWidth, tlNarrowLabel, "narrow")
}

// drawTimelineAt draws a timeline width units wide, label of them for the
// lane names.
func drawTimelineAt(hist, running []scheduler.Run, now time.Time, width, label float64, class string) *timeline {
	runs := append(slices.Clone(running), hist...)
	t := &timeline{Width: width, Label: label, Class: class}
	if len(runs) == 0 {
		t.Empty, t.Height = true, 40
		return t
	}
	// The window: from the earliest instant shown to now.
	from, to := now, now
	for _, r := range runs {
		at := cmp.Or(r.StartedAt, r.ScheduledAt)
		if !at.IsZero() && at.Before(from) {
			from = at
		}
		if r.FinishedAt.After(to) {
			to = r.FinishedAt
		}
	}
	span := to.Sub(from)
	if span < 10*time.Second {
		span = 10 * time.Second
		from = to.Add(-span)
	}
	// 2% of room either side.
	pad := span / 50
	from, to = from.Add(-pad), to.Add(pad)
	span = to.Sub(from)
	t.From, t.To = from, to
	x := func(at time.Time) float64 {
		return label + float64(at.Sub(from))/float64(span)*(width-label-8)
	}
	// One lane per replica, and a lane more for each run that ran at the
	// same time as another of the same replica (concurrency > 1): such
	// bars never cover each other. Runs one after the other keep one
	// lane, even when their bars, widened to tlMinBar, touch.
	rowOf := map[string]int{} // run id -> its lane
	var names []string
	{
		type placed struct{ end float64 }
		byReplica := map[string][][]placed{}
		repOf := map[string]string{}
		started := slices.Clone(runs)
		slices.SortStableFunc(started, func(a, b scheduler.Run) int {
			return cmp.Or(a.StartedAt, a.ScheduledAt).Compare(cmp.Or(b.StartedAt, b.ScheduledAt))
		})
		var replicas []string
		for _, r := range started {
			if r.Decision != scheduler.Started {
				continue
			}
			if _, ok := byReplica[r.Replica]; !ok {
				replicas = append(replicas, r.Replica)
				byReplica[r.Replica] = nil
			}
			x0 := x(cmp.Or(r.StartedAt, r.ScheduledAt))
			end := r.FinishedAt
			if end.IsZero() {
				end = now
			}
			x1 := x(end)
			rows := byReplica[r.Replica]
			k := 0
			for k < len(rows) && rows[k][len(rows[k])-1].end > x0 {
				k++
			}
			if k == len(rows) {
				rows = append(rows, nil)
			}
			rows[k] = append(rows[k], placed{end: x1})
			byReplica[r.Replica] = rows
			rowOf[r.ID], repOf[r.ID] = k, r.Replica
		}
		slices.Sort(replicas)
		base := map[string]int{}
		for _, rep := range replicas {
			base[rep] = len(names)
			for k := range byReplica[rep] {
				n := rep
				if k > 0 {
					n = fmt.Sprintf("%s (%d)", rep, k+1)
				}
				names = append(names, n)
			}
		}
		for id, k := range rowOf {
			rowOf[id] = base[repOf[id]] + k
		}
	}
	notStarted := len(names)
	names = append(names, "not started")
	for i, n := range names {
		y := tlTop + float64(i)*tlLaneH
		t.Lanes = append(t.Lanes, tlLane{Name: n, Y: y, TY: y + tlLaneH/2 + 4})
	}
	for _, r := range runs {
		oc := outcomeOf(runOutcome(r))
		title := fmt.Sprintf("%s — %s", r.ID, oc.Words)
		if r.Decision != scheduler.Started {
			y := tlTop + float64(notStarted)*tlLaneH + tlLaneH/2
			mx := x(r.ScheduledAt)
			t.Marks = append(t.Marks, tlMark{
				ID: r.ID, Title: title + " at " + r.ScheduledAt.UTC().Format("15:04:05Z"), Class: oc.Class, Symbol: oc.Symbol,
				X: mx, Y: y, Path: fmt.Sprintf("M%.1f %.1f l6 10 h-12 z", mx, y-6),
			})
			continue
		}
		start := cmp.Or(r.StartedAt, r.ScheduledAt)
		end, running := r.FinishedAt, false
		if end.IsZero() {
			end, running = now, true
		}
		x0, x1 := x(start), x(end)
		y := tlTop + float64(rowOf[r.ID])*tlLaneH + 5
		b := tlBar{
			ID: r.ID, X: x0, Y: y, W: max(x1-x0, tlMinBar), H: tlLaneH - 10, Class: oc.Class, Running: running,
			Label: oc.Symbol, Title: fmt.Sprintf("%s: %s → %s (%s), token %d, attempt %d",
				title, start.UTC().Format("15:04:05Z"), endLabel(r, running), human(end.Sub(start)), r.FencingToken, r.Attempts),
		}
		b.Sym = b.W >= 14
		b.TX, b.TY = x0+b.W/2, y+(tlLaneH-10)/2+4
		t.Bars = append(t.Bars, b)
	}
	t.AxisY = tlTop + float64(len(names))*tlLaneH + 4
	t.Height = t.AxisY + tlAxis
	// Five ticks across the wide timeline; three across the narrow one,
	// whose labels would otherwise run into each other.
	ticks := 5
	if width < tlWidth {
		ticks = 3
	}
	for i := range ticks {
		at := from.Add(span * time.Duration(i) / time.Duration(ticks-1))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case ticks - 1:
			anchor = "end"
		}
		t.Ticks = append(t.Ticks, tlTick{X: x(at), Label: at.UTC().Format(tickFormat(span)), Anchor: anchor})
	}
	return t
}

func endLabel(r scheduler.Run, running bool) string {
	if running {
		return "still running"
	}
	return r.FinishedAt.UTC().Format("15:04:05Z")
}

func tickFormat(span time.Duration) string {
	if span > 36*time.Hour {
		return "01-02 15:04Z"
	}
	return "15:04:05Z"
}
