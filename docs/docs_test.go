// Package docs holds the user guide (Markdown) and the job table's JSON
// Schema. Its tests keep the guide honest: the job table reference is
// generated from the schema (itself generated from the loader's field
// lists, config.TestSchemaFileIsCurrent), and every relative link in the
// repository's Markdown files resolves.
package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

const (
	referenceFile = "job-table.md"
	beginMark     = "<!-- BEGIN GENERATED: SOLOCRON_UPDATE_DOCS=1 go test -run TestJobTableReference ./docs/ -->"
	endMark       = "<!-- END GENERATED -->"
)

// sections are the schema's mappings in the order the reference lists
// them: the $defs name (or "" for the top level), the heading and the path
// a reader writes in the table.
var sections = []struct{ def, heading, path string }{
	{"", "Top level", ""},
	{"store", "store", "store."},
	{"tls", "store.tls", "store.tls."},
	{"sentinel", "store.sentinel", "store.sentinel."},
	{"cluster", "store.cluster", "store.cluster."},
	{"redlock", "store.redlock", "store.redlock."},
	{"admin", "admin", "admin."},
	{"admin_tls", "admin.tls", "admin.tls."},
	{"notification", "notifications[]", "notifications[]."},
	{"job", "jobs[] (and defaults)", "jobs[]."},
	{"http", "jobs[].http", "jobs[].http."},
	{"blackout", "jobs[].blackouts[]", "jobs[].blackouts[]."},
}

// TestJobTableReference: the field tables of docs/job-table.md are what
// the schema says, so a field the loader reads and the reference lacks
// (or a description, default or type that changed) fails here.
// SOLOCRON_UPDATE_DOCS=1 rewrites the generated block.
func TestJobTableReference(t *testing.T) {
	raw, err := os.ReadFile("solocron.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := generateReference(raw)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, beginMark), strings.Index(text, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated block (%q ... %q)", referenceFile, beginMark, endMark)
	}
	got := text[i+len(beginMark) : j]
	if got == want {
		return
	}
	if os.Getenv("SOLOCRON_UPDATE_DOCS") == "1" {
		out := text[:i+len(beginMark)] + want + text[j:]
		if err := os.WriteFile(referenceFile, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the generated block of %s", referenceFile)
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(gl) || k < len(wl); k++ {
		var g, w string
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Fatalf("%s is stale at generated line %d:\n have: %s\n want: %s\nrun: SOLOCRON_UPDATE_DOCS=1 go test -run TestJobTableReference ./docs/", referenceFile, k+1, g, w)
		}
	}
}

