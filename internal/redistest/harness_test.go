package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
)

func TestCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := redistest.StartCluster(t, 3, nil)
	t.Logf("cluster up in %s", time.Since(start))
	cl := c.Client(t, nil)
	ctx := t.Context()
	masters := map[string]bool{}
	for i := range 30 {
		key := "k{" + string(rune('a'+i)) + "}"
		if err := cl.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		m, err := cl.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr] = true
	}
	if len(masters) != 3 {
		t.Errorf("keys on %d masters, want 3", len(masters))
	}
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := redistest.StartSentinel(t, 2, 3, nil)
	t.Logf("sentinel up in %s", time.Since(start))
	c := s.Client(t, nil)
	ctx := t.Context()
	if err := c.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Replication is asynchronous: only a write the replicas have is sure
	// to survive the failover.
	if n, err := c.Do(ctx, "WAIT", 2, 10000).Int(); err != nil || n < 2 {
		t.Fatalf("WAIT: %d replicas, %v", n, err)
	}
	old := s.Primary(t)
	start = time.Now()
	p := s.Failover(t)
	t.Logf("failover %s -> %s in %s", old.Addr(), p.Addr(), time.Since(start))
	if p == old {
		t.Fatal("same primary")
	}
	v, err := c.Get(ctx, "k").Result()
	if err != nil || v != "1" {
		t.Fatalf("after failover: %q %v", v, err)
	}
	if err := c.Set(ctx, "k", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	s := redistest.StartTLS(t, certs)
	if err := s.Client(t, nil).Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	plain := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer plain.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("plain TCP ping of a TLS-only server succeeded")
	}
}

func TestTLSCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3, redistest.NewCerts(t))
	if err := c.Client(t, nil).Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t, 1, 3, redistest.NewCerts(t))
	if err := s.Client(t, nil).Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestClusterWithReplicas(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterReplicas(t, 3, 1, nil)
	if len(c.Masters) != 3 || len(c.Replicas) != 3 {
		t.Fatalf("%d masters, replicas %v", len(c.Masters), c.Replicas)
	}
	for _, m := range c.Masters {
		if len(c.Replicas[m]) != 1 {
			t.Errorf("master %s has replicas %v", m.Addr(), c.Replicas[m])
		}
	}
}

// FreePort never hands out a port twice in one process: 2,000 ports in a row
// from the kernel's ephemeral range (about 28,000 on Linux) repeat some
// dozens of times by chance (a daemon then found its admin port taken by
// another test daemon started just before it).
func TestFreePortNeverTwice(t *testing.T) {
	FreePort := redistest.FreePort
	seen := map[int]bool{}
	for range 2000 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
