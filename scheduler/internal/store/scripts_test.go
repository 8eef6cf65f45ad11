package store

import (
	"cmp"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/fencing"
	"github.com/solocron/solocron/internal/luascript"
	"github.com/solocron/solocron/internal/redistest"
)

// scriptNames lists the scripts: lua/*.lua (their parts are in lua/parts).
func scriptNames(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(LuaFiles, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in lua/ (%v)", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua"))
	}
	return names
}

// partSources maps each part (fence.lua's too) to its source.
func partSources(t *testing.T) map[string]string {
	t.Helper()
	files, err := fs.Glob(LuaFiles, "lua/parts/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no parts in lua/parts (%v)", err)
	}
	parts := map[string]string{"fence": fencing.Lua}
	for _, f := range files {
		src, err := LuaFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parts[strings.TrimSuffix(strings.TrimPrefix(f, "lua/parts/"), ".lua")] = string(src)
	}
	return parts
}

// Every script, assembled from its parts, compiles on a real redis-server
// (SCRIPT LOAD) to the SHA the store calls it by; and the store builds
// every script there is.
func TestScriptsLoadIntoRedis(t *testing.T) {
	c := redistest.Start(t).Client(t, nil)
	names := scriptNames(t)
	for _, name := range names {
		src := luaParts.Script(LuaFiles, "lua", name)
		sha, err := c.ScriptLoad(t.Context(), src).Result()
		if err != nil {
			t.Errorf("%s: SCRIPT LOAD: %v", name, err)
			continue
		}
		if want := redis.NewScript(src).Hash(); sha != want {
			t.Errorf("%s: SHA %s, want %s", name, sha, want)
		}
		if !slices.Contains(sources, src) {
			t.Errorf("%s: the store does not build it (protocol.go's script)", name)
		}
	}
	if len(sources) != len(names) {
		t.Errorf("the store builds %d scripts, lua/ has %d", len(sources), len(names))
	}
}

// codeLines drops a Lua source's comment lines and its short strings: what
// is left is code, whose names are uses (a crude reading, independent of
// the loader's).
func codeLines(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "--") {
			continue
		}
		if i := strings.Index(line, " --"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return regexp.MustCompile(`'[^'\n]*'|"[^"\n]*"`).ReplaceAllString(b.String(), "''")
}

// A script that uses a name a part defines gets that part, and so do the
// parts it gets: each part a script holds comes after the parts it uses.
// A script gets no part whose names nobody in it uses.
func TestScriptsGetThePartsTheyCall(t *testing.T) {
	parts := partSources(t)
	owner := map[string]string{}
	for p, src := range parts {
		for _, n := range luascript.Defined(src) {
			owner[n] = p
		}
	}
	for _, name := range scriptNames(t) {
		src := luaParts.Script(LuaFiles, "lua", name)
		body := luascript.Read(LuaFiles, "lua", name)
		// Where each part is in the script (-1: not in it).
		at := map[string]int{}
		for p, psrc := range parts {
			at[p] = strings.Index(src, psrc)
		}
		// The parts the script holds, and the body, by where they start.
		units := map[string]string{"": body}
		for p, i := range at {
			if i >= 0 {
				units[p] = parts[p]
			}
		}
		used := map[string]bool{}
		for unit, text := range units {
			code := codeLines(text)
			for n, p := range owner {
				if p == unit || !regexp.MustCompile(`(^|[^\w.:])`+n+`\b`).MatchString(code) {
					continue
				}
				used[p] = true
				if at[p] < 0 {
					t.Errorf("%s: %s uses %s, and the script has no part %s", name, cmp.Or(unit, "its body"), n, p)
				} else if unit != "" && at[p] > at[unit] {
					t.Errorf("%s: part %s uses %s of part %s, which comes after it", name, unit, n, p)
				}
			}
		}
		for p, i := range at {
			if i >= 0 && !used[p] {
				t.Errorf("%s: holds part %s, which nothing in it uses", name, p)
			}
		}
	}
}

// No script defines a name twice (a part's name shadowed by another
// part's or by the script's own), and each stays well under Lua's limit of
// 200 local variables in a function (the chunk's top-level locals).
func TestScriptsDefineEachNameOnce(t *testing.T) {
	for _, name := range scriptNames(t) {
		names := luascript.Defined(luaParts.Script(LuaFiles, "lua", name))
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("%s: defines %s twice", name, n)
			}
			seen[n] = true
		}
		if len(names) >= 150 {
			t.Errorf("%s: %d top-level locals, near Lua's limit of 200", name, len(names))
		}
	}
}
