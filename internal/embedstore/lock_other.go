//go:build !unix

package embedstore

import (
	"errors"
	"log/slog"
	"os"
)

// guardDir has nothing to do where a data directory cannot be locked.
func guardDir(string, *slog.Logger) {}

func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("embedded store: a data directory needs flock, which this system lacks")
}
