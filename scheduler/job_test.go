package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

var noop = jobs.Func(func(context.Context) error { return nil })

func TestJobValidation(t *testing.T) {
	ok := scheduler.Job{Name: "ok", Schedule: "@every 1s", Handler: noop}
	for _, tc := range []struct {
		name string
		edit func(*scheduler.Job)
		want []string // "field: message part"
	}{
		{"valid", func(*scheduler.Job) {}, nil},
		{"no name", func(j *scheduler.Job) { j.Name = "" }, []string{"name: is required"}},
		{"brace in name", func(j *scheduler.Job) { j.Name = "a{b}" }, []string{"name: \"a{b}\" may contain only"}},
		{"long name", func(j *scheduler.Job) { j.Name = strings.Repeat("x", 129) }, []string{"name: is 129 bytes long"}},
		{"no schedule", func(j *scheduler.Job) { j.Schedule = " " }, []string{"schedule: is required"}},
		{"bad schedule", func(j *scheduler.Job) { j.Schedule = "61 * * * *" }, []string{"schedule:"}},
		{"bad zone", func(j *scheduler.Job) { j.Schedule = "0 * * * *"; j.Timezone = "Mars/Olympus" }, []string{"timezone:"}},
		{"offset on cron", func(j *scheduler.Job) { j.Schedule = "0 * * * *"; j.Offset = time.Second }, []string{"offset:"}},
		{"no handler", func(j *scheduler.Job) { j.Handler = nil }, []string{"command: a job needs exactly one of"}},
		{"negative lease", func(j *scheduler.Job) { j.Lease = -time.Second }, []string{"lease: must not be negative"}},
		{"tiny lease", func(j *scheduler.Job) { j.Lease = 10 * time.Millisecond }, []string{"lease: must be at least 100ms"}},
		{"bad overlap", func(j *scheduler.Job) { j.Overlap = "queue" }, []string{"overlap: \"queue\" is not one of"}},
		{"max_wait without wait", func(j *scheduler.Job) { j.MaxWait = time.Second }, []string{"max_wait: applies only to overlap: wait"}},
		{"bad catchup", func(j *scheduler.Job) { j.Catchup = "some" }, []string{"catchup:"}},
		{"bad on_lease_lost", func(j *scheduler.Job) { j.OnLeaseLost = "panic" }, []string{"on_lease_lost:"}},
		{"negatives", func(j *scheduler.Job) { j.Retries, j.Concurrency, j.HistoryLimit = -1, -1, -1 },
			[]string{"retries:", "concurrency:", "history_limit:"}},
		{"several at once", func(j *scheduler.Job) { j.Name, j.Schedule, j.Timeout = "", "x", -1 },
			[]string{"name:", "schedule:", "timeout:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := ok
			tc.edit(&j)
			err := j.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var fe *scheduler.FieldError
			if !errors.As(err, &fe) || fe.Job != -1 {
				t.Errorf("error is not a *FieldError for a single job: %#v", err)
			}
		})
	}
}

func TestValidateTableFindsDuplicateNames(t *testing.T) {
	err := scheduler.ValidateTable([]scheduler.Job{
		{Name: "a", Schedule: "@hourly", Handler: noop},
		{Name: "b", Schedule: "@hourly", Handler: noop},
		{Name: "a", Schedule: "@daily", Handler: noop},
	})
	if err == nil || !strings.Contains(err.Error(), `jobs[2].name: "a" is already the name of jobs[0]`) {
		t.Fatalf("ValidateTable = %v", err)
	}
}
