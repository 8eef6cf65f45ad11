package scheduler

// This file is a stand-in for what the replica registry (branch console,
// scheduler/replicas.go) defines: WithVersion, the version default and the
// table fingerprint. solocron_replica_info needs them; once the registry is
// merged, delete this file and call TableFingerprint, which computes the
// same value, so the metric and the registry's /replicas agree.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"time"

	"github.com/solocron/solocron/jobs"
)

// WithVersion names the version of the program this replica runs, as
// solocron_replica_info shows it. Default: the main module's version from
// the build info, or "(devel)".
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

func defaultVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// tableFingerprint is a short hash of a job table: equal for tables that
// schedule and run the same things, whatever the order of their jobs. It
// covers every field of every job with defaults applied, and what each
// handler runs (a command's arguments and directory, an HTTP job's method,
// host and path) but no value that may hold a secret (environment values,
// headers, bodies, query strings).
func tableFingerprint(tab []Job) string {
	lines := make([]string, 0, len(tab))
	for _, j := range tab {
		j = j.withDefaults()
		h := j.Handler
		j.Handler = nil
		line := fmt.Sprintf("%+v|%T", j, h)
		switch h := h.(type) {
		case *jobs.Command:
			line += commandShape(h.Args, h.Dir, h.Env, h.KillGrace)
		case *jobs.HTTP:
			u, _ := url.Parse(h.URL)
			if u != nil {
				line += fmt.Sprintf("|%s|%s|%s|%v", h.Method, u.Host, u.Path, h.ExpectStatus)
			}
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))[:12]
}

func commandShape(args []string, dir string, env map[string]string, grace time.Duration) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprintf("|%q|%q|%q|%s", args, dir, keys, grace)
}
