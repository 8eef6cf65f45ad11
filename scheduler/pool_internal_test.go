package scheduler

import (
	"strings"
	"testing"
)

// A pooled job's keys, every kind the scripts derive, hash to its pool's
// slot: one script reaches the job's keys and the pool's (pool_of in
// common.lua) on Redis Cluster. The scripts find the job's name and the
// pool's key in them.
func TestPooledJobKeysShareThePoolsSlot(t *testing.T) {
	kinds := luaKinds(t)
	s := &store{prefix: "app:x"}
	s.placePools([]Job{{Name: "a.b-c", Pool: "exports"}, {Name: "z", Pool: "exports"}, {Name: "solo"}})
	pool := "app:x:{pool:exports}:held"
	want := keySlot(pool)
	for _, job := range []string{"a.b-c", "z"} {
		if m := s.metaKey(job); m != "app:x:{pool:exports}{"+job+"}:meta" {
			t.Errorf("meta key of %s: %q", job, m)
		}
		for _, k := range kinds {
			if got := keySlot(s.key(job, k+"x")); got != want {
				t.Errorf("job %s key %s: slot %d, pool's %d", job, s.key(job, k), got, want)
			}
		}
	}
	if m := s.metaKey("solo"); m != "app:x:{solo}:meta" || strings.Contains(m, "pool") {
		t.Errorf("an unpooled job's meta key: %q", m)
	}
}
