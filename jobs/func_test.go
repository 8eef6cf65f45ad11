package jobs

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestFuncReturnsError(t *testing.T) {
	want := errors.New("boom")
	var got context.Context
	err := Func(func(ctx context.Context) error { got = ctx; return want }).Run(t.Context())
	if err != want {
		t.Errorf("Run = %v, want %v", err, want)
	}
	if got != t.Context() {
		t.Error("the function did not get Run's context")
	}
	if err := Func(func(context.Context) error { return nil }).Run(t.Context()); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestFuncRecoversPanic(t *testing.T) {
	sentinel := errors.New("sentinel")
	for _, tc := range []struct {
		name  string
		f     func()
		value func(any) bool
		is    error
	}{
		{"string", func() { panic("kaboom") }, func(v any) bool { return v == "kaboom" }, nil},
		{"error", func() { panic(sentinel) }, func(v any) bool { return v == sentinel }, sentinel},
		{"runtime error", func() {
			var m map[string]int
			m["x"] = 1
		}, func(v any) bool { _, ok := v.(runtime.Error); return ok }, nil},
		{"nil", func() { panic(nil) }, func(v any) bool { _, ok := v.(*runtime.PanicNilError); return ok }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Func(func(context.Context) error { tc.f(); return nil }).Run(t.Context())
			var pe *PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("Run = %v, want a *PanicError", err)
			}
			if !tc.value(pe.Value) {
				t.Errorf("panic value %#v", pe.Value)
			}
			if !strings.Contains(string(pe.Stack), "TestFuncRecoversPanic") {
				t.Errorf("stack does not show the panicking function:\n%s", pe.Stack)
			}
			if !strings.HasPrefix(err.Error(), "jobs: panic: ") {
				t.Errorf("message %q", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
}

func TestNilJobs(t *testing.T) {
	for name, job := range map[string]Job{"command": (*Command)(nil), "http": (*HTTP)(nil), "func": Func(nil)} {
		if err := job.Run(t.Context()); err == nil {
			t.Errorf("nil %s: Run returned nil", name)
		}
	}
}
