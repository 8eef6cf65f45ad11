package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/notify"
)

// decoder walks the yaml.Node tree of one file against the schema, collecting
// every problem instead of stopping at the first.
type decoder struct {
	file      string
	lookupEnv func(string) (string, bool)
	funcs     map[string]jobs.Job
	errs      Errors
	targets   []notify.Target // the file's notifications, for jobs' notify:
	pools     map[string]int  // the file's pools, for jobs' pool:

	// Alias accounting, set up at the first alias met. An alias costs the
	// size of the subtree it points at; when the budget is spent the walk
	// stops following aliases, so "billion laughs" documents stay cheap.
	root      *yaml.Node
	sizes     map[*yaml.Node]int // subtree size of every anchored node
	budget    int
	exhausted bool

	// Problems found in a default, gathered across the jobs inheriting it.
	inherited      map[inheritedKey]*inheritedError
	inheritedOrder []inheritedKey
	// reported are the problems with defaults: values that checkDefaults
	// reported, which the jobs inheriting those values do not repeat.
	reported map[inheritedKey]bool
	// flushed are the paths of defaults reported with the jobs that
	// inherit them.
	flushed map[string]bool

	// at is where each value inside a job's (or the defaults') command,
	// env, http and blackouts was written, by its path (header names in
	// canonical form): what a validator's field error is reported at.
	at map[string]written
	// broken are the paths of values already reported as unusable (a
	// blackout window with a field of the wrong type): a validator's
	// problems inside them are not reported.
	broken map[string]bool
}

// written is where a value was written: its node, and its path as written.
type written struct {
	node *yaml.Node
	path string
}

// mark notes that the value at path (shown as shown) was written at n.
func (d *decoder) mark(path string, n *yaml.Node, shown string) {
	if d.at == nil {
		d.at = make(map[string]written)
	}
	d.at[path] = written{node: n, path: shown}
}

// aliasBase and aliasFactor set the alias budget: a document may expand
// through aliases to aliasBase + aliasFactor × its own node count. Real job
// tables share a few small anchors; a hostile one is cut off after doing a
// few times the work of reading it.
const (
	aliasBase   = 10000
	aliasFactor = 2
	// maxMergeDepth bounds "<<" merges that merge mappings that merge ...
	maxMergeDepth = 16
)

func (d *decoder) add(line, col int, path string, err error) {
	line, col = max(line, 1), max(col, 1)
	if path == "" {
		path = "yaml"
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Path: path, Err: err})
}

// errorf records a problem at node n.
func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	d.add(n.Line, n.Column, path, fmt.Errorf(format, args...))
}

// parse turns data into a File; problems go to d.errs.
func (d *decoder) parse(data []byte) *File {
	f := &File{}
	if len(data) > MaxFileSize {
		d.add(1, 1, "yaml", fmt.Errorf("the file is larger than %d MiB", MaxFileSize>>20))
		return f
	}
	if line, col, msg := checkText(data); msg != "" {
		// yaml.v3 reports these without a position; find it ourselves.
		d.add(line, col, "yaml", errors.New(msg))
		return f
	}
	root := d.document(data)
	if root == nil {
		if len(d.errs) == 0 {
			d.add(1, 1, "jobs", errors.New("is required, and the file is empty (write jobs: [] for a replica that runs no jobs)"))
		}
		return f
	}
	d.root = root
	d.top(f, root)
	return f
}

// document parses data as exactly one YAML document and returns its root
// node, or nil if the file is empty or does not parse.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err != io.EOF {
			d.syntaxError(data, err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		d.syntaxError(data, err)
		return nil
	case len(next.Content) == 1 && isNull(next.Content[0]) && next.Content[0].Value == "":
		// A bare "---" after the table: an empty document, harmless. Any
		// further document is still refused.
		var more yaml.Node
		if err := dec.Decode(&more); err != io.EOF {
			d.errorf(&next, "yaml", "the file holds more than one YAML document; a job table is one document")
			return nil
		}
	default:
		d.errorf(&next, "yaml", "the file holds more than one YAML document (another starts here); a job table is one document")
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil // "---" alone, "~" or "null": as empty as an empty file
	}
	return root
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError records an error from yaml.v3. Its messages carry a line at
// best, and for parser errors that line is where the enclosing construct
// starts, counted from 0 ("yaml: line 1: did not find expected '-'
// indicator" for a bad line 3). So the line is found by parsing ever longer
// prefixes of the file until the same error appears, and yaml.v3's line is
// the fallback. The column is 1.
func (d *decoder) syntaxError(data []byte, err error) {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			line = max(n, 1)
		}
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if n := errorLine(data, msg); n > 0 {
		line = n
	}
	d.add(line, 1, "yaml", errors.New(msg))
}

