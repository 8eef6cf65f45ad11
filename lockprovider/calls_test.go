package lockprovider_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/lockprovider"
)

// redislock's scripts, verbatim (github.com/bsm/redislock v0.9.4): the
// reference a Mutex must not cost more Redis calls than.
var (
	redislockObtain = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`)
	redislockRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
)

// serverCalls is the number of commands the server has run, scripts'
// inner commands included (INFO commandstats), less the INFO itself.
func serverCalls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.SplitSeq(info, "\n") {
		_, rest, ok := strings.Cut(strings.TrimSpace(line), "calls=")
		if !strings.HasPrefix(strings.TrimSpace(line), "cmdstat_") || !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, ",")
		v, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		n += v
	}
	return n
}

// perCycle measures the Redis calls of one acquire+release, the average of
// a few after a warm-up (script loading).
func perCycle(t *testing.T, c *redis.Client, cycle func(ctx context.Context) error) float64 {
	t.Helper()
	if err := cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	const n = 20
	before := serverCalls(t, c)
	for range n {
		if err := cycle(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return float64(serverCalls(t, c)-before-1) / n
}

// TestMutexCallsNoMoreThanRedislock: a Mutex acquire+release, fencing token
// included, costs no more Redis calls (as INFO commandstats counts them,
// inside scripts too) than bsm/redislock's Obtain+Release.
func TestMutexCallsNoMoreThanRedislock(t *testing.T) {
	c := redistest.Start(t).Client(t, nil)
	p, err := lockprovider.NewRedis(c)
	if err != nil {
		t.Fatal(err)
	}
	ours := perCycle(t, c, func(ctx context.Context) error {
		l, err := p.Mutex("calls").TryAcquire(ctx, 10*time.Second)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	})
	theirs := perCycle(t, c, func(ctx context.Context) error {
		if err := redislockObtain.Run(ctx, c, []string{"redislock"}, "tok", 3, 10000).Err(); err != nil {
			return err
		}
		return redislockRelease.Run(ctx, c, []string{"redislock"}, "tok").Err()
	})
	t.Logf("Redis calls per acquire+release: lockprovider %.2f, redislock %.2f", ours, theirs)
	if ours > theirs {
		t.Errorf("a Mutex acquire+release costs %.2f Redis calls, redislock's %.2f", ours, theirs)
	}
}
