package scheduler

import "github.com/solocron/solocron/scheduler/internal/store"

// UseTable tells the Control which of the table's jobs share pools
// (Job.Pool), and their sizes, for Status and the console. A job's keys do
// not depend on it. A Control made by a Scheduler (Scheduler.Control)
// follows its table by itself.
func (c *Control) UseTable(jobs []Job) { c.store.PlacePools(poolJobs(jobs)) }

// poolJobs is what the store's pool placement needs of a table.
func poolJobs(jobs []Job) []store.PoolJob {
	ps := make([]store.PoolJob, len(jobs))
	for i, j := range jobs {
		ps[i] = store.PoolJob{Name: j.Name, Pool: j.Pool, PoolSize: j.PoolSize}
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
