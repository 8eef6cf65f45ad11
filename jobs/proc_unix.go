//go:build unix && !linux

package jobs

import (
	"errors"
	"syscall"
)

// canWaitNoReap: without waitid WNOWAIT the leader is reaped as soon as it
// exits, so Run does not signal its group afterwards (the number could name
// a new group by then), and processes the program left behind are not
// killed.
const canWaitNoReap = false

// sysProcAttr puts the job in a new process group. There is no parent-death
// signal outside Linux.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func waitExited(int) error { return errors.ErrUnsupported }
