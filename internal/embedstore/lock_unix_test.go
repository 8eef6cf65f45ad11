//go:build unix

package embedstore

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data directory other users may write in (made by hand, or under umask
// 000) loses their write permission when the store opens it: they could
// replace the snapshot the next start loads, or plant a link at the lock
// file. Read permission is the owner's business (the files are 0600).
func TestDataDirectoryWritableByOthersIsTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // not subject to the umask
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := Open(Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o755 {
		t.Errorf("data directory mode %#o after Open, want 0755", got)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "writable by other users") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
	for _, name := range []string{LockName, slotPrefix + "0"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", name, fi.Mode().Perm())
		}
	}

	// A directory made by Open itself is 0700 (less the umask) and nothing
	// is said of it.
	fresh := filepath.Join(t.TempDir(), "fresh")
	logs.Reset()
	s2, err := Open(Options{Dir: fresh, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("fresh data directory: %v, mode %#o", err, fi.Mode().Perm())
	}
	if logs.Len() != 0 {
		t.Errorf("logged for a fresh directory:\n%s", logs.String())
	}
}
