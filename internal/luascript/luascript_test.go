package luascript_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/solocron/solocron/internal/fencing"
	"github.com/solocron/solocron/internal/luascript"
)

func TestSource(t *testing.T) {
	fsys := fstest.MapFS{
		"lua/common.lua": {Data: []byte("-- common\n")},
		"lua/extra.lua":  {Data: []byte("-- extra\n")},
		"lua/plain.lua":  {Data: []byte("return 1\n")},
		"lua/fast.lua":   {Data: []byte("if fast then return 0 end\n-- @shared\nreturn 1\n")},
	}
	const fence = "<fence.lua>"
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"plain"}, fence + "return 1\n"},
		{[]string{"common", "plain"}, fence + "-- common\nreturn 1\n"},
		{[]string{"common", "extra", "plain"}, fence + "-- common\n-- extra\nreturn 1\n"},
		// fence.lua and the shared parts go at the marker: the fast path
		// above it runs before any of them is defined.
		{[]string{"common", "extra", "fast"}, "if fast then return 0 end\n" + fence + "-- common\n-- extra\nreturn 1\n"},
	} {
		got := strings.ReplaceAll(luascript.Source(fsys, "lua", tc.parts...), fencing.Lua, fence)
		if got != tc.want {
			t.Errorf("Source(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestReadMissingPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Read of a missing script did not panic")
		}
	}()
	luascript.Read(fstest.MapFS{}, "lua", "nothing")
}
