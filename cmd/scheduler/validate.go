package main

import (
	"flag"
	"fmt"
	"net"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/scheduler"
)

func validateFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("validate", "unexpected arguments %q (name the file with --config FILE)", pos)
		}
		f, code := c.loadTable()
		if code != exitOK {
			return code
		}
		// What run would refuse with this file's own admin.listen is worth
		// knowing now; --admin-listen may still override it at run time.
		if f.Admin.Listen != "" && f.Admin.Token == "" && !adminMTLS(f) && !isLoopback(f.Admin.Listen) {
			fmt.Fprintf(c.stderr, "%s: warning: admin.listen %q is not a loopback address and admin.token is unset: run will refuse to start unless --admin-listen overrides it\n", f.Path, f.Admin.Listen)
		}
		fmt.Fprintf(c.stdout, "%s: ok (%d %s)\n", f.Path, len(f.Jobs), plural(len(f.Jobs), "job", "jobs"))
		return exitOK
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func findJob(f *config.File, name string) (scheduler.Job, bool) {
	for _, j := range f.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return scheduler.Job{}, false
}

// isLoopback reports whether the listen address addr (host:port) accepts
// connections from this machine only: "localhost" or a loopback IP. An
// empty host (":9090") listens everywhere; any other host name is treated
// as reachable from outside, since what it resolves to can change.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
