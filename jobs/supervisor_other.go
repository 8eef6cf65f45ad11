//go:build !linux

package jobs

// supervisorSupported: the supervisor relies on Linux's parent-death signal.
const supervisorSupported = false

// SupervisorMain does nothing outside Linux: there is no parent-death signal
// to build supervision on. It is safe to call first thing in main on every
// platform.
func SupervisorMain() {}

// monoNow is never needed without a supervisor.
func monoNow() int64 { return 0 }
