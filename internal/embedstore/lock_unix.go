//go:build unix

package embedstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes the directory's lock (an exclusive flock on its lock file,
// released by the kernel when the process ends, however it ends) and writes
// this process's id in it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded store: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(b))
			if holder == "" {
				holder = "another process"
			}
			return nil, fmt.Errorf("%w: %s is locked by %s; run one daemon per data directory (give this one its own store.data_dir, or stop the other)", ErrLocked, dir, holder)
		}
		return nil, fmt.Errorf("embedded store: locking %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("scheduler pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
