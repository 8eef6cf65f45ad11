//go:build faults

package faults_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// row is one line of the suite's table. Counts of -1 print as "—": the
// scenario has no such figure.
type row struct {
	ID            string // "1", "3b", ...
	Scenario      string
	Runs          int
	Duplicates    int
	Missed        int
	StaleAccepted int
	Recovery      string
	Figures       string
	Took          time.Duration
	Failed        bool
}

var results struct {
	mu   sync.Mutex
	rows []row
}

// report registers the scenario's row; the row is filled in by the test
// and filed when it ends, marked if the test failed.
func report(t *testing.T, id, scenario string) *row {
	r := &row{ID: id, Scenario: scenario, Missed: -1, StaleAccepted: -1, Recovery: "—"}
	start := time.Now()
	t.Cleanup(func() {
		r.Took = time.Since(start)
		r.Failed = t.Failed()
		t.Logf("row: %s", r.line())
		results.mu.Lock()
		results.rows = append(results.rows, *r)
		results.mu.Unlock()
	})
	return r
}

// figure appends one measured figure.
func (r *row) figure(format string, args ...any) {
	if r.Figures != "" {
		r.Figures += "; "
	}
	r.Figures += fmt.Sprintf(format, args...)
}

func count(n int) string {
	if n < 0 {
		return "—"
	}
	return strconv.Itoa(n)
}

func (r row) cells() []string {
	id := r.ID
	if r.Failed {
		id += " FAIL"
	}
	return []string{id, r.Scenario, count(r.Runs), count(r.Duplicates), count(r.Missed), count(r.StaleAccepted),
		r.Recovery, r.Figures}
}

func (r row) line() string { return strings.Join(r.cells(), " | ") }

var header = []string{"#", "scenario", "runs", "duplicates", "missed", "stale writes accepted", "recovery", "measured"}

// sortKey orders "2" before "10" and "3a" before "3b".
func sortKey(id string) string {
	n := 0
	for n < len(id) && id[n] >= '0' && id[n] <= '9' {
		n++
	}
	return fmt.Sprintf("%04s%s", id[:n], id[n:])
}

// printTable prints the rows as a Markdown table, or writes it to
// $FAULTS_TABLE when that is set.
func printTable() {
	results.mu.Lock()
	rows := append([]row(nil), results.rows...)
	results.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	sort.Slice(rows, func(a, b int) bool { return sortKey(rows[a].ID) < sortKey(rows[b].ID) })
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	var total time.Duration
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r.cells(), " | ") + " |\n")
		total += r.Took
	}
	fmt.Fprintf(&b, "\n%d scenarios, %s of scenario time (run in parallel, as -parallel allows).\n", len(rows), total.Round(time.Second))
	if path := os.Getenv("FAULTS_TABLE"); path != "" {
		err := os.WriteFile(path, []byte(b.String()), 0o644)
		if err == nil {
			return // whoever set it shows it (.ci/run does)
		}
		fmt.Fprintln(os.Stderr, "FAULTS_TABLE:", err)
	}
	fmt.Println("\nSolocron fault-injection suite")
	fmt.Println(b.String())
}
