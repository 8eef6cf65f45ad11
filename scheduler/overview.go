package scheduler

import (
	"context"
)

// Overview reads the state of many jobs at once, each with its latest
// recent finished runs (History). On one Redis deployment it costs two
// pipelined round trips (per Cluster node) whatever the number of jobs,
// where Status costs one or two per job; Redlock reads job by job.
// Unknown job names read as jobs that never ran.
func (c *Control) Overview(ctx context.Context, jobs []string, recent int) ([]Overview, error) {
	for _, j := range jobs {
		if err := checkJob(j); err != nil {
			return nil, err
		}
	}
	if recent <= 0 {
		recent = 10
	}
	return c.store.Overview(ctx, jobs, recent)
}

// HistoryPage returns the job's finished run records newest first, skipping
// the first offset of them, at most limit (the store keeps the job's
// history_limit). One round trip on one Redis deployment.
func (c *Control) HistoryPage(ctx context.Context, job string, offset, limit int) ([]Run, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	offset = max(offset, 0)
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	return c.store.HistoryPage(ctx, job, offset, limit)
}
