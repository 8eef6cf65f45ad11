package scheduler

// UseTable tells the Control which of the table's jobs share pools
// (Job.Pool), and their sizes, for Status and the console. A job's keys do
// not depend on it. A Control made by a Scheduler (Scheduler.Control)
// follows its table by itself.
func (c *Control) UseTable(jobs []Job) { c.store.placePools(jobs) }

// clipName shortens a name quoted in an error.
func clipName(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}
