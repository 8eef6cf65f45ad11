package lockprovider_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/lockprovider"
)

// mutexBackends: the mutex's rare paths on miniredis and a real server.
func mutexBackends(t *testing.T) map[string]redis.UniversalClient {
	_, mc := redistest.Mini(t)
	return map[string]redis.UniversalClient{"miniredis": mc, "redis-server": redistest.Start(t).Client(t, nil)}
}

// TestMutexSharesTheCounter: tokens another primitive of the name issues
// while the mutex is held survive the mutex's refresh and release, and the
// mutex's next token is above them. The counter starts ahead of the clock,
// so only the remembered tokens, not time, can make them rise.
func TestMutexSharesTheCounter(t *testing.T) {
	for name, c := range mutexBackends(t) {
		t.Run(name, func(t *testing.T) {
			p, err := lockprovider.NewRedis(c)
			if err != nil {
				t.Fatal(err)
			}
			ahead := time.Now().Add(time.Hour).UnixMicro()
			if err := c.Set(t.Context(), "lock:{shared}:fence", ahead, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			m, sem := p.Mutex("shared"), p.Semaphore("shared", 1)
			held := mustAcquire(t, m, 10*time.Second)
			s := mustAcquire(t, sem, 10*time.Second)
			if s.FencingToken() <= held.FencingToken() {
				t.Fatalf("semaphore token %d not above the mutex's %d", s.FencingToken(), held.FencingToken())
			}
			// The mutex is still held: the semaphore kept its hold.
			mustNotAcquire(t, m, time.Second)
			if err := held.Refresh(t.Context()); err != nil {
				t.Fatalf("refresh after the semaphore's grant: %v", err)
			}
			if err := held.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			again := mustAcquire(t, m, 10*time.Second)
			if again.FencingToken() <= s.FencingToken() {
				t.Fatalf("mutex token %d after release not above the semaphore's %d", again.FencingToken(), s.FencingToken())
			}
		})
	}
}

// TestMutexCounterAheadOfClock: when the last token is ahead of the server
// clock (the clock stepped back), tokens still rise past it, and a refresh
// or release never lowers the counter.
func TestMutexCounterAheadOfClock(t *testing.T) {
	for name, c := range mutexBackends(t) {
		t.Run(name, func(t *testing.T) {
			p, err := lockprovider.NewRedis(c)
			if err != nil {
				t.Fatal(err)
			}
			ahead := time.Now().Add(time.Hour).UnixMicro()
			if err := c.Set(t.Context(), "lock:{ahead}:fence", ahead, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			m := p.Mutex("ahead")
			for i := range int64(3) {
				l := mustAcquire(t, m, 10*time.Second)
				if want := ahead + 1 + i; l.FencingToken() != want {
					t.Fatalf("token %d = %d, want %d (the last token plus one)", i, l.FencingToken(), want)
				}
				if err := l.Refresh(t.Context()); err != nil {
					t.Fatal(err)
				}
				if err := l.Release(t.Context()); err != nil {
					t.Fatal(err)
				}
				v, err := c.Get(t.Context(), "lock:{ahead}:fence").Result()
				if err != nil {
					t.Fatal(err)
				}
				if n, err := strconv.ParseInt(v, 10, 64); err != nil || n != ahead+1+i {
					t.Fatalf("counter after release = %q, want %d", v, ahead+1+i)
				}
			}
		})
	}
}

// TestMutexOutlivesShortRetention: a lease longer than the counter's
// retention keeps the key that holds it alive.
func TestMutexOutlivesShortRetention(t *testing.T) {
	for name, c := range mutexBackends(t) {
		t.Run(name, func(t *testing.T) {
			p, err := lockprovider.NewRedis(c, lockprovider.WithFenceRetention(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			l := mustAcquire(t, p.Mutex("long"), time.Minute)
			for op, f := range map[string]func() error{
				"acquire": func() error { return nil },
				"refresh": func() error { return l.Refresh(t.Context()) },
			} {
				if err := f(); err != nil {
					t.Fatal(err)
				}
				if ttl := c.PTTL(t.Context(), "lock:{long}:fence").Val(); ttl < 50*time.Second {
					t.Errorf("after %s the key holding a 1-minute lease expires in %s", op, ttl)
				}
			}
			// Another primitive's token must not shorten it either.
			mustAcquire(t, p.Semaphore("long", 1), time.Second)
			if ttl := c.PTTL(t.Context(), "lock:{long}:fence").Val(); ttl < 50*time.Second {
				t.Errorf("after a semaphore's grant the key holding a 1-minute lease expires in %s", ttl)
			}
			v := c.Get(t.Context(), "lock:{long}:fence").Val()
			if !strings.HasSuffix(v, " "+l.Token()) {
				t.Errorf("after a semaphore's grant the counter is %q: the mutex's hold is gone", v)
			}
		})
	}
}
