package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release, set at build time with
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/scheduler
//
// Left empty, it is the module version Go recorded (a tagged version when
// installed with go install ...@v1.2.3, "(devel)" for a local build).
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func versionFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("version", "unexpected arguments %q", pos)
		}
		w := c.stdout
		fmt.Fprintf(w, "solocron %s\n", versionString())
		fmt.Fprintf(w, "go:       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return exitOK
		}
		mod := bi.Main.Path + " " + bi.Main.Version
		if bi.Main.Sum != "" {
			mod += " " + bi.Main.Sum
		}
		fmt.Fprintf(w, "module:   %s\n", mod)
		var rev, at, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			case "-race":
				if s.Value == "true" {
					fmt.Fprintln(w, "build:    -race")
				}
			}
		}
		if rev != "" {
			fmt.Fprintf(w, "revision: %s %s%s\n", rev, at, modified)
		}
		return exitOK
	}
}
