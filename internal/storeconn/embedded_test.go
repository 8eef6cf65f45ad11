package storeconn_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/embedstore"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

func TestDefaultDataDir(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if d := storeconn.DefaultDataDir("/etc/solocron/solocron.yaml", getenv); d != "/etc/solocron/solocron.data" {
		t.Errorf("beside the table: %q", d)
	}
	env["STATE_DIRECTORY"] = "/var/lib/solocron:/var/lib/other"
	if d := storeconn.DefaultDataDir("/etc/solocron/solocron.yaml", getenv); d != "/var/lib/solocron" {
		t.Errorf("with STATE_DIRECTORY: %q", d)
	}
}

// runUntil runs one replica with job on a new Conn of dir until cond holds
// (or 15 s pass), then stops it and closes the Conn.
func runUntil(t *testing.T, dir string, job scheduler.Job, cond func() bool) {
	t.Helper()
	conn, err := storeconn.Open(config.Store{KeyPrefix: "solocron", MaxClockSkew: time.Second, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewScheduler([]scheduler.Job{job}, scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for !cond() && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // the runs come on the real clock
	}
	cancel()
	<-done
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedStoreKeepsStateAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ledger := testkit.NewLedger()
	job := scheduler.Job{Name: "tick", Schedule: "@every 1s", Handler: ledger.Job(nil)}
	runUntil(t, dir, job, func() bool { return len(ledger.Entries()) >= 1 })

	conn := open(t, config.Store{DataDir: dir})
	ctl, err := conn.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Pause(t.Context(), "tick"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}

	conn = open(t, config.Store{DataDir: dir})
	ctl, _ = conn.NewControl()
	st, err := ctl.Status(t.Context(), "tick", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused {
		t.Error("the pause was lost in a restart")
	}
	if len(st.History) == 0 || st.History[0].ID != ledger.Entries()[0].RunID {
		t.Errorf("history after a restart: %+v, want the run %s", st.History, ledger.Entries()[0].RunID)
	}
}

func TestSecondConnOnOneDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	open(t, config.Store{DataDir: dir})
	_, err := storeconn.Open(config.Store{DataDir: dir})
	if !errors.Is(err, embedstore.ErrLocked) {
		t.Fatalf("second Open: %v, want embedstore.ErrLocked", err)
	}
}

// A snapshot found damaged is a data loss: a run whose start the lost
// snapshot held is not started again, even though its instant is still
// within its starting deadline.
func TestEmbeddedStoreLossPlacesTheFloor(t *testing.T) {
	dir := t.TempDir()
	ledger := testkit.NewLedger()
	job := scheduler.Job{Name: "tick", Schedule: "@every 2s", StartingDeadline: time.Minute, Handler: ledger.Job(nil)}
	runUntil(t, dir, job, func() bool { return len(ledger.Entries()) >= 1 })
	// Keep the state as it is after the first run: the job's state exists.
	var old [2][]byte
	for i := range old {
		old[i], _ = os.ReadFile(filepath.Join(dir, "snapshot."+string(rune('0'+i))))
	}
	runUntil(t, dir, job, func() bool { return len(ledger.Entries()) >= 2 })
	second := ledger.Entries()[1]
	// The disk loses the newest writes: the older state comes back in one
	// slot, the other slot is torn.
	for i := range old {
		b := old[i]
		if i == 1 {
			b = b[:len(b)/2]
		}
		if err := os.WriteFile(filepath.Join(dir, "snapshot."+string(rune('0'+i))), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	runUntil(t, dir, job, func() bool { return time.Since(restarted) > 2500*time.Millisecond })
	for _, e := range ledger.Entries()[2:] {
		if e.RunID == second.RunID {
			t.Fatalf("run %s started twice: its start was in the snapshot the disk lost", e.RunID)
		}
		if e.Scheduled.Before(restarted) {
			t.Errorf("run %s, scheduled before the loss was noticed, started after it", e.RunID)
		}
	}
}
