package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// Validation parses a job's schedules, and the table in force keeps what
// it parsed: Reload does not parse them again.
func TestValidationCarriesParsedSchedules(t *testing.T) {
	tab := []Job{{Name: "a", Schedule: "@every 1s", Handler: jobs.Func(func(context.Context) error { return nil }),
		Blackouts: []Blackout{{Cron: "@daily", Duration: time.Hour}, {From: time.Unix(0, 0), To: time.Unix(60, 0)}}}}
	p, err := checkTable(tab)
	if err != nil {
		t.Fatal(err)
	}
	if p[0].sched == nil || len(p[0].blackouts) != 2 || p[0].blackouts[0].sched == nil || p[0].blackouts[1].sched != nil {
		t.Fatalf("parsed: %+v", p[0])
	}
	j := p[0].jobState(tab[0].withDefaults(), "k", &memo{}, time.Second)
	if j.sched != p[0].sched || j.blackouts[0].sched != p[0].blackouts[0].sched {
		t.Error("the job state does not carry the schedules validation parsed")
	}
	if _, err := checkTable([]Job{{Name: "b", Schedule: "nope"}}); err == nil {
		t.Error("checkTable accepted a bad table")
	}
}

// The store checks a run id's job name with its own copy of the pattern:
// it must be JobNamePattern.
func TestJobNamePatternIsTheStores(t *testing.T) {
	if store.JobNamePattern != JobNamePattern {
		t.Fatalf("the store's job name pattern %q is not JobNamePattern %q", store.JobNamePattern, JobNamePattern)
	}
}
