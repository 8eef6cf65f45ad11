//go:build !unix

package jobs

import (
	"context"
	"errors"
	"fmt"
)

func (c *Command) run(ctx context.Context, argv, env []string) error {
	return Permanent(fmt.Errorf("jobs: command %s: %w", c.Args[0], errors.ErrUnsupported))
}
