//go:build unix

package embedstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// guardDir takes group and other users' write permission off a data
// directory that has it (one made beforehand by hand, or by an umask of
// 000): whoever may write in it may replace a snapshot, which the daemon
// loads as its state at the next start, or plant a link where the lock
// file goes. What it cannot fix (the directory is another user's) it
// logs.
func guardDir(dir string, log *slog.Logger) {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o022 == 0 {
		return
	}
	was := fi.Mode().Perm()
	if err := os.Chmod(dir, was&^0o022); err != nil {
		log.Error("embedded store: other users may write in the data directory, and so change the scheduler's state; make it writable by this user only (chmod go-w)",
			"data_dir", dir, "mode", fmt.Sprintf("%#o", was), "err", err)
		return
	}
	log.Warn("embedded store: the data directory was writable by other users; took their write permission off",
		"data_dir", dir, "was", fmt.Sprintf("%#o", was), "now", fmt.Sprintf("%#o", was&^0o022))
}

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
