package jobs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  interface{ Validate() error }
		want []string // each a *FieldError's Error()
	}{
		{"good command", &Command{Args: []string{"./x"}, Env: map[string]string{"A": "b"}}, nil},
		{"good http", &HTTP{URL: "https://x.example/a?t=secret", Method: "PATCH", Headers: map[string]string{"X-A": "b"},
			ExpectStatus: []int{200, 599}, FollowRedirects: RedirectNone}, nil},
		{"empty argv", &Command{}, []string{"Args: must not be empty: the first entry is the program to run"}},
		{"bad argv", &Command{Args: []string{"", "a\x00b"}}, []string{"Args[0]: the program to run must not be empty", "Args[1]: must not contain a NUL byte"}},
		{"bad env", &Command{Args: []string{"x"}, Env: map[string]string{"A=B": "", "SOLOCRON_FENCING_TOKEN": "1", "V": "a\x00"}},
			[]string{`Env["A=B"]: "A=B" is not an environment variable name`, `Env["SOLOCRON_FENCING_TOKEN"]: is set by the scheduler for every run`,
				`Env["V"]: must not contain a NUL byte`}},
		{"no url", &HTTP{}, []string{"URL: is required"}},
		{"relative url", &HTTP{URL: "/x?token=secret"}, []string{"URL: must be an absolute URL starting with http:// or https://"}},
		{"bad http", &HTTP{URL: "ftp://x", Method: "post", FollowRedirects: "same-host", ExpectStatus: []int{99},
			Headers: map[string]string{"Bad Name": "x", "solocron-fencing-slot": "1", "X-A": "a\r\nX-B: b"}},
			[]string{`URL: scheme "ftp" is not http or https`, `FollowRedirects: "same-host" is not one of same_host, all, none`,
				`Method: "post": methods are case-sensitive; write POST`, `Headers["Bad Name"]: "Bad Name" is not a valid header name`,
				`Headers["X-A"]: must not contain a line break or NUL byte`, `Headers["solocron-fencing-slot"]: is set by the scheduler on every request`,
				"ExpectStatus[0]: 99 is not an HTTP status code (100 to 599)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.job.Validate()
			want := "<nil>"
			if len(tc.want) > 0 {
				want = strings.Join(tc.want, "\n") // errors.Join's
			}
			var fe *FieldError
			if got := fmt.Sprint(err); got != want || err != nil && !errors.As(err, &fe) {
				t.Errorf("Validate:\n\t%s\nwant *FieldErrors\n\t%s", strings.ReplaceAll(got, "\n", "\n\t"), strings.Join(tc.want, "\n\t"))
			}
			if strings.Contains(fmt.Sprint(err), "secret") {
				t.Errorf("%q repeats the URL's query", err)
			}
		})
	}
}

// The names the scheduler sets are exported once; Run still lets them win
// over a Command's Env (Validate refuses them).
func TestReservedNames(t *testing.T) {
	for _, n := range []string{envJob, envRunID, envScheduledAt, envFencingToken, envAttempt, envReplicaID, envSlot} {
		if !ReservedEnv(n) {
			t.Errorf("ReservedEnv(%q) = false", n)
		}
	}
	for _, n := range []string{envSupervisor, envSupervisorGorace} { // the supervisor's markers
		if !ReservedEnv(n) {
			t.Errorf("ReservedEnv(%q) = false", n)
		}
	}
	if ReservedEnv("PATH") || ReservedEnv("solocron_job") || ReservedEnv("SOLOCRON_JOB_SUPERVISOR_X") {
		t.Error("ReservedEnv holds a name the scheduler does not set")
	}
	for _, n := range []string{"Idempotency-Key", "solocron-fencing-token", "SOLOCRON-FENCING-SLOT"} {
		if !ReservedHeader(n) {
			t.Errorf("ReservedHeader(%q) = false", n)
		}
	}
	if ReservedHeader("Authorization") {
		t.Error("ReservedHeader(Authorization) = true")
	}
	c := &Command{Args: []string{"x"}, Env: map[string]string{envJob: "mine"}}
	if c.problems(false).first() != nil {
		t.Errorf("Run would refuse a reserved variable in Env: %v", c.problems(false))
	}
}
