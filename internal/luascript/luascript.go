// Package luascript is the one Lua loader of the scheduler and of
// lockprovider: each assembles its scripts from the parts a script needs,
// read from the package's own embedded lua/ directory, with fencing's
// fence.lua (the fencing tokens both issue the same way).
//
// The scheduler's parts (Parts: one file per concern in lua/parts/) are
// found by what a script uses: a script gets each part whose names it uses,
// and the parts those use, in dependency order. lockprovider's are named by
// its scripts (Source): fence.lua and its shared parts (e.g. its
// common.lua), then the script's body.
//
// Either way, when the body has a line "-- @shared", the body's part above
// that line goes first: a script's fast path there does not pay for
// defining functions it never calls (every EVALSHA runs the whole chunk,
// and each local function defined is a closure made again).
package luascript

import (
	"io/fs"
	"path"
	"strings"

	"github.com/solocron/solocron/internal/fencing"
)

// marker is the line of a script's body where its shared parts go.
const marker = "\n-- @shared\n"

// Read returns dir/name.lua from fsys. The files are embedded at build
// time: a missing one is a programming error, and panics.
func Read(fsys fs.FS, dir, name string) string {
	src, err := fs.ReadFile(fsys, path.Join(dir, name+".lua"))
	if err != nil {
		panic("luascript: " + err.Error())
	}
	return string(src)
}

// Source assembles the script named by the last of parts, read from dir in
// fsys: fence.lua, then the other parts in order, then the script's body;
// or, when the body has a line "-- @shared", the body above that line, then
// fence.lua, the other parts, and the rest of the body.
func Source(fsys fs.FS, dir string, parts ...string) string {
	var shared strings.Builder
	for _, p := range parts[:len(parts)-1] {
		shared.WriteString(Read(fsys, dir, p))
	}
	body := Read(fsys, dir, parts[len(parts)-1])
	if before, after, ok := strings.Cut(body, marker); ok {
		return before + "\n" + fencing.Lua + shared.String() + after
	}
	return fencing.Lua + shared.String() + body
}
