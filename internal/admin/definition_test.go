package admin_test

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/solocron/solocron/internal/admin"
)

// GET /api/v1/jobs/{name} carries the job's definition as the console
// shows it, without what may hold a secret: the program, not its
// arguments; the names of variables and headers, not their values; the
// URL without its user, password or query. (f.do fails the test on any
// answer that carries one of the fixture's secrets.)
func TestJobDefinitionAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, token)
		var cmd, hook admin.JobStatus
		f.do("GET", "/api/v1/jobs/cmd", bearer).decode(t, &cmd)
		f.do("GET", "/api/v1/jobs/hook", bearer).decode(t, &hook)
		if d := cmd.Job.Definition; d == nil || d.Program != "echo" || d.Args != 1 || !slices.Equal(d.Env, []string{"PASSWORD"}) || d.OnLeaseLost != "cancel" {
			t.Errorf("cmd's definition: %+v", d)
		}
		if d := hook.Job.Definition; d == nil || d.Method != "GET" || d.URL != "https://example.invalid/" || !slices.Equal(d.Headers, []string{"Authorization"}) {
			t.Errorf("hook's definition: %+v", d)
		}
	})
}
