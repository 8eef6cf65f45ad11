package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
	"github.com/solocron/solocron/store"
)

// An embedding program's unit test: a scheduler on an in-memory store, no
// Redis, no miniredis import.
func ExampleNewMemory() {
	st, err := store.NewMemory()
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ran := make(chan string, 1)
	sched, err := st.NewScheduler([]scheduler.Job{{
		Name: "reindex", Schedule: "@yearly",
		Handler: jobs.Func(func(ctx context.Context) error {
			ran <- jobs.RunID(ctx)[:len("reindex@manual")]
			return nil
		}),
	}}, scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sched.Run(ctx) }()
	if _, err := sched.Control().Trigger(ctx, "reindex"); err != nil {
		panic(err)
	}
	fmt.Println(<-ran)
	cancel()
	<-done
	// Output: reindex@manual
}

func load(t *testing.T, text string) *config.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "solocron.yaml")
	if err := os.WriteFile(path, []byte(text+"jobs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The store a table describes, built from Go: each mode gets its client,
// TLS its configuration, and the embedded store its data directory.
func TestOpenFile(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		check      func(t *testing.T, c *store.Conn, f *config.File)
	}{{
		name: "standalone with TLS",
		text: "store: {url: \"rediss://:pw@127.0.0.1:6380/2\"}\n",
		check: func(t *testing.T, c *store.Conn, _ *config.File) {
			o := c.Client.(*redis.Client).Options()
			if o.TLSConfig == nil || o.DB != 2 || o.Password != "pw" || c.Mode != "standalone" {
				t.Errorf("options: TLS %v, db %d, mode %s", o.TLSConfig != nil, o.DB, c.Mode)
			}
		},
	}, {
		name: "sentinel",
		text: "store: {mode: sentinel, sentinel: {master: m, addrs: [\"127.0.0.1:26379\"]}, url: \"redis://:pw@/1\"}\n",
		check: func(t *testing.T, c *store.Conn, _ *config.File) {
			if c.Mode != "sentinel" || c.Client == nil {
				t.Errorf("mode %s", c.Mode)
			}
		},
	}, {
		name: "cluster",
		text: "store: {mode: cluster, cluster: {addrs: [\"127.0.0.1:7000\"]}}\n",
		check: func(t *testing.T, c *store.Conn, _ *config.File) {
			if _, ok := c.Client.(*redis.ClusterClient); !ok || c.Mode != "cluster" {
				t.Errorf("client %T, mode %s", c.Client, c.Mode)
			}
		},
	}, {
		name: "redlock",
		text: "store: {mode: redlock, redlock: {urls: [\"redis://127.0.0.1:1\", \"redis://127.0.0.1:2\", \"redis://127.0.0.1:3\"]}}\n",
		check: func(t *testing.T, c *store.Conn, _ *config.File) {
			if len(c.Masters) != 3 || c.Mode != "redlock" {
				t.Errorf("%d masters, mode %s", len(c.Masters), c.Mode)
			}
		},
	}, {
		name: "min_replicas_ack",
		text: "store: {url: \"redis://127.0.0.1:6380\", min_replicas_ack: 1}\n",
		check: func(t *testing.T, c *store.Conn, f *config.File) {
			if _, err := c.Store(); err != nil || f.Store.MinReplicasAck != 1 {
				t.Errorf("store with min_replicas_ack: %v", err)
			}
		},
	}, {
		name: "embedded",
		text: "",
		check: func(t *testing.T, c *store.Conn, f *config.File) {
			want := filepath.Join(filepath.Dir(f.Path), "solocron.data")
			if c.Mode != "embedded" || c.Embedded == nil || c.Embedded.Dir() != want {
				t.Errorf("mode %s, data dir %q, want %q", c.Mode, c.Embedded.Dir(), want)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STATE_DIRECTORY", "")
			f := load(t, tc.text)
			c, err := store.OpenFile(f)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tc.check(t, c, f)
		})
	}
}

// NewMemory's scheduled runs start from the first instant (a new store
// has no loss to guard against).
func TestNewMemoryRunsScheduledJobs(t *testing.T) {
	st, err := store.NewMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ran := make(chan struct{}, 16)
	sched, err := st.NewScheduler([]scheduler.Job{{Name: "tick", Schedule: "@every 1s",
		Handler: jobs.Func(func(context.Context) error { ran <- struct{}{}; return nil })}},
		scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sched.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no run in 10 s")
	}
}
