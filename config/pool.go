package config

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/scheduler"
)

// poolSizes decodes the pools: section, a mapping of pool name to its
// number of slots.
func (d *decoder) poolSizes(n *yaml.Node, path string) map[string]int {
	if n = d.resolve(n); n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping of pool names to sizes, e.g. pools: {exports: 3}")
		return nil
	}
	out := map[string]int{}
	for _, p := range d.mapping(n, path) {
		fp := field(path, p.name)
		if !scheduler.ValidJobName(p.name) || len(p.name) > scheduler.MaxJobNameLen {
			d.errorf(p.key, fp, "%q is not a valid pool name: letters, digits, '_', '.' and '-', at most %d bytes", clip(p.name), scheduler.MaxJobNameLen)
			continue
		}
		size, ok := d.integer(d.resolve(p.val), fp)
		if !ok {
			continue
		}
		if size < 1 {
			d.errorf(p.val, fp, "a pool needs at least 1 slot (got %d)", size)
			continue
		}
		if size > scheduler.MaxPoolSize {
			d.errorf(p.val, fp, "a pool has at most %d slots (got %d)", scheduler.MaxPoolSize, size)
			continue
		}
		out[p.name] = size
	}
	return out
}

// jobPool checks a job's pool: against the pools: section and gives the
// job its pool's size. In redlock mode a pool is refused whatever its name:
// scheduler.ValidateRedlockTable says so (at the pool: line), not jobPool.
func (d *decoder) jobPool(j *draft, mode string) {
	name := j.job.Pool
	if name == "" || j.bad["pool"] {
		return
	}
	size, ok := d.pools[name]
	switch {
	case ok:
		j.job.PoolSize = size
	case mode == "redlock":
		j.bad["pool"] = true // not "unknown": no pool would do
	default:
		known := make([]string, 0, len(d.pools))
		for k := range d.pools {
			known = append(known, k)
		}
		sort.Strings(known)
		msg := fmt.Sprintf("unknown pool %q", clip(name))
		switch s := suggest(name, known); {
		case s != "":
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		case len(known) == 0:
			msg += "; declare it at the top of the table: pools: {" + clip(name) + ": 3}"
		default:
			msg += "; pools: declares " + strings.Join(known, ", ")
		}
		d.jobError(j, "pool", "", fmt.Errorf("%s", msg))
		j.bad["pool"] = true
	}
}
