package luascript

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/solocron/solocron/internal/fencing"
)

// Parts are the Lua a package's scripts share, one file per concern: each
// .lua file of a directory, and fencing's fence.lua (part "fence"). A part
// defines top-level names (local function f, local X = ...); Script gives a
// script the parts whose names it uses, and the parts those use, each once
// and before its users. Nobody lists what a script needs: a script that
// calls a part's function gets the part, one that calls none of them pays
// for none (every EVALSHA runs the whole chunk, and each local function
// defined is a closure made again).
//
// A name is used where it appears in code (not in a comment, a string, or
// after a dot or colon, as a field or method); a local variable that
// shares a part's name only costs that part's definitions.
type Parts struct {
	parts []part         // in dependency order: each after the parts it uses
	owner map[string]int // top-level name -> its part's index in parts
}

type part struct {
	name string
	src  string
	defs []string
	uses []string // parts it uses, by name
}

var (
	localFunc = regexp.MustCompile(`(?m)^local\s+function\s+([A-Za-z_]\w*)`)
	localVars = regexp.MustCompile(`(?m)^local\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=`)
)

// Defined returns the top-level names src defines: its local functions and
// local variables at the start of a line.
func Defined(src string) []string {
	var names []string
	for _, m := range localFunc.FindAllStringSubmatch(src, -1) {
		names = append(names, m[1])
	}
	for _, m := range localVars.FindAllStringSubmatch(src, -1) {
		for n := range strings.SplitSeq(m[1], ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	return names
}

// LoadParts reads the parts in dir of fsys (every dir/*.lua) and fence.lua.
// The files are embedded at build time: a name two parts define, or parts
// that use each other, are programming errors, and panic.
func LoadParts(fsys fs.FS, dir string) *Parts {
	files, err := fs.Glob(fsys, path.Join(dir, "*.lua"))
	if err != nil {
		panic("luascript: " + err.Error())
	}
	all := []part{{name: "fence", src: fencing.Lua}}
	for _, f := range files {
		src, err := fs.ReadFile(fsys, f)
		if err != nil {
			panic("luascript: " + err.Error())
		}
		all = append(all, part{name: strings.TrimSuffix(path.Base(f), ".lua"), src: string(src)})
	}
	owner := map[string]string{}
	for i := range all {
		all[i].defs = Defined(all[i].src)
		for _, n := range all[i].defs {
			if o, ok := owner[n]; ok {
				panic("luascript: " + n + " is defined by parts " + o + " and " + all[i].name)
			}
			owner[n] = all[i].name
		}
	}
	for i := range all {
		for n := range references(all[i].src) {
			if o, ok := owner[n]; ok && o != all[i].name && !slices.Contains(all[i].uses, o) {
				all[i].uses = append(all[i].uses, o)
			}
		}
	}
	// Dependency order; among the parts ready, fence first, then by name.
	p := &Parts{owner: map[string]int{}}
	placed := map[string]bool{}
	for len(p.parts) < len(all) {
		next := -1
		for i, c := range all {
			if placed[c.name] {
				continue
			}
			ready := true
			for _, u := range c.uses {
				ready = ready && placed[u]
			}
			if ready {
				next = i
				break
			}
		}
		if next < 0 {
			var left []string
			for _, c := range all {
				if !placed[c.name] {
					left = append(left, c.name)
				}
			}
			panic("luascript: parts use each other: " + strings.Join(left, ", "))
		}
		placed[all[next].name] = true
		p.parts = append(p.parts, all[next])
	}
	for i, c := range p.parts {
		for _, n := range c.defs {
			p.owner[n] = i
		}
	}
	return p
}

// Needs returns the names of the parts a script body needs, in the order
// they go before it: those whose names it uses, and theirs.
func (p *Parts) Needs(body string) []string {
	need := make([]bool, len(p.parts))
	var mark func(refs map[string]bool)
	mark = func(refs map[string]bool) {
		for n := range refs {
			if i, ok := p.owner[n]; ok && !need[i] {
				need[i] = true
				mark(references(p.parts[i].src))
			}
		}
	}
	mark(references(body))
	var names []string
	for i, c := range p.parts {
		if need[i] {
			names = append(names, c.name)
		}
	}
	return names
}

// Script assembles dir/name.lua of fsys: the parts it needs (Needs), then
// its body; or, when the body has a line "-- @shared", the body above that
// line, then the parts, then the rest of the body.
func (p *Parts) Script(fsys fs.FS, dir, name string) string {
	body := Read(fsys, dir, name)
	var shared strings.Builder
	for _, n := range p.Needs(body) {
		i := slices.IndexFunc(p.parts, func(c part) bool { return c.name == n })
		shared.WriteString(p.parts[i].src)
	}
	if before, after, ok := strings.Cut(body, marker); ok {
		return before + "\n" + shared.String() + after
	}
	return shared.String() + body
}

// references returns the names src uses in its code: the identifiers
// outside comments and strings that are not a field or a method (after a
// dot or a colon).
func references(src string) map[string]bool {
	refs := map[string]bool{}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			i += 2
			if end, ok := longBracket(src, i); ok {
				i = end
			} else if nl := strings.IndexByte(src[i:], '\n'); nl >= 0 {
				i += nl + 1
			} else {
				i = len(src)
			}
		case c == '\'' || c == '"':
			i++
			for i < len(src) && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '[':
			if end, ok := longBracket(src, i); ok {
				i = end
			} else {
				i++
			}
		case c >= '0' && c <= '9':
			for i < len(src) && (isIdent(src[i]) || src[i] == '.') {
				i++
			}
		case isIdent(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			if !member(src, i) {
				refs[src[i:j]] = true
			}
			i = j
		default:
			i++
		}
	}
	return refs
}

// longBracket reports whether a long bracket ([[, [==[, ...) opens at i,
// and where the text after its closing one starts.
func longBracket(src string, i int) (int, bool) {
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(src) && src[j] == '=' {
		j++
	}
	if j >= len(src) || src[j] != '[' {
		return 0, false
	}
	closing := "]" + strings.Repeat("=", j-i-1) + "]"
	end := strings.Index(src[j+1:], closing)
	if end < 0 {
		return len(src), true
	}
	return j + 1 + end + len(closing), true
}

// member reports whether the identifier at i follows a dot (not the
// concatenation operator) or a colon: a field or a method, not a name.
func member(src string, i int) bool {
	k := i - 1
	for k >= 0 && (src[k] == ' ' || src[k] == '\t' || src[k] == '\n') {
		k--
	}
	if k < 0 {
		return false
	}
	return src[k] == ':' || src[k] == '.' && (k == 0 || src[k-1] != '.')
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
