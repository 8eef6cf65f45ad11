package jobs

import (
	"context"
	"runtime/debug"
)

// Run calls f and returns its error. A panic inside f is recovered and
// returned as a *PanicError carrying the panic value and the stack of the
// panicking goroutine, so one bad job fails its run instead of taking the
// replica (and every other job on it) down.
//
// runtime.Goexit (for example t.FailNow in a test) is not a panic: it still
// ends the calling goroutine.
func (f Func) Run(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f(ctx)
}
