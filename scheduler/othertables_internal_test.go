package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// diesInRegistry is a store whose replica dies as far as the registry
// goes: once dead, its record is neither refreshed nor removed (a SIGKILL).
type diesInRegistry struct {
	store.Backend
	dead *atomic.Bool
}

func (b diesInRegistry) Registry(ctx context.Context, mode, id string, rec *store.ReplicaRecord) ([]store.Replica, error) {
	if b.dead.Load() {
		return nil, errors.New("test: replica dead")
	}
	return b.Backend.Registry(ctx, mode, id, rec)
}

// Two replicas whose tables differ in another job than tick: B runs tick
// alone and dies just after its registry heartbeat, before it claims
// tick's next instant; A starts while B is still listed live. The instant
// nobody claimed is recorded missed: B's table has tick as A's has, so B
// would have claimed it as A does. A table fingerprint taken whole said B
// ran another table, and A left the instant with neither a run nor a record
// (three real daemons: one instant lost in two trials of three).
func TestOutageWithAnotherTableInAnotherJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		st := redisStore(t, c)
		noop := jobs.Func(func(context.Context) error { return nil })
		tick := Job{Name: "tick", Schedule: "@every 1s", StartingDeadline: 200 * time.Millisecond, Handler: noop}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		start := func(id string, table []Job, dead *atomic.Bool) (stop func()) {
			s, err := New(st, table, WithReplicaID(id), WithLogger(quiet), WithShutdownGrace(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if dead != nil {
				s.store = diesInRegistry{Backend: s.store, dead: dead}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = s.Run(ctx); close(done) }()
			return func() { cancel(); <-done }
		}
		// B beats at x.5 s: it dies at 5.52 s, before it claims the instant
		// of 6 s (250 ms ahead), whose deadline (6.2 s) comes before B's
		// next beat was due (6.5 s).
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(500 * time.Millisecond)))
		base := time.Now().Truncate(time.Second)
		var dead atomic.Bool
		stopB := start("B", []Job{tick, {Name: "other", Schedule: "@every 1h", Handler: noop}}, &dead)
		time.Sleep(time.Until(base.Add(5*time.Second + 520*time.Millisecond)))
		dead.Store(true)
		stopB()
		time.Sleep(time.Until(base.Add(7 * time.Second)))
		stopA := start("A", []Job{tick}, nil)
		time.Sleep(3 * time.Second)
		stopA()
		time.Sleep(5 * time.Second)

		h, err := st.Control().History(context.Background(), "tick", 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[time.Time][]Run{}
		for _, r := range h {
			got[r.ScheduledAt.UTC()] = append(got[r.ScheduledAt.UTC()], r)
		}
		for at := base.Add(4 * time.Second); at.Before(base.Add(9 * time.Second)); at = at.Add(time.Second) {
			if rs := got[at.UTC()]; len(rs) != 1 {
				t.Errorf("instant %s (B dead at +5.52 s, A up at +7 s): %d records %+v, want 1", at.Sub(base), len(rs), rs)
			}
		}
	})
}

// Tables by parts: the same for a job both tables have alike, whatever
// else differs; another for a job that differs; unknown (never the same)
// when a replica did not say.
func TestTablePartsPerJob(t *testing.T) {
	noop := jobs.Func(func(context.Context) error { return nil })
	tick := Job{Name: "tick", Schedule: "@every 1s", Handler: noop}
	other := Job{Name: "other", Schedule: "@every 1h", Handler: noop}
	if tablePart("tick") == tablePart("other") {
		t.Fatal("tick and other fall in one part: pick another name")
	}
	a, b := tableParts([]Job{tick}), tableParts([]Job{other, tick})
	if !samePart(a, b, "tick") || samePart(a, b, "other") {
		t.Errorf("a table with other added: tick the same %v (want true), other the same %v (want false)", samePart(a, b, "tick"), samePart(a, b, "other"))
	}
	moved := tick
	moved.Schedule = "@every 2s"
	if samePart(a, tableParts([]Job{moved}), "tick") {
		t.Error("tick's schedule changed: its part is still the same")
	}
	if samePart(a, "", "tick") || samePart("", "", "tick") {
		t.Error("a replica that gave no parts has the same part")
	}
}
