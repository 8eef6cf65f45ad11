package embedstore

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// A snapshot is the state when it was taken: the writes that run while it
// is encoded and written (LSET changes a list in place) do not reach it.
func TestSnapshotHoldsNoLiveState(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx := context.Background()
	if err := c.RPush(ctx, "l", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	c.HSet(ctx, "h", "f", "1")
	c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"})
	c.SAdd(ctx, "s", "x")
	d, err := dump(m)
	if err != nil {
		t.Fatal(err)
	}
	before, err := d.encode()
	if err != nil {
		t.Fatal(err)
	}
	// What the scripts do once commands run again.
	for _, cmd := range [][]any{{"LSET", "l", "0", "changed"}, {"HSET", "h", "f", "2"}, {"ZADD", "z", "2", "m"},
		{"SADD", "s", "y"}, {"RPUSH", "l", "c"}} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(cmd, err)
		}
	}
	after, err := d.encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatalf("the snapshot changed with writes made after it was taken:\n%q\n%q", before, after)
	}
}
