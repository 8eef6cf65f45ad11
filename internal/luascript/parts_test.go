package luascript_test

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/solocron/solocron/internal/fencing"
	"github.com/solocron/solocron/internal/luascript"
)

// partsFS is a package's lua/ with three parts: b uses a, c uses b and
// fence.lua's fence_int.
func partsFS(scripts map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"lua/parts/a.lua": {Data: []byte("-- a\nlocal A = 1\nlocal function a_fn() return A end\n")},
		"lua/parts/b.lua": {Data: []byte("-- b\nlocal function b_fn() return a_fn() end\n")},
		"lua/parts/c.lua": {Data: []byte("-- c\nlocal X, Y = 1, 2\nlocal function c_fn(t) return fence_int(b_fn() + t.a_fn) end\n")},
	}
	for name, src := range scripts {
		fsys["lua/"+name+".lua"] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

// A script gets the parts whose names it uses and the parts those use, each
// once, after the parts it uses; and no other.
func TestPartsScriptGetsWhatItUses(t *testing.T) {
	fsys := partsFS(map[string]string{
		"none":    "return 1\n",
		"a":       "return a_fn()\n",
		"constA":  "return A\n",
		"b":       "return b_fn()\n",
		"c":       "return c_fn({})\n",
		"y":       "return Y\n",
		"ab":      "return b_fn() + a_fn()\n",
		"comment": "-- a_fn() b_fn\n--[[ c_fn() ]]\nlocal s = 'a_fn()' .. \"b_fn\" .. [==[ c_fn ]==]\nreturn s\n",
		"field":   "local t = {}\nreturn t.a_fn, t:b_fn(), t . c_fn\n",
		"concat":  "return 'x' .. a_fn()\n",
		"fence":   "return fence_int(1)\n",
	})
	p := luascript.LoadParts(fsys, "lua/parts")
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"none", nil},
		{"a", []string{"a"}},
		{"constA", []string{"a"}},
		{"b", []string{"a", "b"}},
		{"c", []string{"fence", "a", "b", "c"}},
		{"y", []string{"fence", "a", "b", "c"}},
		{"ab", []string{"a", "b"}},
		// Names in comments, strings, and fields or methods are no uses.
		{"comment", nil},
		{"field", nil},
		{"concat", []string{"a"}},
		{"fence", []string{"fence"}},
	} {
		body := luascript.Read(fsys, "lua", tc.script)
		if got := p.Needs(body); !slices.Equal(got, tc.want) {
			t.Errorf("%s: needs %q, want %q", tc.script, got, tc.want)
		}
		var want strings.Builder
		for _, n := range tc.want {
			if n == "fence" {
				want.WriteString(fencing.Lua)
			} else {
				want.Write(fsys["lua/parts/"+n+".lua"].Data)
			}
		}
		want.WriteString(body)
		if got := p.Script(fsys, "lua", tc.script); got != want.String() {
			t.Errorf("%s: Script = %q, want %q", tc.script, got, want.String())
		}
	}
}

// The parts go at a "-- @shared" line: the fast path above it defines none.
func TestPartsScriptSharedMarker(t *testing.T) {
	fsys := partsFS(map[string]string{"fast": "if fast then return 0 end\n-- @shared\nreturn a_fn()\n"})
	got := luascript.LoadParts(fsys, "lua/parts").Script(fsys, "lua", "fast")
	want := "if fast then return 0 end\n" + "-- a\nlocal A = 1\nlocal function a_fn() return A end\n" + "return a_fn()\n"
	if got != want {
		t.Errorf("Script = %q, want %q", got, want)
	}
}

func TestPartsPanics(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"a name two parts define": {
			"lua/parts/a.lua": {Data: []byte("local function f() end\n")},
			"lua/parts/b.lua": {Data: []byte("local f = 1\n")},
		},
		"a part fence.lua defines a name of": {
			"lua/parts/a.lua": {Data: []byte("local function fence_int() end\n")},
		},
		"parts that use each other": {
			"lua/parts/a.lua": {Data: []byte("local function f() return g() end\n")},
			"lua/parts/b.lua": {Data: []byte("local function g() return f() end\n")},
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("LoadParts did not panic")
				}
			}()
			luascript.LoadParts(fsys, "lua/parts")
		})
	}
}

func TestDefined(t *testing.T) {
	src := "local A = 1\nlocal function f(x)\n  local inner = x\nend\nlocal b, c = 1, 2\n-- local d = 1\n"
	if got, want := luascript.Defined(src), []string{"f", "A", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Defined = %q, want %q", got, want)
	}
}
