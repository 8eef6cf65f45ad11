package config_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/solocron/solocron/jobs"
)

func TestEnvExpansion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"${TOKEN}", "tok-123"},
		{"Bearer ${TOKEN}", "Bearer tok-123"},
		{"${HOST}${HOST}", "webweb"},
		{"pre-${HOST}-post", "pre-web-post"},
		{"${EMPTY}", ""},        // set but empty is fine
		{"$$", "$"},             // $$ is a literal $
		{"$${HOST}", "${HOST}"}, // so $${VAR} is the text ${VAR}
		{"$$$${HOST}", "$${HOST}"},
		{"$$${HOST}", "$web"},
		{"$HOST", "$HOST"}, // a bare $VAR is left for a shell
		{"echo $HOME ${HOST}", "echo $HOME web"},
		{"cost: 5$", "cost: 5$"}, // a trailing $ stays
		{"$1 $@ $(date)", "$1 $@ $(date)"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f := mustParse(t, fmt.Sprintf(`jobs:
  - name: a
    schedule: "@hourly"
    command: [sh, -c, %q]
    env: {V: %q}
  - name: b
    schedule: "@hourly"
    http: {url: "https://x.example/", headers: {X-V: %q}, body: %q}
`, tc.in, tc.in, tc.in, tc.in))
			cmd := f.Jobs[0].Handler.(*jobs.Command)
			h := f.Jobs[1].Handler.(*jobs.HTTP)
			for what, got := range map[string]string{"command arg": cmd.Args[2], "env value": cmd.Env["V"],
				"header": h.Headers["X-V"], "body": h.Body} {
				if got != tc.want {
					t.Errorf("%s: %q expands to %q, want %q", what, tc.in, got, tc.want)
				}
			}
		})
	}
}

func TestEnvExpansionErrors(t *testing.T) {
	_, err := parse(t, `admin:
  token: ${SOLOCRON_ADMIN_TOKEN}
jobs:
  - name: a
    schedule: "@hourly"
    command:
      - echo
      - "${NOPE} and ${NOPE2}"
      - "${"
      - "x ${1X}"
      - "${A:-x}"
      - "${}"
    env: {"${HOST}": "${UNSET_TOO}"}
`)
	wantErrors(t, err,
		`2:10: admin.token: ${SOLOCRON_ADMIN_TOKEN}: environment variable SOLOCRON_ADMIN_TOKEN is not set`,
		`8:9: jobs[0].command[1]: ${NOPE}: environment variable NOPE is not set`,
		`8:9: jobs[0].command[1]: ${NOPE2}: environment variable NOPE2 is not set`,
		`9:9: jobs[0].command[2]: ${ has no closing } (write $${ for a literal ${)`,
		`10:9: jobs[0].command[3]: ${1X}: "1X" is not a variable name`,
		`11:9: jobs[0].command[4]: ${A:-x}: "A:-x" is not a variable name (${VAR:-default} and similar forms are not supported)`,
		`12:9: jobs[0].command[5]: ${}: "" is not a variable name`,
		// Keys are never expanded: the key stays "${HOST}".
		`13:22: jobs[0].env["${HOST}"]: ${UNSET_TOO}: environment variable UNSET_TOO is not set`,
	)
}

func TestEnvExpansionInOtherTypes(t *testing.T) {
	f := mustParse(t, `replica_id: ${HOST}
jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    retries: ${N}
    timeout: ${D}
    paused: ${PAUSED}
`)
	j := f.Jobs[0]
	if f.ReplicaID != "web" || j.Retries != 3 || j.Timeout != 45*time.Second || !j.Paused {
		t.Errorf("ReplicaID, Retries, Timeout, Paused = %q, %d, %v, %v; want web, 3, 45s, true",
			f.ReplicaID, j.Retries, j.Timeout, j.Paused)
	}
	_, err := parse(t, `jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    retries: ${WORD}
    timeout: ${WORD}
    paused: ${WORD}
`)
	wantErrors(t, err,
		`5:14: jobs[0].retries: expected an integer, but ${WORD} expands to "two"`,
		`6:14: jobs[0].timeout: expected a duration such as 30s or 1h30m, but ${WORD} expands to "two"`,
		`7:13: jobs[0].paused: expected a boolean (true or false), but ${WORD} expands to "two"`,
	)
}

func TestKeysAreNotExpanded(t *testing.T) {
	f := mustParse(t, `jobs:
  - name: a
    schedule: "@hourly"
    command: [x]
    env: {"$${HOST}": v, "$HOST": w}
`)
	want := map[string]string{"$${HOST}": "v", "$HOST": "w"}
	if got := f.Jobs[0].Handler.(*jobs.Command).Env; !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
}
