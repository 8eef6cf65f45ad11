package scheduler

// UseTable tells the Control which of the table's jobs share pools
// (Job.Pool), and their sizes, for Status and the console. A job's keys do
// not depend on it. A Control made by a Scheduler (Scheduler.Control)
// follows its table by itself.
func (c *Control) UseTable(jobs []Job) { c.store.placePools(poolJobs(jobs)) }

// poolJobs is what the store's pool placement needs of a table.
func poolJobs(jobs []Job) []poolJob {
	ps := make([]poolJob, len(jobs))
	for i, j := range jobs {
		ps[i] = poolJob{name: j.Name, pool: j.Pool, poolSize: j.PoolSize}
	}
	return ps
}

// clipName shortens a name quoted in an error.
func clipName(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}
