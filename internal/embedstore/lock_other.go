//go:build !unix

package embedstore

import (
	"errors"
	"os"
)

func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("embedded store: a data directory needs flock, which this system lacks")
}
