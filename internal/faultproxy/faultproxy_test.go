package faultproxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/faultproxy"
	"github.com/solocron/solocron/internal/redistest"
)

func client(t *testing.T, addr string, readTimeout time.Duration) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout, WriteTimeout: readTimeout,
		DialTimeout: readTimeout, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestModes(t *testing.T) {
	m, _ := redistest.Mini(t)
	p, err := faultproxy.Start(m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := client(t, p.Addr(), 300*time.Millisecond)
	ctx := context.Background()

	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("pass: %v", err)
	}

	// Black hole: the call times out, but the socket stays open; the write
	// is delivered once the network is back.
	p.SetMode(faultproxy.BlackHole)
	start := time.Now()
	err = c.Set(ctx, "k", "late", 0).Err()
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("black hole: err = %v, want a timeout", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("black hole answered after %s", d)
	}
	p.SetMode(faultproxy.Pass)
	deadline := time.Now().Add(5 * time.Second)
	for v, _ := m.DB(0).Get("k"); v != "late"; v, _ = m.DB(0).Get("k") {
		if time.Now().After(deadline) {
			t.Fatal("a write sent into the black hole was never delivered")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Reset: calls fail at once with a connection error.
	p.SetMode(faultproxy.Reset)
	start = time.Now()
	if err := c.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("reset: err = %v, want a connection error", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("reset took %s; it should fail fast", d)
	}
	p.SetMode(faultproxy.Pass)
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatalf("after reset: %v", err)
	}

	// Latency.
	p.SetLatency(100 * time.Millisecond)
	start = time.Now()
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("a round trip took %s with 100ms added each way", d)
	}
	p.SetLatency(0)

	// A held reply: the command runs, its answer arrives past the timeout.
	p.HoldNextReply(time.Second)
	if err := c.Set(ctx, "k", "held", 0).Err(); err == nil {
		t.Fatal("held reply arrived in time")
	}
	if v, _ := m.DB(0).Get("k"); v != "held" {
		t.Fatal("the command whose reply was held did not run")
	}
}
