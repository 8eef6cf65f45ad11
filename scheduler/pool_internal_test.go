package scheduler

import (
	"testing"
)

// A job's keys, every kind the scripts derive, are the same whether the
// table puts it in a pool or not (its state is identified by its name
// alone), and all hash to its own slot; the pool's key is apart.
func TestPooledJobKeysAreTheJobsOwn(t *testing.T) {
	kinds := luaKinds(t)
	pooled, plain := &store{prefix: "app:x"}, &store{prefix: "app:x"}
	pooled.placePools([]Job{{Name: "a.b-c", Pool: "exports", PoolSize: 2}, {Name: "z", Pool: "exports", PoolSize: 2}})
	plain.placePools([]Job{{Name: "a.b-c"}, {Name: "z"}})
	for _, job := range []string{"a.b-c", "z"} {
		if m := pooled.metaKey(job); m != "app:x:{"+job+"}:meta" || m != plain.metaKey(job) {
			t.Errorf("meta key of %s: %q in a pool, %q out of it", job, m, plain.metaKey(job))
		}
		for _, k := range kinds {
			if a, b := pooled.key(job, k+"x"), plain.key(job, k+"x"); a != b || keySlot(a) != keySlot(job) {
				t.Errorf("job %s key %s: %q in a pool, %q out of it, slot %d, the job's %d", job, k, a, b, keySlot(a), keySlot(job))
			}
		}
	}
	if k := pooled.poolKey("exports"); k != "app:x:{pool:exports}:held" {
		t.Errorf("pool key %q", k)
	}
}
