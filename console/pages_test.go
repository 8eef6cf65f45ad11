package console

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/scheduler"
)

// engineOutcomes are the Outcome constants the engine declares (in its
// store, whose types package scheduler names), read from its source: a new
// outcome is seen here the day it is added, without anyone remembering to
// list it.
func engineOutcomes(t *testing.T) []scheduler.Outcome {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), "../scheduler/internal/store", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []scheduler.Outcome
	for _, f := range pkgs["store"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Outcome" {
					continue
				}
				for _, val := range v.Values {
					lit, ok := val.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("an Outcome constant that is not a string literal: %#v", val)
					}
					out = append(out, scheduler.Outcome(strings.Trim(lit.Value, "\"`")))
				}
			}
		}
	}
	// SPEC §6's 5 decisions and 7 ends, and running and waiting: fewer
	// means the source was not read as expected.
	if len(out) < 14 {
		t.Fatalf("read %d Outcome constants from ../scheduler/internal/store: %v", len(out), out)
	}
	return out
}

// Every outcome of the engine has its symbol, words and colour class in
// the console (skipped_blackout had none: it showed "?" and its raw
// name), the class has a colour in the style sheet, and the runs page has
// a filter that finds it.
func TestEveryOutcomeIsShown(t *testing.T) {
	t.Parallel()
	css, err := assetFiles.ReadFile("assets/style.css")
	if err != nil {
		t.Fatal(err)
	}
	unknown := outcomeOf("no-such-outcome")
	for _, o := range engineOutcomes(t) {
		v := outcomeOf(o)
		if v == unknown || v.Symbol == "" || v.Words == "" || strings.Contains(v.Words, "_") {
			t.Errorf("outcome %q is shown as %+v: no symbol or words of its own", o, v)
		}
		if !regexp.MustCompile(`\.outcome\.` + v.Class + `\b`).Match(css) {
			t.Errorf("outcome %q: class %q has no colour in style.css", o, v.Class)
		}
		if o == scheduler.Started {
			continue // a started run's record shows its end, or running
		}
		r := scheduler.Run{Decision: o}
		if !strings.HasPrefix(string(o), "skipped") && o != scheduler.Missed {
			r = scheduler.Run{Decision: scheduler.Started, Outcome: o}
		}
		found := ""
		for _, f := range runOutcomes[1:] {
			if matchOutcome(f, r) {
				found = f
				break
			}
		}
		if found == "" {
			t.Errorf("outcome %q: no filter of the runs page finds it", o)
		}
	}
}

// A running run whose lease ran out unrenewed (its replica frozen, dead or
// cut off from the store) says so, not "lease 0s left", which reads as a
// healthy run about to renew.
func TestRunningWithExpiredLease(t *testing.T) {
	c := &Console{}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	o := scheduler.Overview{LeaseUntil: map[string]time.Time{"j@a": now.Add(-7 * time.Second), "j@b": now.Add(4 * time.Second)}}
	o.Running = []scheduler.Run{{ID: "j@a", Replica: "r1", StartedAt: now.Add(-time.Minute)}, {ID: "j@b", Replica: "r2", StartedAt: now}}
	row := c.row(scheduler.Job{Name: "j", Schedule: "@every 1m"}, o, now)
	if len(row.Running) != 2 {
		t.Fatalf("running: %+v", row.Running)
	}
	if a := row.Running[0]; a.LeaseLeft != "" || a.LeaseExpired != "7s" {
		t.Errorf("a run whose lease ran out 7s ago: left %q, expired %q", a.LeaseLeft, a.LeaseExpired)
	}
	if b := row.Running[1]; b.LeaseLeft != "4s" || b.LeaseExpired != "" {
		t.Errorf("a run with 4s of lease left: left %q, expired %q", b.LeaseLeft, b.LeaseExpired)
	}
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"jobs", "job"} {
		var found bool
		for _, tpl := range pages[name].Templates() {
			if tpl.Tree != nil && strings.Contains(tpl.Tree.Root.String(), ".LeaseExpired") {
				found = true
			}
		}
		if !found {
			t.Errorf("the %s page does not show LeaseExpired", name)
		}
	}
}

// A run that ended within the millisecond it started (the records keep
// milliseconds) took "<1ms", not the "—" of a run that has no duration
// (not started, not ended): a quick job read as one that never ran.
func TestDurationOfAQuickRun(t *testing.T) {
	t.Parallel()
	took, ok := funcs["took"].(func(time.Time, time.Time) string)
	if !ok {
		t.Fatal("the pages have no took(started, finished)")
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		started, finished time.Time
		want              string
	}{
		{at, at, "<1ms"},
		{at, at.Add(1500 * time.Microsecond), "2ms"},
		{at, at.Add(90 * time.Second), "1m30s"},
		{at, time.Time{}, "—"},
		{time.Time{}, at, "—"},
	} {
		if got := took(tc.started, tc.finished); got != tc.want {
			t.Errorf("took(%v, %v) = %q, want %q", tc.started, tc.finished, got, tc.want)
		}
	}
	// The pages use it: a history row of a run of 0 ms says <1ms.
	for _, page := range []string{"job.html", "jobs.html", "runs.html", "run.html"} {
		src, err := templateFiles.ReadFile("templates/" + page)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "Duration}}") || !strings.Contains(string(src), "{{took ") {
			t.Errorf("%s shows a run's duration without took", page)
		}
	}
}
