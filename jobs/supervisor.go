package jobs

import (
	"context"
	"sync/atomic"
)

const (
	// selfExe re-executes the running binary even after it was replaced
	// or deleted on disk by a deploy.
	selfExe = "/proc/self/exe"
	// supervisorArg0 is the supervisor's argv[0], so ps shows what it is.
	supervisorArg0 = "solocron-job-supervisor"
)

// supervisorAvailable is set by SupervisorMain in a process that was not
// started as a supervisor.
var supervisorAvailable atomic.Bool

// superviseKey lets tests choose the mode per run.
type superviseKey struct{}

// useSupervisor reports whether Command.Run should start its program under
// a supervisor.
func useSupervisor(ctx context.Context) bool {
	if v, ok := ctx.Value(superviseKey{}).(bool); ok {
		return v && supervisorSupported
	}
	return supervisorAvailable.Load()
}
