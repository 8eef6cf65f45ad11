package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Build stamps, set at build time by the release tooling (.goreleaser.yaml,
// the Containerfile) with
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD) \
//	  -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/scheduler
//
// Left empty, version is the module version Go recorded (a tagged version
// when installed with go install ...@v1.2.3, "(devel)" for a local build),
// and commit and date are the VCS revision and commit time Go recorded, when
// it recorded them (a build in a git checkout without -buildvcs=false).
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildInfo is what version prints.
type buildInfo struct {
	version, commit, date string
	modified              bool // the VCS tree had uncommitted changes
	module                string
	race                  bool
}

func readBuildInfo() buildInfo {
	b := buildInfo{version: version, commit: commit, date: date}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.module = bi.Main.Path + " " + bi.Main.Version
		if bi.Main.Sum != "" {
			b.module += " " + bi.Main.Sum
		}
		if b.version == "" {
			b.version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.commit == "" {
					b.commit = s.Value
				}
			case "vcs.time":
				if b.date == "" {
					b.date = s.Value
				}
			case "vcs.modified":
				b.modified = s.Value == "true"
			case "-race":
				b.race = s.Value == "true"
			}
		}
	}
	if b.version == "" {
		b.version = "(devel)"
	}
	return b
}

func versionString() string { return readBuildInfo().version }

func versionFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("version", "unexpected arguments %q", pos)
		}
		printVersion(c.stdout)
		return exitOK
	}
}

// printVersion prints the version, commit and build date first (one per
// line, "unknown" when neither the build stamps nor Go recorded them), then
// the toolchain and the module.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "solocron %s\n", b.version)
	commit := orUnknown(b.commit)
	if b.modified {
		commit += " (modified)"
	}
	fmt.Fprintf(w, "commit:   %s\n", commit)
	fmt.Fprintf(w, "built:    %s\n", orUnknown(b.date))
	fmt.Fprintf(w, "go:       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if b.module != "" {
		fmt.Fprintf(w, "module:   %s\n", b.module)
	}
	if b.race {
		fmt.Fprintln(w, "build:    -race")
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
