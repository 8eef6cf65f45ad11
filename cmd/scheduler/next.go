package main

import (
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/solocron/solocron/scheduler"
)

func nextFlags(fs *flag.FlagSet, c *cli) func([]string) int {
	count := fs.Int("count", 5, "how many instants per job")
	from := fs.String("from", "", "list the instants after this RFC 3339 `TIME` instead of after now")
	return func(pos []string) int {
		if *count < 1 {
			return c.usageError("next", "--count must be at least 1")
		}
		if len(pos) > 1 {
			return c.usageError("next", "want at most one JOB, got %d arguments", len(pos))
		}
		after := time.Now()
		if *from != "" {
			t, err := time.Parse(time.RFC3339, *from)
			if err != nil {
				return c.usageError("next", "--from %q: want an RFC 3339 time such as 2026-11-22T04:00:00Z", *from)
			}
			after = t
		}
		f, code := c.loadTable()
		if code != exitOK {
			return code
		}
		table := f.Jobs
		if len(pos) == 1 {
			j, ok := findJob(f, pos[0])
			if !ok {
				return c.unknownJob(f, pos[0])
			}
			table = []scheduler.Job{j}
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tSCHEDULE\tUTC\tJOB'S ZONE")
		for _, j := range table {
			s, err := j.Timing()
			if err != nil { // config validated it; cannot happen
				fmt.Fprintf(c.stderr, "scheduler: job %q: %v\n", j.Name, err)
				return exitFailure
			}
			spec := j.Schedule
			if j.Paused {
				spec += " (paused in table)"
			}
			t := after
			for range *count {
				t = s.Next(t)
				if t.IsZero() {
					fmt.Fprintf(tw, "%s\t%s\t(never again)\t\n", j.Name, spec)
					break
				}
				mark := ""
				if b, in := s.InBlackout(t); in {
					mark = "  [blackout " + b.String() + ": recorded skipped_blackout]"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.Name, spec, t.UTC().Format(time.RFC3339),
					t.In(s.Location()).Format("Mon 2006-01-02 15:04:05 MST")+" ("+s.Location().String()+")"+mark)
			}
		}
		if err := tw.Flush(); err != nil {
			return exitFailure
		}
		return exitOK
	}
}
