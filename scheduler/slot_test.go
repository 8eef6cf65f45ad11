package scheduler

import (
	"context"
	"io/fs"
	"log/slog"
	"math/rand"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// crc16 is CRC-16/XMODEM, Redis Cluster's key hash.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is the Redis Cluster slot of key: the hash of its hash tag (the
// text between the first '{' and the first '}' after it, if not empty), or
// of the whole key.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) % 16384)
}

func TestKeySlotMatchesRedis(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            12739, // CRC16/XMODEM check value 0x31C3
		"{user1000}.following": keySlot("user1000"),
		"foo{}{bar}":           int(crc16([]byte("foo{}{bar}")) % 16384),
		"foo{{bar}}zap":        keySlot("{bar"),
		"foo{bar}{zap}":        keySlot("bar"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

var (
	derivedKey = regexp.MustCompile(`base \.\. '([A-Za-z_]+:?)'`)
	literalKey = regexp.MustCompile(`redis\.call\('[A-Z]+',\s*['"]`)
)

// luaSources lists the store's Lua files: its scripts and their parts.
func luaSources(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"lua/*.lua", "lua/parts/*.lua"} {
		m, err := fs.Glob(store.LuaFiles, pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("no Lua files %s (%v)", pattern, err)
		}
		files = append(files, m...)
	}
	return files
}

// luaKinds lists the kinds of key the scripts derive from a job's meta key,
// read from the scripts themselves.
func luaKinds(t *testing.T) []string {
	t.Helper()
	kinds := []string{"meta"}
	for _, f := range luaSources(t) {
		src, err := store.LuaFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := literalKey.FindString(string(src)); m != "" {
			t.Errorf("%s: %s...: a key written as a literal, not derived from the job's meta key", f, m)
		}
		for _, m := range derivedKey.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(kinds, m[1]) {
				kinds = append(kinds, m[1])
			}
		}
	}
	documented := []string{"meta", "run:", "slots", "nums", "queue", "waiting", "history", "manual", "backfill", "bfruns", "bfredo", "bfseen", "mqueue", "retries"}
	for _, k := range kinds {
		if !slices.Contains(documented, k) {
			t.Errorf("the scripts use key kind %q, which lua/parts/keys.lua does not document", k)
		}
	}
	if len(kinds) < len(documented) {
		t.Errorf("found only key kinds %v in the scripts; the pattern no longer matches them", kinds)
	}
	return kinds
}

// oddName is a random valid job name, biased towards the characters and
// lengths that could confuse a hash tag or a key parser.
type oddName string

