package jobs

import (
	"syscall"
	"unsafe"
)

// canWaitNoReap: Linux can wait for a child's exit without reaping it
// (waitid WNOWAIT), which keeps its pid, and so its process group id,
// reserved while Run still signals the group.
const canWaitNoReap = true

// sysProcAttr puts the job in a new process group and asks the kernel to
// signal it when the forking thread dies: SIGKILL for the program itself,
// SIGUSR2 (caught, then checked against getppid) for a supervisor.
func sysProcAttr(supervised bool) *syscall.SysProcAttr {
	sig := syscall.SIGKILL
	if supervised {
		sig = parentDeathSignal
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

// waitExited blocks until the child pid has exited, leaving it unreaped.
func waitExited(pid int) error {
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e != syscall.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