// errorLine returns the smallest n such that the first n lines of data fail
// to parse with the error msg (without its "yaml: line N: "), by bisection,
// or 0 if the whole of data does not. It is a heuristic (a prefix may fail
// for reasons of its own) that costs a few parses of a file that failed.
func errorLine(data []byte, msg string) int {
	var ends []int // ends[i] is the offset just past line i+1
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]]))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == nil {
				continue
			}
			got := err.Error()
			if m := yamlLine.FindString(got); m != "" {
				got = got[len(m):]
			} else {
				got = strings.TrimPrefix(got, "yaml: ")
			}
			return got == msg
		}
	}
	lo, hi := 1, len(ends)
	if !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// checkText finds the first byte YAML refuses: invalid UTF-8 or a control
// character (the set yaml.v3's reader refuses). It returns its 1-based line
// and column (in characters), or msg == "" if the text is fine.
func checkText(data []byte) (line, col int, msg string) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("invalid UTF-8 (byte 0x%02x); a job table must be UTF-8 text", data[i])
		case !yamlPrintable(r):
			return line, col, fmt.Sprintf("control character %U is not allowed in YAML", r)
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return 0, 0, ""
}

func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// resolve follows an alias to the node it names, charging the alias budget.
// It returns nil (after recording why) when the budget is spent.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.AliasNode {
		return n
	}
	if d.exhausted {
		return nil
	}
	target := n.Alias
	if target == nil || target.Kind == yaml.AliasNode {
		d.errorf(n, "yaml", "alias *%s names nothing usable", n.Value)
		return nil
	}
	if d.sizes == nil {
		d.sizes = make(map[*yaml.Node]int)
		total := countNodes(d.root, d.sizes)
		d.budget = aliasBase + aliasFactor*total
	}
	d.budget -= d.sizes[target] + 1
	if d.budget < 0 {
		d.exhausted = true
		d.errorf(n, "yaml", "aliases expand the document too far (more than %d nodes); refusing to follow *%s",
			aliasBase, n.Value)
		return nil
	}
	return target
}

// countNodes returns the number of nodes under n (not following aliases, so
// it always ends) and records the size of every anchored node in sizes.
func countNodes(n *yaml.Node, sizes map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	total := 1
	for _, c := range n.Content {
		total += countNodes(c, sizes)
	}
	if n.Anchor != "" {
		sizes[n] = total
	}
	return total
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for "expected X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	v := clip(n.Value)
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return "null"
	case "!!str":
		return "string " + strconv.Quote(v)
	case "!!int":
		return "integer " + v
	case "!!float":
		return "number " + v
	case "!!bool":
		return "boolean " + v
	case "!!timestamp":
		return "timestamp " + v
	default:
		// Not quoted: a string field only ever refuses these, and a
		// string field may hold a secret.
		return "a " + tag + " value"
	}
}

// clip shortens a value quoted in a message.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	d.errorf(n, path, "expected %s, got %s", want, describe(n))
}

// stringTags are the scalar types a string field accepts: numbers, booleans
// and dates keep the text written, so `args: [sleep, 10]` and
// `env: {PORT: 8080}` mean what they look like.
func stringTag(tag string) bool {
	switch tag {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return true
	}
	return false
}

// str decodes a string field, expanding ${VAR}.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n = d.resolve(n); n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || !stringTag(n.ShortTag()) {
		d.typeError(n, path, "a string")
		return "", false
	}
	return d.expand(n, path)
}

// expanded reports whether a scalar for a non-string field is written as a
// string holding ${VAR}, which is expanded first and then read as the field's
// type, e.g. `retries: ${RETRIES}`.
func expandable(n *yaml.Node) bool {
	return n.ShortTag() == "!!str" && strings.Contains(n.Value, "${")
}

// integer decodes an int field.
func (d *decoder) integer(n *yaml.Node, path string) (int, bool) {
	if n = d.resolve(n); n == nil {
		return 0, false
	}
	if n.Kind == yaml.ScalarNode {
		switch {
		case n.ShortTag() == "!!int":
			var v int
			if err := n.Decode(&v); err != nil {
				d.errorf(n, path, "expected an integer, got %s (out of range)", describe(n))
				return 0, false
			}
			return v, true
		case expandable(n):
			s, ok := d.expand(n, path)
			if !ok {
				return 0, false
			}
			v, err := strconv.Atoi(s)
			if err != nil {
				d.errorf(n, path, "expected an integer, but %s expands to %q", clip(n.Value), clip(s))
				return 0, false
			}
			return v, true
		}
	}
	d.typeError(n, path, "an integer")
	return 0, false
}

// boolean decodes a bool field: true or false (YAML 1.2: yes/no/on/off are
// strings).
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	if n = d.resolve(n); n == nil {
		return false, false
	}
	if n.Kind == yaml.ScalarNode {
		switch {
		case n.ShortTag() == "!!bool":
			switch strings.ToLower(n.Value) {
			case "true":
				return true, true
			case "false":
				return false, true
			}
		case expandable(n):
			s, ok := d.expand(n, path)
			if !ok {
				return false, false
			}
			switch s {
			case "true":
				return true, true
			case "false":
				return false, true
			}
			d.errorf(n, path, "expected a boolean (true or false), but %s expands to %q", clip(n.Value), clip(s))
			return false, false
		}
	}
	d.typeError(n, path, "a boolean (true or false)")
	return false, false
}

