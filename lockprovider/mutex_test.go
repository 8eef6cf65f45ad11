package lockprovider_test

import (
	"os"
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

// TestMutexFreeCounterShapes: the acquire's fast path tells a free counter
// below the clock by comparing strings (TestMutexFastPathReadsNoNumber);
// a free counter shorter than the clock's digits, one just below the clock
// and a missing one all give the clock's token, and the release puts that
// token back as the counter. (A counter ahead of the clock, the same
// length: TestMutexCounterAheadOfClock.)
func TestMutexFreeCounterShapes(t *testing.T) {
	for name, c := range mutexBackends(t) {
		t.Run(name, func(t *testing.T) {
			p, err := lockprovider.NewRedis(c)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now().Add(-time.Second).UnixMicro() // miniredis and Redis read the same clock, give or take
			for shape, v := range map[string]string{
				"missing":         "",
				"short":           "12345",
				"below the clock": strconv.FormatInt(time.Now().Add(-time.Minute).UnixMicro(), 10),
			} {
				key := "lock:{" + strings.ReplaceAll(shape, " ", "-") + "}:fence"
				if v != "" {
					if err := c.Set(t.Context(), key, v, time.Hour).Err(); err != nil {
						t.Fatal(err)
					}
				}
				m := p.Mutex(strings.ReplaceAll(shape, " ", "-"))
				l := mustAcquire(t, m, 10*time.Second)
				if l.FencingToken() < start {
					t.Errorf("%s: token %d is below the clock (%d)", shape, l.FencingToken(), start)
				}
				mustNotAcquire(t, m, 10*time.Second)
				if err := l.Release(t.Context()); err != nil {
					t.Fatalf("%s: release: %v", shape, err)
				}
				if got, want := c.Get(t.Context(), key).Val(), strconv.FormatInt(l.FencingToken(), 10); got != want {
					t.Errorf("%s: counter after release = %q, want %q", shape, got, want)
				}
				if again := mustAcquire(t, m, 10*time.Second); again.FencingToken() <= l.FencingToken() {
					t.Errorf("%s: next token %d not above %d", shape, again.FencingToken(), l.FencingToken())
				}
			}
		})
	}
}

// TestMutexFastPathReadsNoNumber guards the Redis time of the acquire's
// fast path (above "-- @shared"), which every acquire runs: it reads no
// string as a number (tonumber, or arithmetic on TIME's digits) and
// formats none (string.format). tonumber alone was about a tenth of the
// script's time; the fast path compares the counter as a string instead.
func TestMutexFastPathReadsNoNumber(t *testing.T) {
	src, err := os.ReadFile("lua/mutex_acquire.lua")
	if err != nil {
		t.Fatal(err)
	}
	fast, _, ok := strings.Cut(string(src), "\n-- @shared\n")
	if !ok {
		t.Fatal(`mutex_acquire.lua has no "-- @shared" line`)
	}
	var code []string
	for line := range strings.SplitSeq(fast, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code = append(code, line)
		}
	}
	body := strings.Join(code, "\n")
	for _, dear := range []string{"tonumber(", "string.format(", "t[1] *", "t[2] *", "* 1000000", "math."} {
		if strings.Contains(body, dear) {
			t.Errorf("the acquire's fast path uses %q:\n%s", dear, body)
		}
	}
}
