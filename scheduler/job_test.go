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
		{"no name", func(j *scheduler.Job) { j.Name = "" }, []string{"Name: is required"}},
		{"brace in name", func(j *scheduler.Job) { j.Name = "a{b}" }, []string{"Name: \"a{b}\" may contain only"}},
		{"long name", func(j *scheduler.Job) { j.Name = strings.Repeat("x", 129) }, []string{"Name: is 129 bytes long"}},
		{"no schedule", func(j *scheduler.Job) { j.Schedule = " " }, []string{"Schedule: is required"}},
		{"bad schedule", func(j *scheduler.Job) { j.Schedule = "61 * * * *" }, []string{"Schedule:"}},
		{"bad zone", func(j *scheduler.Job) { j.Schedule = "0 * * * *"; j.Timezone = "Mars/Olympus" }, []string{"Timezone:"}},
		{"offset on cron", func(j *scheduler.Job) { j.Schedule = "0 * * * *"; j.Offset = time.Second }, []string{"Offset:"}},
		{"no handler", func(j *scheduler.Job) { j.Handler = nil }, []string{"Handler: a job needs exactly one of"}},
		{"negative lease", func(j *scheduler.Job) { j.Lease = -time.Second }, []string{"Lease: must not be negative"}},
		{"tiny lease", func(j *scheduler.Job) { j.Lease = 10 * time.Millisecond }, []string{"Lease: must be at least 100ms"}},
		{"bad overlap", func(j *scheduler.Job) { j.Overlap = "queue" }, []string{"Overlap: \"queue\" is not one of"}},
		{"max_wait without wait", func(j *scheduler.Job) { j.MaxWait = time.Second }, []string{"MaxWait: applies only to overlap: wait"}},
		{"bad catchup", func(j *scheduler.Job) { j.Catchup = "some" }, []string{"Catchup:"}},
		{"bad on_lease_lost", func(j *scheduler.Job) { j.OnLeaseLost = "panic" }, []string{"OnLeaseLost:"}},
		{"negatives", func(j *scheduler.Job) { j.Retries, j.Concurrency, j.HistoryLimit = -1, -1, -1 },
			[]string{"Retries:", "Concurrency:", "HistoryLimit:"}},
		{"bad command", func(j *scheduler.Job) {
			j.Handler = &jobs.Command{Args: []string{""}, Env: map[string]string{"SOLOCRON_RUN_ID": "x"}}
		},
			[]string{"Handler.Args[0]: the program to run must not be empty", `Handler.Env["SOLOCRON_RUN_ID"]: is set by the scheduler`}},
		{"bad http", func(j *scheduler.Job) {
			j.Handler = &jobs.HTTP{URL: "ftp://x", Headers: map[string]string{"solocron-fencing-token": "1"}, ExpectStatus: []int{99}}
		}, []string{`Handler.URL: scheme "ftp" is not http or https`, `Handler.Headers["solocron-fencing-token"]: is set by the scheduler`,
			"Handler.ExpectStatus[0]: 99 is not an HTTP status code"}},
		{"kill grace over half the lease", func(j *scheduler.Job) { j.Handler = &jobs.Command{Args: []string{"x"}, KillGrace: 20 * time.Second} },
			[]string{"Handler.StopGrace: 20s leaves no room inside the lease (30s)"}},
		{"several at once", func(j *scheduler.Job) { j.Name, j.Schedule, j.Timeout = "", "x", -1 },
			[]string{"Name:", "Schedule:", "Timeout:"}},
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
	if err == nil || !strings.Contains(err.Error(), `jobs[2].Name: "a" is already the name of jobs[0]`) {
		t.Fatalf("ValidateTable = %v", err)
	}
}
