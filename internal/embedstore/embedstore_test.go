package embedstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func client(t *testing.T, s *Store) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "embedded:0", Dialer: s.DialContext, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// onDisk reads what the newest good snapshot holds, as a fresh process
// would, without closing s.
func onDisk(t *testing.T, dir string) data {
	t.Helper()
	var best *slot
	for i := range 2 {
		sl, err := readSlot(filepath.Join(dir, slotPrefix+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if sl != nil && sl.bad == nil && (best == nil || sl.seq > best.seq) {
			best = sl
		}
	}
	if best == nil {
		t.Fatal("no snapshot on disk")
	}
	d, err := decode(best.payload)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (d data) has(key string) bool {
	for _, e := range d {
		if e.key == key {
			return true
		}
	}
	return false
}

func TestStateSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if !s.Fresh() || s.Lost() != "" {
		t.Fatalf("new directory: fresh %v, lost %q", s.Fresh(), s.Lost())
	}
	c := client(t, s)
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, "str", "bin\x00\xff", 0).Err())
	must(c.HSet(ctx, "{j}:meta", "epoch", "e1", "paused", "1").Err())
	must(c.RPush(ctx, "list", "a", "b", "c").Err())
	must(c.SAdd(ctx, "set", "x", "y").Err())
	must(c.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "m1"}, redis.Z{Score: -2, Member: "m2"}).Err())
	must(c.Set(ctx, "ttl", "v", time.Hour).Err())
	must(c.Set(ctx, "gone", "v", 50*time.Millisecond).Err())
	// An answer comes only once the disk holds what the command wrote.
	if !onDisk(t, dir).has("zset") {
		t.Fatal("the answer to ZADD came before the snapshot holding it was on disk")
	}
	_ = c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // "gone" expires while the store is closed

	s = open(t, dir)
	if s.Fresh() || s.Lost() != "" {
		t.Fatalf("reopened: fresh %v, lost %q", s.Fresh(), s.Lost())
	}
	c = client(t, s)
	if v := c.Get(ctx, "str").Val(); v != "bin\x00\xff" {
		t.Errorf("str = %q", v)
	}
	if v := c.HGet(ctx, "{j}:meta", "paused").Val(); v != "1" {
		t.Errorf("paused = %q", v)
	}
	if v := c.LRange(ctx, "list", 0, -1).Val(); strings.Join(v, ",") != "a,b,c" {
		t.Errorf("list = %v", v)
	}
	if v := c.SCard(ctx, "set").Val(); v != 2 {
		t.Errorf("set has %d members", v)
	}
	if v := c.ZScore(ctx, "zset", "m2").Val(); v != -2 {
		t.Errorf("zset m2 = %v", v)
	}
	if ttl := c.TTL(ctx, "ttl").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Errorf("ttl = %v, want about 1h", ttl)
	}
	if c.Exists(ctx, "gone").Val() != 0 {
		t.Error("a key whose TTL ran out while the store was closed came back")
	}
}

func TestScriptWritesAreDurableBeforeTheAnswer(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	c := client(t, s)
	script := redis.NewScript(`redis.call('HSET', KEYS[1], 'fence', ARGV[1]); return 'started'`)
	for i := range 20 {
		key := "{job}:meta" + string(rune('a'+i))
		if err := script.Run(t.Context(), c, []string{key}, i).Err(); err != nil {
			t.Fatal(err)
		}
		if !onDisk(t, dir).has(key) {
			t.Fatalf("script %d answered before its write was on disk", i)
		}
	}
}

func TestLongPipeline(t *testing.T) {
	s := open(t, t.TempDir())
	c := client(t, s)
	p := c.Pipeline()
	for i := range 5000 {
		p.HSet(t.Context(), "h", strings.Repeat("f", 100)+string(rune(i)), strings.Repeat("v", 200))
	}
	if _, err := p.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := c.HLen(t.Context(), "h").Val(); n != 5000 {
		t.Fatalf("HLEN = %d", n)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	_, err := Open(Options{Dir: dir})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("the error names neither the directory nor the holder: %v", err)
	}
}

// writeState leaves dir with two snapshots: the older one with meta's
// epoch e1 only, the newer one also with the run record.
func writeState(t *testing.T, dir string) {
	t.Helper()
	s := open(t, dir)
	c := client(t, s)
	if err := c.HSet(t.Context(), "p:{j}:meta", "epoch", "e1", "paused", "1", "fence", "42").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(t.Context(), "p:{j}:run:x", "started", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func newest(t *testing.T, dir string) string {
	t.Helper()
	var path string
	var top uint64
	for i := range 2 {
		p := filepath.Join(dir, slotPrefix+string(rune('0'+i)))
		sl, err := readSlot(p)
		if err != nil || sl == nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		if sl.seq > top {
			path, top = p, sl.seq
		}
	}
	return path
}

func TestTornSnapshotIsALoss(t *testing.T) {
	for name, damage := range map[string]func(string) error{
		"cut short": func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, b[:len(b)-3], 0o600)
		},
		"bit flipped": func(p string) error {
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 0x10
			return os.WriteFile(p, b, 0o600)
		},
		"removed": os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeState(t, dir)
			if err := damage(newest(t, dir)); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir)
			if s.Lost() == "" {
				t.Fatal("a damaged newest snapshot was not noticed")
			}
			t.Log(s.Lost())
			m := s.Miniredis()
			if m.HGet("p:{j}:meta", "epoch") != "" {
				t.Error("the job's epoch was kept: its next claim would place no data-loss floor")
			}
			if m.HGet("p:{j}:meta", "paused") != "1" || m.HGet("p:{j}:meta", "fence") != "42" {
				t.Error("the older snapshot's pause and fencing token were not kept")
			}
			_ = s.Close()
			// Recovered: the next open is clean.
			if s := open(t, dir); s.Lost() != "" {
				t.Errorf("after recovery, still lost: %s", s.Lost())
			}
		})
	}
}

func TestOlderCopyIsALoss(t *testing.T) {
	dir := t.TempDir()
	writeState(t, dir)
	// Put back an old copy: slot 0 and slot 1 two writes apart.
	p := newest(t, dir)
	old, _ := os.ReadFile(p)
	s := open(t, dir)
	c := client(t, s)
	for i := range 3 {
		_ = c.Set(t.Context(), "k", i, 0).Err()
	}
	_ = c.Close()
	_ = s.Close()
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	if s.Lost() == "" {
		t.Fatal("an older snapshot put back was not noticed")
	}
	t.Log(s.Lost())
}

func TestMemoryOnly(t *testing.T) {
	s := open(t, "")
	c := client(t, s)
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !s.Fresh() {
		t.Error("a memory-only store is not fresh")
	}
}

// A write the disk refuses is never answered as done: the client sees its
// connection fail; once the disk takes snapshots again, so does the store.
func TestUnwritableDiskFailsClosed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	c := client(t, s)
	if err := c.Set(t.Context(), "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil { // the disk is gone
		t.Fatal(err)
	}
	if err := c.Set(t.Context(), "lost", "1", 0).Err(); err == nil {
		t.Fatal("a write the disk could not take was answered as done")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Set(t.Context(), "after", "1", 0).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not recover once the disk was back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !onDisk(t, dir).has("after") || !onDisk(t, dir).has("before") {
		t.Error("the snapshot after recovery lacks the state")
	}
}
