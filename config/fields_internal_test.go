package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// Every Go field a validator may name maps to a field of the file, so that
// its problems are reported at a YAML position: a field added to
// scheduler.Job, scheduler.Blackout, jobs.Command or jobs.HTTP without its
// YAML name fails here.
func TestValidatorFieldsMapToYAML(t *testing.T) {
	for _, f := range reflect.VisibleFields(reflect.TypeFor[scheduler.Job]()) {
		if f.Name == "Handler" {
			continue
		}
		top, path, _ := yamlField("jobs[0]", &scheduler.FieldError{Field: f.Name})
		if !slices.Contains(jobFields, top) || path != "jobs[0]."+top {
			t.Errorf("scheduler.Job.%s maps to %q (%s), not a job field", f.Name, top, path)
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[scheduler.Blackout]()) {
		_, path, _ := yamlField("jobs[0]", &scheduler.FieldError{Field: "Blackouts[1]." + f.Name})
		name, ok := strings.CutPrefix(path, "jobs[0].blackouts[1].")
		if !ok || !slices.Contains(blackoutFields, name) {
			t.Errorf("scheduler.Blackout.%s maps to %s, not a blackout field", f.Name, path)
		}
	}
	handlers := append(reflect.VisibleFields(reflect.TypeFor[jobs.Command]()), reflect.VisibleFields(reflect.TypeFor[jobs.HTTP]())...)
	handlers = append(handlers, reflect.StructField{Name: "StopGrace"}) // jobs.StopGracer, as the scheduler names it
	for _, f := range handlers {
		if f.Name == "Client" {
			continue // Go only
		}
		yf, ok := handlerFields[f.Name]
		top, sub, nested := strings.Cut(yf, ".")
		if !ok || !slices.Contains(jobFields, top) || nested && (top != "http" || !slices.Contains(httpFields, sub)) {
			t.Errorf("handler field %s maps to %q, not a job or http field", f.Name, yf)
		}
	}
	for _, tc := range []struct {
		jf   jobs.FieldError
		want string
	}{
		{jobs.FieldError{Field: "Args", Index: 2}, "jobs[0].command[2]"},
		{jobs.FieldError{Field: "Env", Key: "A B", Index: -1}, `jobs[0].env["A B"]`},
		{jobs.FieldError{Field: "Headers", Key: "X-A", Index: -1}, "jobs[0].http.headers.X-A"},
		{jobs.FieldError{Field: "ExpectStatus", Index: 0}, "jobs[0].http.expect_status[0]"},
		{jobs.FieldError{Field: "StopGrace", Index: -1}, "jobs[0].kill_grace"},
	} {
		if _, got := handlerField("jobs[0]", &tc.jf); got != tc.want {
			t.Errorf("%+v maps to %s, want %s", tc.jf, got, tc.want)
		}
	}
}
