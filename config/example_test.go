package config_test

import (
	"context"
	"fmt"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
)

func ExampleParse() {
	table := `
defaults:
  timezone: Europe/Berlin
jobs:
  - name: report
    schedule: "0 6 * * *"
    command: ["./report", "--to", "${REPORT_TO}"]
  - name: reindex
    schedule: "@every 1h"
    func: reindex
`
	f, err := config.Parse("solocron.yaml", []byte(table),
		config.WithFuncs(map[string]jobs.Job{
			"reindex": jobs.Func(func(ctx context.Context) error { return nil }),
		}),
		config.WithLookupEnv(func(name string) (string, bool) {
			return map[string]string{"REPORT_TO": "ops@example.com"}[name], name == "REPORT_TO"
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range f.Jobs {
		fmt.Printf("%s %q in %s: %T\n", j.Name, j.Schedule, j.Timezone, j.Handler)
	}
	fmt.Println(f.Jobs[0].Handler.(*jobs.Command).Args)
	// Output:
	// report "0 6 * * *" in Europe/Berlin: *jobs.Command
	// reindex "@every 1h" in Europe/Berlin: jobs.Func
	// [./report --to ops@example.com]
}

func ExampleErrors() {
	table := `
jobs:
  - name: report
    schedule: "@daily"
    comand: [./report]
    timeout: 30
`
	_, err := config.Parse("solocron.yaml", []byte(table))
	fmt.Println(err)
	// Output:
	// solocron.yaml:3:5: jobs[0]: needs one of command (a program to run), http (a request to send) or func (a registered Go function)
	// solocron.yaml:5:5: jobs[0].comand: unknown field "comand" (did you mean "command"?)
	// solocron.yaml:6:14: jobs[0].timeout: expected a duration such as 30s or 1h30m, got integer 30 (a duration needs a unit, e.g. 30s)
}

func ExampleStore_Redacted() {
	s := config.Store{URL: "redis://app:hunter2@redis:6379/0", Sentinel: config.Sentinel{Password: "hunter2"}}
	r := s.Redacted()
	fmt.Println(r.URL, r.Sentinel.Password)
	// Output:
	// redis://app:xxxxx@redis:6379/0 xxxxx
}
