package redistest

import "syscall"

// DieWithParent makes a process the tests start die with the test process even if the test
// binary is killed (Linux's parent-death signal).
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