// duration decodes a Go duration string ("30s", "1h30m"); the plain number 0
// is accepted too. Negative durations are refused.
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	if n = d.resolve(n); n == nil {
		return 0, false
	}
	const want = "a duration such as 30s or 1h30m"
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, want)
		return 0, false
	}
	switch n.ShortTag() {
	case "!!str":
		s, ok := d.expand(n, path)
		if !ok {
			return 0, false
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			if s == n.Value {
				d.typeError(n, path, want)
			} else {
				d.errorf(n, path, "expected %s, but %s expands to %q", want, clip(n.Value), clip(s))
			}
			return 0, false
		}
		if v < 0 {
			d.errorf(n, path, "must not be negative (got %s)", v)
			return 0, false
		}
		return v, true
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err == nil && f == 0 {
			return 0, true
		}
		d.errorf(n, path, "expected %s, got %s (a duration needs a unit, e.g. %ss)", want, describe(n), clip(n.Value))
		return 0, false
	}
	d.typeError(n, path, want)
	return 0, false
}

// strList decodes a list of strings.
func (d *decoder) strList(n *yaml.Node, path string) ([]string, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list of strings")
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, e := range n.Content {
		s, good := d.str(e, index(path, i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// pair is one key of a mapping with its value.
type pair struct {
	key, val *yaml.Node
	name     string
}

// mapping returns the entries of mapping node n (already resolved) in file
// order, reporting duplicate and non-string keys. "<<" merge keys are
// honoured: merged entries come after the mapping's own, and a key written
// in the mapping wins over a merged one.
func (d *decoder) mapping(n *yaml.Node, path string) []pair {
	return d.mappingDepth(n, path, 0)
}

func (d *decoder) mappingDepth(n *yaml.Node, path string, depth int) []pair {
	out := make([]pair, 0, len(n.Content)/2)
	var merged []pair
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "expected a field name, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(v, path, depth)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, field(path, k.Value), "duplicate key %q (first at line %d, column %d)",
				clip(k.Value), first.Line, first.Column)
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{key: k, val: v, name: k.Value})
	}
	for _, p := range merged {
		if _, dup := seen[p.name]; !dup {
			seen[p.name] = p.key
			out = append(out, p)
		}
	}
	return out
}

// merge returns the entries a "<<" key brings in: one mapping, or a list of
// mappings of which the earlier wins.
func (d *decoder) merge(v *yaml.Node, path string, depth int) []pair {
	if depth >= maxMergeDepth {
		d.errorf(v, path, "<< merges nest more than %d deep", maxMergeDepth)
		return nil
	}
	if v = d.resolve(v); v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return d.mappingDepth(v, path, depth+1)
	case yaml.SequenceNode:
		var out []pair
		seen := make(map[string]bool)
		for _, e := range v.Content {
			if e = d.resolve(e); e == nil {
				continue
			}
			if e.Kind != yaml.MappingNode {
				d.typeError(e, path, "a mapping to merge with <<")
				continue
			}
			for _, p := range d.mappingDepth(e, path, depth+1) {
				if !seen[p.name] {
					seen[p.name] = true
					out = append(out, p)
				}
			}
		}
		return out
	}
	d.typeError(v, path, "a mapping or a list of mappings to merge with <<")
	return nil
}

// section resolves n and checks that it is a mapping; null (a section whose
// entries are all commented out) counts as empty. It returns nil, false
// after reporting anything else.
func (d *decoder) section(n *yaml.Node, path string) ([]pair, bool) {
	if n = d.resolve(n); n == nil {
		return nil, false
	}
	switch {
	case n.Kind == yaml.MappingNode:
		return d.mapping(n, path), true
	case isNull(n):
		return nil, true
	}
	d.typeError(n, path, "a mapping")
	return nil, false
}

// fields walks the entries of a mapping, handing each to fn; fn returns
// false for a name it does not know, which is reported with a suggestion
// from known (and from hint, for fields that belong elsewhere).
func (d *decoder) fields(pairs []pair, path string, known []string, hint func(string) string, fn func(p pair, path string) bool) {
	for _, p := range pairs {
		fp := field(path, p.name)
		if fn(p, fp) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q", clip(p.name))
		if s := suggest(p.name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if hint != nil {
			if h := hint(p.name); h != "" {
				msg += " (" + h + ")"
			}
		}
		d.add(p.key.Line, p.key.Column, fp, errors.New(msg))
	}
}

// field appends a key to a path: "jobs[2]" + "http" → "jobs[2].http"; keys
// that are not plain words are quoted: env["A B"].
func field(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		return path + "[" + strconv.Quote(clip(key)) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
