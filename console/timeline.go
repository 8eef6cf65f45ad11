package console

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/solocron/solocron/scheduler"
)

// The timeline of a job's recent runs, drawn on the server as SVG: one lane
// per replica, a bar per started run from its start to its end (or now),
// marks for the instants that were skipped or missed. Overlap skips,
// takeovers after a crash and retries show as shapes, and every bar carries
// its outcome in words (a <title>, and a symbol when it is wide enough).
// No two bars of a lane overlap: runs too close to be drawn apart share
// one bar that counts them by outcome.

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
	// tlGlyph is about the width of one character of a bar's label (12 px,
	// bold), tlPadX the room either side of it.
	tlGlyph = 7.5
	tlPadX  = 4.0
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
	Runs       int // how many runs the bar stands for: 1, or more when merged
}

type tlMark struct {
	ID, Title, Class, Symbol string
	X, Y                     float64
	Path                     string
	// Runs is how many instants the mark stands for: more than one when
	// they were too close to draw apart; Label counts them then, at TX.
	Runs        int
	Label       string
	TX, TY      float64
	Left, Right float64 // its extent, the label's included
}

// tlMarkHalf is half a mark's width.
const tlMarkHalf = 6.0

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
	// lane; where their bars, widened to show their symbol, would touch,
	// layoutLane merges them into one bar that counts them.
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
	pieces := map[int][]tlPiece{} // by lane
	var marks []tlPiece
	for _, r := range runs {
		oc := outcomeOf(runOutcome(r))
		title := fmt.Sprintf("%s — %s", r.ID, oc.Words)
		if r.Decision != scheduler.Started {
			marks = append(marks, tlPiece{id: r.ID, x0: x(r.ScheduledAt), oc: oc, start: r.ScheduledAt,
				title: title + " at " + r.ScheduledAt.UTC().Format("15:04:05Z")})
			continue
		}
		start := cmp.Or(r.StartedAt, r.ScheduledAt)
		end, running := r.FinishedAt, false
		if end.IsZero() {
			end, running = now, true
		}
		pieces[rowOf[r.ID]] = append(pieces[rowOf[r.ID]], tlPiece{
			id: r.ID, x0: x(start), x1: x(end), oc: oc, running: running, start: start,
			title: fmt.Sprintf("%s: %s → %s (%s), token %d, attempt %d",
				title, start.UTC().Format("15:04:05Z"), endLabel(r, running), human(end.Sub(start)), r.FencingToken, r.Attempts),
		})
	}
	for row := range len(names) {
		y := tlTop + float64(row)*tlLaneH + 5
		for _, g := range layoutLane(pieces[row], width-2) {
			t.Bars = append(t.Bars, g.bar(y))
		}
	}
	t.Marks = layoutMarks(marks, tlTop+float64(notStarted)*tlLaneH+tlLaneH/2)
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

// tlPiece is one started run on its lane, before bars that would cover
// each other are merged.
type tlPiece struct {
	id, title string
	x0, x1    float64
	start     time.Time
	oc        outcomeView
	running   bool
}

// tlGroup is the runs of one lane drawn as one bar: a single run, or runs
// one after another so close that their bars, widened to show their
// symbol, would cover each other (sub-second runs a second apart). Drawn
// on top of each other, all but the last were lost, a failure among them
// too; merged, the bar says how many of each outcome ("3✓", "2✓ 1✗").
type tlGroup struct {
	pieces      []tlPiece
	left, right float64
}

// layoutLane merges a lane's runs into bars that do not overlap: each
// bar as wide as its label needs, none past limit.
func layoutLane(ps []tlPiece, limit float64) []*tlGroup {
	slices.SortStableFunc(ps, func(a, b tlPiece) int { return cmp.Compare(a.x0, b.x0) })
	var gs []*tlGroup
	for _, p := range ps {
		if n := len(gs); n > 0 && p.x0 < gs[n-1].right {
			gs[n-1].pieces = append(gs[n-1].pieces, p)
		} else {
			gs = append(gs, &tlGroup{pieces: []tlPiece{p}})
		}
		// A bar pushed left by the limit, or widened by its label, may
		// now reach the one before: merge them too.
		for {
			n := len(gs)
			gs[n-1].place(limit)
			if n == 1 || gs[n-1].left >= gs[n-2].right {
				break
			}
			gs[n-2].pieces = append(gs[n-2].pieces, gs[n-1].pieces...)
			gs = gs[:n-1]
		}
	}
	return gs
}

// place sets the group's extent: from its first start to its last end,
// at least as wide as its label, moved left rather than past limit.
func (g *tlGroup) place(limit float64) {
	x0, x1 := g.pieces[0].x0, g.pieces[0].x1
	for _, p := range g.pieces[1:] {
		x0, x1 = min(x0, p.x0), max(x1, p.x1)
	}
	w := max(x1-x0, g.labelWidth())
	if x0+w > limit {
		x0 = limit - w
	}
	g.left, g.right = x0, x0+w
}

func (g *tlGroup) labelWidth() float64 {
	if len(g.pieces) == 1 {
		return tlMinBar
	}
	return max(tlMinBar, 2*tlPadX+tlGlyph*float64(utf8.RuneCountInString(g.label())))
}