func (oddName) Generate(r *rand.Rand, _ int) reflect.Value {
	const alphabet = "._-aZ09_.-"
	n := 1 + r.Intn(8)
	if r.Intn(5) == 0 {
		n = 128
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	if n := string(b); n == "." || n == ".." {
		b = append(b, '_') // not job names (ValidJobName)
	}
	return reflect.ValueOf(oddName(b))
}

// oddPrefix is a random valid key prefix: no braces, no whitespace.
type oddPrefix string

func (oddPrefix) Generate(r *rand.Rand, _ int) reflect.Value {
	const alphabet = "solcrn:._-@#$*[]()<>|/\\'\"!"
	b := make([]byte, 1+r.Intn(12))
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return reflect.ValueOf(oddPrefix(b))
}

// Every key a job's scripts can touch — every kind the Lua derives from the
// meta key, and run records of scheduled and manual runs — hashes to the meta
// key's slot, for any valid job name and key prefix: one script call per job
// never crosses slots on Redis Cluster.
func TestEveryKeyOfAJobSharesItsSlot(t *testing.T) {
	kinds := luaKinds(t)
	check := func(name oddName, prefix oddPrefix, unix uint32) bool {
		job := string(name)
		if !ValidJobName(job) {
			t.Errorf("generated invalid name %q", job)
			return false
		}
		cfg, err := newStoreConfig([]StoreOption{WithKeyPrefix(string(prefix))})
		if err != nil {
			t.Errorf("generated invalid prefix %q: %v", prefix, err)
			return false
		}
		s := &store.Redis{Prefix: cfg.prefix}
		meta := s.MetaKey(job)
		want := keySlot(meta)
		if want != keySlot(job) {
			t.Errorf("meta key %q: slot %d, not its job's tag's %d", meta, want, keySlot(job))
			return false
		}
		at := time.Unix(int64(unix)*4, 0)
		for _, kind := range kinds {
			keys := []string{s.Key(job, kind)}
			if kind == "run:" {
				keys = []string{
					s.Key(job, "run:"+runID(job, at)[len(job)+1:]),
					s.Key(job, "run:manual-"+strings.Repeat("z", int(unix%20))),
				}
			}
			for _, k := range keys {
				if got := keySlot(k); got != want {
					t.Errorf("job %q prefix %q: key %q in slot %d, meta %q in %d", job, prefix, k, got, meta, want)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
	for _, job := range []string{".-", "-", "_", "..a", "a.b-c_d", "0", strings.Repeat("-", 128), strings.Repeat("Z", 128)} {
		check(oddName(job), "solocron", uint32(time.Now().Unix()/4))
	}
}

// The keys the engine actually creates, running jobs with odd names through
// every path (runs, queue, manual requests, history), carry exactly their
// job's hash tag.
func TestKeysCreatedCarryTheirJobsTag(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m, c := redistest.MiniPipe(t)
		names := []string{".x", "-_-", "a.b", strings.Repeat("x", 128), "0.9"}
		var table []Job
		for _, n := range names {
			table = append(table, Job{Name: n, Schedule: "@every 2s", Overlap: OverlapWait, MaxWait: time.Minute,
				Handler: jobs.Func(func(ctx context.Context) error {
					time.Sleep(3 * time.Second)
					return nil
				})})
		}
		s, err := New(redisStore(t, c, WithKeyPrefix("app:x")), table, WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		time.Sleep(3 * time.Second)
		for _, n := range names {
			if _, err := s.Control().Trigger(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		// The first runs (4s, the instants under a new job's floor
		// leave no record) end at 7s: their history exists by 8s.
		time.Sleep(5 * time.Second)
		keys := m.Keys()
		cancel()
		<-done
		kinds := map[string]bool{}
		hint := false
		for _, k := range keys {
			// The one store-wide key: the hint set of jobs with manual
			// requests, read and written with plain commands, never inside a
			// script, so it needs no job's tag.
			if k == s.store.(*store.Redis).HintKey() {
				hint = true
				continue
			}
			// The replica registry's two keys share a tag of their own and
			// only replicas.lua touches them (replicas.go).
			if slices.Contains(s.store.(*store.Redis).RegistryKeys(), k) {
				continue
			}
			// The set of jobs whose run statistics changed: store-wide
			// too, with a tag of its own.
			if k == s.store.(*store.Redis).ChangedKey() {
				continue
			}
			i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
			if i < 0 || j < i {
				t.Errorf("key %q has no hash tag", k)
				continue
			}
			job := k[i+1 : j]
			if !slices.Contains(names, job) || keySlot(k) != keySlot(s.store.MetaKey(job)) {
				t.Errorf("key %q: tag %q is not one job's, or its slot differs from the job's meta key", k, job)
			}
			kind := k[j+2:]
			if strings.HasPrefix(kind, "run:") {
				kind = "run:"
			}
			kinds[kind] = true
		}
		if !hint {
			t.Error("no manual hint key was created: the triggers did not exercise it")
		}
		for _, want := range []string{"meta", "run:", "slots", "queue", "waiting", "history"} {
			if !kinds[want] {
				t.Errorf("no %q key was created (keys: %v): the test did not exercise it", want, keys)
			}
		}
	})
}
