package jobs

import (
	"errors"
	"fmt"
	"net/http"
)

// ExitError reports a command that did not exit successfully.
type ExitError struct {
	// Code is the exit status, or -1 when the process was ended by a signal.
	Code int
	// Signal names the signal that ended the process ("killed",
	// "terminated", ...), or "" when it exited on its own.
	Signal string
	// Err is the underlying *exec.ExitError, so code that already knows
	// os/exec can keep using errors.As with it.
	Err error
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return "jobs: command ended by signal: " + e.Signal
	}
	return fmt.Sprintf("jobs: command exited with code %d", e.Code)
}

// Unwrap returns e.Err.
func (e *ExitError) Unwrap() error { return e.Err }

// StatusError reports an HTTP response whose status the job did not expect.
// HTTP.Run returns it as is (retryable) for 5xx, 408 and 429, and wrapped in
// Permanent for any other status.
type StatusError struct {
	// Code is the response's status code.
	Code int
	// Snippet is the start of the response body, at most 4 KiB.
	Snippet string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("jobs: http: unexpected status %d %s", e.Code, http.StatusText(e.Code))
	if e.Snippet != "" {
		msg += ": " + e.Snippet
	}
	return msg
}

// PanicError is a panic recovered by Func.Run.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// formats it.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("jobs: panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error (a runtime error, or an
// error passed to panic), so errors.Is and errors.As can see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Permanent marks err as one that retrying cannot fix (a bad URL, a 404, a
// program that does not exist): the run's retry policy must not make another
// attempt. Permanent(nil) is nil. The result wraps err, so errors.Is and
// errors.As still see it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps (including through
// errors.Join), was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