// tlSeverity orders the classes of outcomes: a merged bar takes the
// colour of its worst run and links to it.
var tlSeverity = map[string]int{"bad": 5, "warn": 4, "run": 3, "skip": 2, "none": 1, "ok": 0}

// label is the bar's symbol, or for merged runs how many of each outcome,
// the worst first: "3✓", "1✗ 2✓".
func (g *tlGroup) label() string {
	if len(g.pieces) == 1 {
		return g.pieces[0].oc.Symbol
	}
	count := map[outcomeView]int{}
	var kinds []outcomeView
	for _, p := range g.pieces {
		if count[p.oc] == 0 {
			kinds = append(kinds, p.oc)
		}
		count[p.oc]++
	}
	slices.SortStableFunc(kinds, func(a, b outcomeView) int { return tlSeverity[b.Class] - tlSeverity[a.Class] })
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d%s", count[k], k.Symbol))
	}
	return strings.Join(parts, " ")
}

// tlTitleRuns bounds the runs a merged bar's tooltip lists.
const tlTitleRuns = 10

// lead is the run a merged bar links to: the worst, the latest of those.
func (g *tlGroup) lead() tlPiece {
	lead := g.pieces[0]
	for _, p := range g.pieces[1:] {
		if tlSeverity[p.oc.Class] >= tlSeverity[lead.oc.Class] {
			lead = p
		}
	}
	return lead
}

func (g *tlGroup) bar(y float64) tlBar {
	lead := g.lead()
	b := tlBar{
		ID: lead.id, X: g.left, Y: y, W: g.right - g.left, H: tlLaneH - 10, Class: lead.oc.Class,
		Label: g.label(), Title: lead.title, Runs: len(g.pieces),
	}
	for _, p := range g.pieces {
		b.Running = b.Running || p.running
	}
	if len(g.pieces) > 1 {
		b.Title = g.title("runs one after another", lead)
	}
	b.Sym = b.W >= 14
	b.TX, b.TY = b.X+b.W/2, y+(tlLaneH-10)/2+4
	return b
}

// title is a merged bar's tooltip: how many what, of which outcomes, and
// each of them (the first tlTitleRuns).
func (g *tlGroup) title(what string, lead tlPiece) string {
	lines := []string{fmt.Sprintf("%d %s, from %s: %s; links to %s",
		len(g.pieces), what, g.pieces[0].start.UTC().Format("15:04:05Z"), g.words(), lead.id)}
	for i, p := range g.pieces {
		if i == tlTitleRuns {
			lines = append(lines, fmt.Sprintf("… and %d more in the history", len(g.pieces)-i))
			break
		}
		lines = append(lines, p.title)
	}
	return strings.Join(lines, "\n")
}

// words is a merged bar's outcomes in words: "2 succeeded, 1 failed".
func (g *tlGroup) words() string {
	count := map[string]int{}
	var order []string
	for _, p := range g.pieces {
		if count[p.oc.Words] == 0 {
			order = append(order, p.oc.Words)
		}
		count[p.oc.Words]++
	}
	var parts []string
	for _, w := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[w], w))
	}
	return strings.Join(parts, ", ")
}

// layoutMarks draws the instants that did not start as triangles on the
// "not started" lane; instants too close to draw apart (a paused job's
// skips every second) share one triangle with their count beside it,
// coloured by the worst (a miss among skips) and linking to it.
func layoutMarks(ps []tlPiece, y float64) []tlMark {
	slices.SortStableFunc(ps, func(a, b tlPiece) int { return cmp.Compare(a.x0, b.x0) })
	var gs []*tlGroup
	for _, p := range ps {
		if n := len(gs); n > 0 && p.x0-tlMarkHalf < gs[n-1].right {
			gs[n-1].pieces = append(gs[n-1].pieces, p)
		} else {
			gs = append(gs, &tlGroup{pieces: []tlPiece{p}})
		}
		g := gs[len(gs)-1]
		g.left, g.right = g.pieces[0].x0-tlMarkHalf, g.pieces[0].x0+tlMarkHalf
		if len(g.pieces) > 1 {
			g.right += tlPadX/2 + tlGlyph*float64(len(strconv.Itoa(len(g.pieces))))
		}
	}
	var out []tlMark
	for _, g := range gs {
		b := g.bar(y)
		if len(g.pieces) > 1 {
			b.Title = g.title("instants not started", g.lead())
		}
		mx := g.pieces[0].x0
		m := tlMark{ID: b.ID, Title: b.Title, Class: b.Class, Symbol: g.pieces[0].oc.Symbol, X: mx, Y: y,
			Path: fmt.Sprintf("M%.1f %.1f l6 10 h-12 z", mx, y-6), Runs: len(g.pieces), Left: g.left, Right: g.right}
		if m.Runs > 1 {
			m.Label, m.TX, m.TY = strconv.Itoa(m.Runs), mx+tlMarkHalf+tlPadX/2, y+4
		}
		out = append(out, m)
	}
	return out
}
