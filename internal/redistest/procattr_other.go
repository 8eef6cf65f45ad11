//go:build !linux

package redistest

import "syscall"

// DieWithParent: without Linux's parent-death signal, a server outlives a test
// binary that is killed (Cleanup stops it on every normal exit).
func DieWithParent() *syscall.SysProcAttr { return nil }
