//go:build unix

package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/solocron/solocron/jobs"
)

// A Command runs a program (argv, no shell unless you ask for one) with the
// run's identity in its environment. Its output goes to the run's output and,
// line by line, to the run's logger.
func ExampleCommand() {
	ctx := jobs.NewContext(context.Background(), jobs.Info{
		Job:          "draw",
		RunID:        "draw@2026-11-22T04:00:00Z",
		ScheduledAt:  time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC),
		FencingToken: 42,
		Attempt:      1,
	})
	ctx = jobs.WithOutput(ctx, os.Stdout)
	ctx = jobs.WithLogger(ctx, slog.New(slog.DiscardHandler))

	draw := &jobs.Command{
		Args: []string{"sh", "-c", `echo "$SOLOCRON_RUN_ID token=$SOLOCRON_FENCING_TOKEN winners=$WINNERS"`},
		Env:  map[string]string{"WINNERS": "10"},
	}
	if err := draw.Run(ctx); err != nil {
		fmt.Println(err)
	}

	err := (&jobs.Command{Args: []string{"sh", "-c", "exit 3"}}).Run(ctx)
	var exit *jobs.ExitError
	if errors.As(err, &exit) {
		fmt.Println("exit code", exit.Code)
	}
	// Output:
	// draw@2026-11-22T04:00:00Z token=42 winners=10
	// exit code 3
}