// TestReferenceListsEveryField checks the check: every property of every
// section of the schema is a row of the generated reference.
func TestReferenceListsEveryField(t *testing.T) {
	raw, err := os.ReadFile("solocron.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := generateReference(raw)
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sec := range sections {
		props := s.Properties
		if sec.def != "" {
			props = s.Defs[sec.def].Properties
		}
		if len(props) == 0 {
			t.Errorf("schema section %q has no properties", sec.def)
		}
		for name := range props {
			n++
			if !strings.Contains(ref, "| `"+sec.path+name+"` |") {
				t.Errorf("the reference has no row for %s%s", sec.path, name)
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d fields in the schema: the sections list is out of date", n)
	}
}

type property struct {
	Ref         string          `json:"$ref"`
	Type        json.RawMessage `json:"type"`
	Enum        []any           `json:"enum"`
	AnyOf       []property      `json:"anyOf"`
	Items       *property       `json:"items"`
	Default     any             `json:"default"`
	Description string          `json:"description"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Additional  *property       `json:"additionalProperties"`
}

type schema struct {
	Properties map[string]property `json:"properties"`
	Defs       map[string]struct {
		Properties map[string]property `json:"properties"`
		Required   []string            `json:"required"`
	} `json:"$defs"`
	Required []string `json:"required"`
}

func generateReference(raw []byte) (string, error) {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.WriteString("\n")
	for _, sec := range sections {
		props, required := s.Properties, s.Required
		if sec.def != "" {
			d, ok := s.Defs[sec.def]
			if !ok {
				return "", fmt.Errorf("schema has no $defs.%s", sec.def)
			}
			props, required = d.Properties, d.Required
		}
		heading := "`" + sec.heading + "`"
		if sec.def == "" {
			heading = sec.heading
		}
		fmt.Fprintf(&b, "\n### %s\n\n| field | type | default | what |\n|---|---|---|---|\n", heading)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := props[n]
			def := "—"
			if p.Default != nil {
				def = "`" + fmt.Sprint(p.Default) + "`"
			}
			if slices.Contains(required, n) {
				def = "required"
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", sec.path, n, typeOf(p), def, cell(p.Description))
		}
	}
	b.WriteString("\n")
	return b.String(), nil
}

// typeOf says a property's type in a few words, ${VAR} alternatives left out.
func typeOf(p property) string {
	if p.Ref != "" {
		return strings.TrimPrefix(p.Ref, "#/$defs/")
	}
	var alts []string
	if len(p.Enum) > 0 {
		var vs []string
		for _, v := range p.Enum {
			vs = append(vs, fmt.Sprint(v))
		}
		alts = append(alts, strings.Join(vs, " \\| "))
	}
	if len(p.Type) > 0 {
		var one string
		var many []string
		if json.Unmarshal(p.Type, &one) == nil {
			many = []string{one}
		} else {
			_ = json.Unmarshal(p.Type, &many)
		}
		many = slices.DeleteFunc(many, func(s string) bool { return s == "null" })
		t := strings.Join(many, " or ")
		switch {
		case t == "array" && p.Items != nil:
			t = "list of " + typeOf(*p.Items)
		case t == "object" && p.Additional != nil:
			t = "map of " + typeOf(*p.Additional)
		}
		if p.Minimum != nil && p.Maximum != nil {
			t += fmt.Sprintf(" %g..%g", *p.Minimum, *p.Maximum)
		} else if p.Minimum != nil {
			t += fmt.Sprintf(" ≥ %g", *p.Minimum)
		}
		alts = append(alts, t)
	}
	for _, a := range p.AnyOf {
		if a.Ref == "#/$defs/variable" {
			continue
		}
		alts = append(alts, typeOf(a))
	}
	if len(alts) == 0 {
		return "any"
	}
	return strings.Join(alts, " or ")
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// TestRelativeLinks: every relative link in the repository's Markdown
// files names a file that exists, and an anchor into a Markdown file names
// one of its headings.
func TestRelativeLinks(t *testing.T) {
	root := ".."
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(path)
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.Join(filepath.Dir(f), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %s does not exist", f, target, path)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, target, path, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked")
	}
}

// stripCode drops fenced code blocks and inline code, whose brackets are
// not links.
func stripCode(s string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, inlineCodeRE.ReplaceAllString(line, ""))
		}
	}
	return strings.Join(out, "\n")
}

// headingAnchors are the anchors GitHub gives a file's headings.
func headingAnchors(path string) map[string]bool {
	a := map[string]bool{}
	data, err := os.ReadFile(path)
	if err != nil {
		return a
	}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := slugify(h)
		if n := seen[slug]; n > 0 {
			a[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			a[slug] = true
		}
		seen[slug]++
	}
	return a
}

func slugify(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlugify(t *testing.T) {
	for h, want := range map[string]string{
		"16. A job that ignores SIGTERM, and its kill grace": "16-a-job-that-ignores-sigterm-and-its-kill-grace",
		"The seeded fault search (`TestSimulation`)":         "the-seeded-fault-search-testsimulation",
		"`jobs[].http`": "jobshttp",
	} {
		if got := slugify(h); got != want {
			t.Errorf("slugify(%q) = %q, want %q", h, got, want)
		}
	}
}
