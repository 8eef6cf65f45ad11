package jobs

import (
	"errors"
	"fmt"
	"testing"
)

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
	base := &StatusError{Code: 404, Snippet: "not here"}
	p := Permanent(base)
	if p.Error() != base.Error() {
		t.Errorf("Permanent changed the message: %q", p)
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"marked", p, true},
		{"wrapped", fmt.Errorf("attempt 1: %w", p), true},
		{"joined", errors.Join(errors.New("other"), p), true},
		{"unwrapped text", errors.New(p.Error()), false},
	} {
		if got := IsPermanent(tc.err); got != tc.want {
			t.Errorf("%s: IsPermanent = %v, want %v", tc.name, got, tc.want)
		}
	}
	var se *StatusError
	if !errors.As(fmt.Errorf("x: %w", p), &se) || se != base {
		t.Error("errors.As cannot see through Permanent")
	}
}

func TestErrorMessages(t *testing.T) {
	inner := errors.New("inner")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&ExitError{Code: 3}, "jobs: command exited with code 3"},
		{&ExitError{Code: -1, Signal: "killed"}, "jobs: command ended by signal: killed"},
		{&StatusError{Code: 503, Snippet: "busy"}, "jobs: http: unexpected status 503 Service Unavailable: busy"},
		{&StatusError{Code: 404}, "jobs: http: unexpected status 404 Not Found"},
		{&PanicError{Value: "x"}, "jobs: panic: x"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
	if !errors.Is(&ExitError{Err: inner}, inner) {
		t.Error("ExitError does not unwrap Err")
	}
}
