package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/scheduler"
)

// replicasAnswer is replicas --json's answer.
type replicasAnswer struct {
	// FileTable fingerprints the table of the file given with --config.
	FileTable string              `json:"file_table"`
	Replicas  []scheduler.Replica `json:"replicas"`
}

func replicasFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	asJSON := fs.Bool("json", false, "print JSON")
	c.adminFlag(fs)
	return func(pos []string) int {
		if len(pos) > 0 {
			return c.usageError("replicas", "takes no arguments, got %q", pos)
		}
		return c.withControl("replicas", nil, false, func(ctx context.Context, f *config.File, ctl controls, _ string) int {
			tctx, cancel := context.WithTimeout(ctx, storeTimeout)
			defer cancel()
			rs, err := ctl.Replicas(tctx)
			if err != nil {
				return c.storeFailed("replicas", f, err)
			}
			mine := scheduler.TableFingerprint(f.Jobs)
			if *asJSON {
				if rs == nil {
					rs = []scheduler.Replica{}
				}
				return c.printJSON(replicasAnswer{FileTable: mine, Replicas: rs})
			}
			printReplicas(c.stdout, rs, mine)
			return exitOK
		})
	}
}

func printReplicas(w io.Writer, rs []scheduler.Replica, mine string) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no live replica has registered")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tVERSION\tSTARTED\tHEARTBEAT\tCLOCK OFFSET\tTABLE\tJOBS\tRUNNING")
	differ := 0
	for _, r := range rs {
		table := r.Table
		if r.TableDiffers {
			table += " (differs)"
			differ++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\t%s\t%d\t%d\n", r.ID, r.Version, stamp(r.Started),
			r.HeartbeatAge.Round(time.Millisecond), r.ClockOffset.Round(time.Millisecond), table, r.Jobs, r.Running)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nthis file's table: %s\n", mine)
	if differ > 0 {
		fmt.Fprintf(w, "WARNING: %d of %d live replicas run a job table different from most (a rolling deploy in progress, or a stale config?)\n", differ, len(rs))
	}
}
