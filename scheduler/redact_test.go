package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// WithRedactor: what a job prints or returns goes through the redactor
// before it is recorded, so a secret it leaks never reaches Redis.
func TestRedactorMasksRunRecords(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const secret = "store-password-123"
		_, c := redistest.MiniPipe(t)
		// An established job: a new one's first instants are recorded
		// missed (the data-loss floor), and this test needs a run.
		if err := c.HSetNX(context.Background(), "solocron:{leak}:meta", "epoch", "established").Err(); err != nil {
			t.Fatal(err)
		}
		leak := jobs.Func(func(ctx context.Context) error {
			fmt.Fprintf(jobs.Output(ctx), "env: PASSWORD=%s\n", secret)
			return errors.New("cannot connect with " + secret)
		})
		s, err := scheduler.New(schedtest.RedisStore(t, c), []scheduler.Job{{Name: "leak", Schedule: "@every 1h", Handler: leak}},
			scheduler.WithReplicaID("r1"), scheduler.WithLogger(slog.New(slog.DiscardHandler)),
			scheduler.WithRedactor(func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		time.Sleep(2 * time.Second)
		cancel()
		<-done
		h, err := s.Control().History(context.Background(), "leak", 10)
		if err != nil || len(h) != 1 {
			t.Fatalf("history %+v, %v", h, err)
		}
		if strings.Contains(h[0].Output+h[0].Error, secret) ||
			h[0].Output != "env: PASSWORD=[REDACTED]\n" || !strings.Contains(h[0].Error, "cannot connect with [REDACTED]") {
			t.Errorf("record: output %q, error %q", h[0].Output, h[0].Error)
		}
	})
}
