package config

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Error is one problem with a job table file, located at a line and column
// (both 1-based) and a field path such as "jobs[2].http.url",
// "store.sentinel.master" or "defaults.timezone". Problems with the file as a
// whole (YAML syntax, several documents, aliases that expand too far) have the
// path "yaml".
type Error struct {
	File         string
	Line, Column int
	Path         string
	Err          error
}

// Error returns "FILE:LINE:COL: path: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %v", e.File, e.Line, e.Column, e.Path, e.Err)
}

// Unwrap returns the underlying problem, for example a *schedule.Error when a
// schedule does not parse.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one file, sorted by position. Load and
// Parse return it as a *Errors.
type Errors []*Error

// Error returns one line per problem, in file order.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the entries, so errors.Is and errors.As look into each.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// finish sorts the problems by position and drops repeats (the same message
// at the same place, which aliased YAML produces once per use).
func (es Errors) finish() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	type key struct {
		line, col int
		path, msg string
	}
	seen := make(map[key]bool, len(es))
	out := es[:0]
	for _, e := range es {
		// Indices are left out of the comparison: an anchored job or list
		// used twice gives the same problem at the same place under
		// jobs[0] and jobs[1], and one report is enough.
		k := key{e.Line, e.Column, indexRE.ReplaceAllString(e.Path, "[]"), e.Err.Error()}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}
