//go:build faults

package faults_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// TestRandomFaults draws faults at random, from a seed, against three
// daemons on one real redis-server running a mixed table: two every-second
// jobs (tick, and conc with concurrency 2), a job with overlap: wait
// (waiter), a pair sharing a pool of one slot (pa, pb), a job that outlives
// its lease and renews it (long), and manual runs asked for through the
// admin API at random times. The faults: SIGKILL or SIGTERM of a daemon
// (restarted later), SIGSTOP/SIGCONT of a daemon (up to twice the lease),
// SIGSTOP of Redis (up to twice the lease), a Redis restart that keeps its
// data (appendonly, fsync always) and one that loses it, and a table reload
// by SIGHUP, daemon after daemon, so two tables are live at once (variants:
// conc's concurrency 2→1→3 across held slots, tick moved into and out of the
// pool, pools p and q resized, pb moved between them, renamed pc and back,
// tick every 1 s ↔ every 2 s, long's lease 3 s ↔ 6 s under a run, waiter's
// overlap wait, skip or replace, waiter removed and added again); once the
// faults are over every daemon reloads a table with every name.
// At most two daemons are impaired at once, and one Redis fault at a time.
//
// Every job process appends "<run id> <token> <start ns> <pid>" to a file
// (sh, then exec of faultjob, which also reports to the ledger so its end is
// known however it dies). Judged at the end, against the run records and
// what Redis said of each lease (the job's slots and the pool's holders,
// read every 20 ms): no run id started twice; per job and slot, never two
// processes holding a valid lease at once (a process counts until its lease
// ended at Redis or it died, whichever came first: a frozen daemon's job
// runs on, which fencing is for), never more than the largest concurrency in
// force, nor more of a pool's jobs than its largest size; fencing tokens unique
// per job, rising per slot in start order and above those of runs that
// started before the later run could be claimed; a killed daemon's jobs gone
// within 1 s, a job whose lease ended while its daemon was frozen gone within
// 1.5 s of SIGCONT, and otherwise every job gone by its lease's end at
// Redis; a replaced run's lease ends at its replacement's claim, and its
// process within 2 s of it; no run ends lease_lost but by a fault of its
// daemon or of Redis; every scheduled instant of the window that every
// table in force had has a start or exactly one record, and a run starts
// only on a daemon whose table had it, except around a data loss (the
// documented window: records before it are gone, instants below its floor
// are recorded missed or not at all);
// every start has its record with its token, and no record is left running;
// every manual request ran once unless Redis lost it.
//
// FAULTS_RANDOM_SEEDS (default 2) seeds from FAULTS_RANDOM_FIRST (default
// 1), each with FAULTS_RANDOM_CHAOS (default 25s) of faults; a seed's plan of
// faults is drawn from it, their timing is real.
func TestRandomFaults(t *testing.T) {
	t.Parallel()
	n, first := 2, 1
	if v, err := strconv.Atoi(os.Getenv("FAULTS_RANDOM_SEEDS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("FAULTS_RANDOM_FIRST")); err == nil {
		first = v
	}
	chaos := 25 * time.Second
	if v, err := time.ParseDuration(os.Getenv("FAULTS_RANDOM_CHAOS")); err == nil {
		chaos = v
	}
	for seed := first; seed < first+n; seed++ {
		t.Run("seed"+strconv.Itoa(seed), func(t *testing.T) {
			t.Parallel()
			bound(t, chaos+75*time.Second)
			row := report(t, "R"+strconv.Itoa(seed), fmt.Sprintf("random faults, seed %d: 3 daemons, 6 jobs, %s of kills, freezes, Redis stalls and restarts, reloads, manual runs", seed, chaos))
			randomFaults(t, row, uint64(seed), chaos, false)
		})
	}
}

// The jobs of the random table.
var randomJobs = []struct {
	name, every string
	sleep       time.Duration
	fields      string
}{
	{"tick", "1s", 200 * time.Millisecond, ""},
	{"conc", "1s", 2500 * time.Millisecond, ""},
	{"waiter", "2s", 2500 * time.Millisecond, "    overlap: wait\n    max_wait: 2s\n"},
	{"pa", "1s", 1200 * time.Millisecond, "    pool: p\n"},
	{"pb", "1s", 1200 * time.Millisecond, "    pool: p\n"},
	{"long", "5s", 7 * time.Second, ""},
}

// tableVariant is what a reload changes.
type tableVariant struct {
	conc       int  // conc's concurrency
	tickPooled bool // tick in pool p
	pool       int  // pool p's size; 0 is 1
	// The random test's wider changes; the zero value is the table as
	// before (scenario 20 leaves them so).
	poolQ      int           // pool q's size; 0 is 1
	pbInQ      bool          // pb (or pc, its new name) in pool q, not p
	pbRenamed  bool          // pb renamed pc
	bothNames  bool          // pb and pc both in the table
	tick2s     bool          // tick every 2 s, not every 1 s
	longLease  time.Duration // long's lease; 0 is the table's 3 s
	waiterMode string        // waiter's overlap; "" is wait
	noWaiter   bool          // waiter removed from the table
}

func (v tableVariant) poolSize() int { return max(v.pool, 1) }

// poolSizeOf is the size of pool p or q.
func (v tableVariant) poolSizeOf(pool string) int {
	if pool == "q" {
		return max(v.poolQ, 1)
	}
	return v.poolSize()
}

// has reports whether the table has a job named name.
func (v tableVariant) has(name string) bool {
	switch name {
	case "waiter":
		return !v.noWaiter
	case "pb":
		return !v.pbRenamed || v.bothNames
	case "pc":
		return v.pbRenamed || v.bothNames
	}
	return true
}

// poolOf is the pool whose slot job name takes, "" for none.
func (v tableVariant) poolOf(name string) string {
	switch name {
	case "pa":
		return "p"
	case "tick":
		if v.tickPooled {
			return "p"
		}
	case "pb", "pc":
		if v.pbInQ {
			return "q"
		}
		return "p"
	}
	return ""
}

// every is job name's interval in this table.
func (v tableVariant) every(name string) time.Duration {
	if name == "tick" && v.tick2s {
		return 2 * time.Second
	}
	return everyOf(name)
}

// schedules reports whether this table has a run of job name at instant at
// (every schedule is @every, aligned to the epoch).
func (v tableVariant) schedules(name string, at time.Time) bool {
	return v.has(name) && at.UnixNano()%int64(v.every(name)) == 0
}

func (v tableVariant) String() string {
	s := fmt.Sprintf("conc concurrency %d, tick pooled %v, pool size %d", v.conc, v.tickPooled, v.poolSize())
	if v.poolQ > 0 || v.pbInQ || v.pbRenamed || v.bothNames || v.tick2s || v.longLease > 0 || v.waiterMode != "" || v.noWaiter {
		pb := "pb"
		switch {
		case v.bothNames:
			pb = "pb and pc"
		case v.pbRenamed:
			pb = "pb renamed pc"
		}
		waiter := "overlap " + cmp.Or(v.waiterMode, "wait")
		if v.noWaiter {
			waiter = "removed"
		}
		s += fmt.Sprintf(", q size %d, %s in pool %s, tick every %s, long's lease %s, waiter %s",
			v.poolSizeOf("q"), pb, v.poolOf("pb"), v.every("tick"), cmp.Or(v.longLease, 3*time.Second), waiter)
	}
	return s
}

// variants are the random test's tables: each reload draws another, so
// every pair of them meets in some seed. Between them: conc's concurrency
// up and down across held slots (2, 1, 3), tick into and out of pool p,
// pool p's and pool q's sizes up and down, pb moved between pools p and q,
// pb renamed pc (and back), pb and pc both, tick's schedule every 1 s and
// every 2 s, long's lease 3 s and 6 s under a run, waiter's overlap wait,
// skip and replace, and waiter removed and added again.
var variants = []tableVariant{
	{conc: 2},
	{conc: 1, pbInQ: true, longLease: 6 * time.Second},
	{conc: 3, tickPooled: true, pool: 2, tick2s: true, waiterMode: "skip"},
	{conc: 1, tickPooled: true, noWaiter: true, pbRenamed: true},
	{conc: 2, tickPooled: true, pool: 2, poolQ: 2, pbInQ: true, waiterMode: "replace"},
	{conc: 3, longLease: 6 * time.Second, tick2s: true, pbRenamed: true, pbInQ: true},
	{conc: 2, pool: 2, bothNames: true},
	{conc: 1, tickPooled: true, noWaiter: true, longLease: 6 * time.Second, tick2s: true, poolQ: 2},
}

// finalVariant is the table every daemon reloads once the faults are over:
// every job name is in it, so that each one's manual requests run and its
// dead holders are reaped.
const finalVariant = 6

// linkVariants are scenario 20's: pool p's size changes too.
var linkVariants = []tableVariant{{conc: 2, pool: 1}, {conc: 1, pool: 2}, {conc: 3, tickPooled: true, pool: 1},
	{conc: 1, tickPooled: true, pool: 2}, {conc: 2, tickPooled: true, pool: 2}, {conc: 3, pool: 1}}

// jobNames are every name a job of the random table has in some variant.
var jobNames = []string{"tick", "conc", "waiter", "pa", "pb", "pc", "long"}

// everyOf is job name's interval in the base table (pc is pb renamed).
func everyOf(name string) time.Duration {
	if name == "pc" {
		name = "pb"
	}
	for _, j := range randomJobs {
		if j.name == name {
			d, _ := time.ParseDuration(j.every)
			return d
		}
	}
	panic("no job " + name)
}

// span is a time interval.
type chaosSpan struct{ from, to time.Time }

func (s chaosSpan) has(t time.Time) bool { return !t.Before(s.from) && !t.After(s.to) }

// replicaTable says which table variant a replica ran from when: from
// `sure` on it ran v; in [asked, sure) it may have run v or the one before.
type replicaTable struct {
	asked, sure time.Time
	v           int
}

type chaosTrigger struct {
	job, id, via string
	at           time.Time
}

// chaos is one seed's world.
type chaos struct {
	t        *testing.T
	row      *row
	rng      *rand.Rand
	dir      string
	prefix   string
	startsAt string // the file every job process appends its start to
	redis    *redistest.Server
	direct   *redis.Client
	ctl      *scheduler.Control
	led      *ledger
	watch    map[string]*slotWatch // job -> its slots; "pool:p" -> the pool's holders
	begin    time.Time

	mu       sync.Mutex
	replicas map[string]*replica
	impaired map[string]bool // killed or frozen
	tables   map[string][]replicaTable
	variant  int
	redisBad bool // a Redis fault is in progress
	vars     []tableVariant
	// links: each daemon reaches Redis through its own fault proxy, kept
	// across its restarts, and faults of one daemon's link are drawn too.
	links      map[string]*proxy
	linkCounts map[string]int // link faults, by kind
	kills      map[string][]time.Time
	freezes    map[string][]chaosSpan
	stalls     []chaosSpan
	losses     []chaosSpan // from the snapshot before a data loss to the loss floor
	lossAt     []time.Time
	before     map[string]bool // run ids recorded before a loss
	procs      []*replica      // every daemon process, in start order
	restarts   int             // of Redis, keeping its data
	restartAt  []chaosSpan     // when Redis restarted, keeping its data
	terms      int             // daemons stopped by SIGTERM
	reloads    int
	triggers   []chaosTrigger
	log        []string
	wg         sync.WaitGroup
}

func (c *chaos) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf("%6.2fs ", time.Since(c.begin).Seconds())+fmt.Sprintf(format, args...))
}

func randomFaults(t *testing.T, row *row, seed uint64, chaosFor time.Duration, links bool) {
	c := &chaos{t: t, row: row, rng: rand.New(rand.NewPCG(seed, 0x5eed)), dir: t.TempDir(),
		prefix:   "x" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		replicas: map[string]*replica{}, impaired: map[string]bool{}, tables: map[string][]replicaTable{},
		kills: map[string][]time.Time{}, before: map[string]bool{}, freezes: map[string][]chaosSpan{}, watch: map[string]*slotWatch{},
		linkCounts: map[string]int{}}
	c.vars = variants
	if links {
		c.links = map[string]*proxy{}
		c.vars = linkVariants
	}
	c.startsAt = filepath.Join(c.dir, "starts.log")
	c.redis = redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	c.direct = c.redis.Client(t, &redis.Options{MaxRetries: -1, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	c.ctl = schedtest.RedisStore(t, c.direct, scheduler.WithKeyPrefix(c.prefix)).Control()
	c.led = newLedger(t, &jobSlotSink{high: map[string]int64{}})
	for _, name := range c.names() {
		c.watch[name] = watchSlots(t, c.direct, c.prefix+":{"+name+"}:slots", 3*time.Second)
	}
	for _, pool := range []string{"p", "q"} {
		c.watch["pool:"+pool] = watchSlots(t, c.direct, c.prefix+":{pool:"+pool+"}:held", 3*time.Second)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.mu.Lock()
			t.Logf("seed %d, what happened:\n%s", seed, strings.Join(c.log, "\n"))
			c.mu.Unlock()
			if dir := os.Getenv("FAULTS_RANDOM_LOGS"); dir != "" {
				c.mu.Lock()
				for i, r := range c.procs {
					path := filepath.Join(dir, fmt.Sprintf("seed%d-%02d-%s.log", seed, i, r.id))
					if err := os.WriteFile(path, []byte(r.out.String()), 0o644); err != nil {
						t.Log(err)
					}
				}
				c.mu.Unlock()
				t.Logf("every daemon's log: %s/seed%d-*.log", dir, seed)
			}
			t.Logf("replay: FAULTS_RANDOM_FIRST=%d FAULTS_RANDOM_SEEDS=1 go test -tags faults -count=1 -v -run 'TestRandomFaults' ./faults/", seed)
		}
	})
	c.begin = time.Now()
	for _, id := range []string{"r1", "r2", "r3"} {
		c.start(id)
	}
	for _, r := range c.live() {
		r.waitReady()
	}
	// The window starts after every job's first run: a fresh store's first
	// instants are below its data-loss floor.
	testkit.WaitFor(t, 30*time.Second, "a first run of every every-second job", func() bool {
		seen := map[string]bool{}
		for _, r := range c.led.Runs() {
			seen[jobOf(r.RunID)] = true
		}
		return seen["tick"] && seen["conc"] && (seen["pa"] || seen["pb"])
	})
	from := time.Now().Truncate(time.Second).Add(time.Second)
	c.note("window from %s", from.Format("15:04:05"))

	chaosEnd := time.Now().Add(chaosFor)
	for time.Now().Before(chaosEnd) {
		time.Sleep(time.Duration(700+c.rng.IntN(1800)) * time.Millisecond)
		c.fault()
	}
	c.wg.Wait()
	to := time.Now().Truncate(time.Second)
	c.note("faults over; window to %s", to.Format("15:04:05"))
	if c.links == nil {
		// Every name back in the table: its manual requests run, its dead
		// holders are reaped, and it can be paused.
		c.mu.Lock()
		v := c.variant
		c.mu.Unlock()
		if v != finalVariant {
			c.reload(finalVariant)
			c.wg.Wait()
		}
	}
	// Every daemon up, the table settled; then stop new starts and let every
	// run end.
	for _, r := range c.live() {
		r.waitReady()
	}
	time.Sleep(3 * time.Second)
	for _, name := range c.names() {
		if c.vars[c.variant].has(name) {
			c.api(c.anyLive(), http.MethodPost, "/api/v1/jobs/"+name+"/pause", nil)
		}
	}
	stopped := time.Now()
	c.note("paused every job")
	// Manual runs still run while paused: wait for every one asked for.
	waitUntil(15*time.Second, func() bool {
		ids := map[string]bool{}
		for _, r := range c.led.Runs() {
			ids[r.RunID] = true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, tr := range c.triggers {
			if !ids[tr.id] {
				return false
			}
		}
		return true
	})
	if !waitUntil(20*time.Second, func() bool {
		for _, r := range c.led.Runs() {
			if r.End.IsZero() {
				return false
			}
		}
		return true
	}) {
		t.Errorf("job processes still alive 20 s after every job was paused")
	}
	// The history holds closed records only, and a daemon closes a run's
	// record after its process ended: wait for every start's record (but
	// those a data loss may have taken).
	records := map[string][]scheduler.Run{}
	c.mu.Lock()
	losses := slices.Clone(c.lossAt)
	c.mu.Unlock()
	waitUntil(15*time.Second, func() bool {
		clear(records)
		for _, name := range c.names() {
			for _, r := range c.history(name) {
				records[r.ID] = append(records[r.ID], r)
			}
		}
		for _, rs := range records {
			for _, r := range rs {
				if r.Outcome == scheduler.Running {
					return false
				}
			}
		}
		for _, r := range c.led.Runs() {
			if _, ok := records[r.RunID]; ok || r.Replica == "" {
				continue
			}
			claimed := r.Scheduled().Add(-time.Second)
			if r.Scheduled().IsZero() {
				claimed = r.Start.Add(-10 * time.Second)
			}
			if !slices.ContainsFunc(losses, claimed.Before) {
				return false
			}
		}
		return true
	})
	// Once every process has ended, no slot of a job or of the pool stays
	// held past a lease and a heartbeat (a dead holder's is reaped).
	keys := []string{c.prefix + ":{pool:p}:held", c.prefix + ":{pool:q}:held"}
	for _, name := range c.names() {
		keys = append(keys, c.prefix+":{"+name+"}:slots")
	}
	held := map[string][]string{}
	longest := 3 * time.Second
	for _, v := range c.vars {
		longest = max(longest, v.longLease)
	}
	waitUntil(longest+3*time.Second, func() bool {
		clear(held)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, k := range keys {
			m, err := c.direct.ZRange(ctx, k, 0, -1).Result()
			if err != nil {
				m = []string{err.Error()}
			}
			if len(m) > 0 {
				held[k] = m
			}
		}
		return len(held) == 0
	})
	for k, m := range held {
		t.Errorf("%s still held after every job process ended: %v", k, m)
	}
	c.judge(from, to, stopped, records)
}

func jobOf(runID string) string { j, _, _ := strings.Cut(runID, "@"); return j }

// names are the job names some table of this seed has.
func (c *chaos) names() []string {
	var out []string
	for _, name := range jobNames {
		for _, v := range c.vars {
			if v.has(name) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// tableText is table variant v for replica id.
func (c *chaos) tableText(id string, v int) string {
	tv := c.vars[v]
	addr := c.redis.Addr()
	if c.links != nil {
		c.mu.Lock()
		px := c.links[id]
		if px == nil {
			var err error
			if px, err = startProxy(c.redis.Addr(), scriptNames); err != nil {
				c.mu.Unlock()
				c.t.Fatal(err)
			}
			c.t.Cleanup(px.Close)
			c.links[id] = px
		}
		c.mu.Unlock()
		addr = px.Addr()
	}
	var b strings.Builder
	fmt.Fprintf(&b, `store:
  url: redis://%s/0
  key_prefix: %s
admin:
  rate_limit: 0
pools:
  p: %d
  q: %d
defaults:
  lease: 3s
  kill_grace: 100ms
  history_limit: 2000
  env: {FAULT_LEDGER: %q}
jobs:
`, addr, c.prefix, tv.poolSize(), tv.poolSizeOf("q"), c.led.Addr())
	// $$ is a literal $ in a table: the shell sees $$, its pid.
	script := `echo "$SOLOCRON_RUN_ID $SOLOCRON_FENCING_TOKEN $(date +%s%N) $$$$" >> ` + c.startsAt + `; exec "$@"`
	for _, j := range randomJobs {
		fields := j.fields
		switch j.name {
		case "conc":
			fields += fmt.Sprintf("    concurrency: %d\n", tv.conc)
		case "tick":
			if tv.tickPooled {
				fields += "    pool: p\n"
			}
		case "pb":
			fields = "    pool: " + tv.poolOf("pb") + "\n"
		case "waiter":
			if tv.waiterMode != "" {
				fields = "    overlap: " + tv.waiterMode + "\n"
			}
		case "long":
			if tv.longLease > 0 {
				fields += "    lease: " + tv.longLease.String() + "\n"
			}
		}
		names := []string{j.name}
		if j.name == "pb" {
			names = []string{"pb", "pc"}
		}
		for _, name := range names {
			if !tv.has(name) {
				continue
			}
			fmt.Fprintf(&b, "  - name: %s\n    schedule: \"@every %s\"\n    command: [\"/bin/sh\", \"-c\", %q, \"sh\", %q, \"-sleep\", %q, \"-write-every\", \"100ms\"]\n%s",
				name, tv.every(name), script, faultjobBin, j.sleep.String(), fields)
		}
	}
	return b.String()
}

func (c *chaos) writeTable(id string, v int) string {
	path := filepath.Join(c.dir, id+".yaml")
	if err := os.WriteFile(path, []byte(c.tableText(id, v)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// start starts replica id (again) with the table in force.
func (c *chaos) start(id string) *replica { return c.startWith(id, -1) }

// startWith starts replica id (again) with table variant v; -1 is the
// table in force.
func (c *chaos) startWith(id string, v int) *replica {
	c.mu.Lock()
	if v < 0 {
		v = c.variant
	}
	c.mu.Unlock()
	path := c.writeTable(id, v)
	at := time.Now()
	r := startReplica(c.t, id, path)
	c.mu.Lock()
	c.procs = append(c.procs, r)
	c.replicas[id] = r
	c.tables[id] = append(c.tables[id], replicaTable{asked: at, sure: at, v: v})
	c.mu.Unlock()
	return r
}

// impair counts daemon id as stopped or frozen (not healthy) from now on,
// and returns it.
func (c *chaos) impair(id string) *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.impaired[id] = true
	return c.replicas[id]
}

// restartAfter starts the stopped daemon id again after down, and counts
// it healthy from then on.
func (c *chaos) restartAfter(id string, down time.Duration, v int) {
	time.Sleep(down)
	c.startWith(id, v)
	c.mu.Lock()
	delete(c.impaired, id)
	c.mu.Unlock()
	if v >= 0 {
		c.note("%s restarted with an older table: %s", id, c.vars[v])
		return
	}
	c.note("%s restarted", id)
}

// restartVariant draws the table a stopped daemon comes back with: the one
// in force, or, with links (scenario 20), one time in three another one,
// as a daemon restarted from an older deploy would; it keeps it until the
// next reload.
func (c *chaos) restartVariant() int {
	if c.links == nil || c.rng.IntN(3) != 0 {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.rng.IntN(len(c.vars) - 1)
	if v >= c.variant {
		v++
	}
	return v
}

func (c *chaos) live() []*replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*replica
	for _, id := range []string{"r1", "r2", "r3"} {
		if r := c.replicas[id]; r != nil && r.alive() {
			out = append(out, r)
		}
	}
	return out
}

// anyLive is a live replica that is not frozen.
func (c *chaos) anyLive() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range []string{"r1", "r2", "r3"} {
		if r := c.replicas[id]; r != nil && r.alive() && !c.impaired[id] {
			return id
		}
	}
	return "r1"
}

// healthy returns the replicas neither killed nor frozen, and how many are.
func (c *chaos) healthy() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range []string{"r1", "r2", "r3"} {
		if !c.impaired[id] {
			out = append(out, id)
		}
	}
	return out
}

// fault injects one fault drawn from the seed.
func (c *chaos) fault() {
	healthy := c.healthy()
	if len(healthy) == 0 {
		return
	}
	pick := func() string { return healthy[c.rng.IntN(len(healthy))] }
	kinds := 16 // 12 to 15: reloads, one fault in four
	if c.links != nil {
		kinds = 20
	}
	switch k := c.rng.IntN(kinds); {
	case k >= 14 && c.links != nil: // a fault of one daemon's link to Redis
		if len(healthy) < 2 {
			return
		}
		c.linkFault(pick(), k)
	case k < 3: // a manual run
		names := c.names()
		job := names[c.rng.IntN(len(names))]
		via := pick()
		at := time.Now()
		var tr admin.Triggered
		if err := c.tryAPI(via, http.MethodPost, "/api/v1/jobs/"+job+"/trigger", &tr); err != nil {
			c.note("trigger %s via %s: %v", job, via, err)
			return
		}
		c.mu.Lock()
		c.triggers = append(c.triggers, chaosTrigger{job: job, id: tr.RunID, via: via, at: at})
		c.mu.Unlock()
		c.note("trigger %s via %s: %s", job, via, tr.RunID)
	case k < 5: // SIGKILL (or SIGTERM) a daemon, restart it later
		if len(healthy) < 2 {
			return
		}
		id := pick()
		down := time.Duration(300+c.rng.IntN(4000)) * time.Millisecond
		r := c.impair(id)
		v := c.restartVariant()
		if c.rng.IntN(3) == 0 {
			// A graceful stop: running jobs get the shutdown grace (1 s),
			// a queued manual run is handed back.
			r.term()
			c.note("SIGTERM %s, back %s after it exits", id, down)
			c.wg.Go(func() {
				select {
				case <-r.done:
				case <-time.After(15 * time.Second):
					c.t.Errorf("%s did not exit within 15 s of SIGTERM", id)
					r.kill9()
				}
				c.mu.Lock()
				c.kills[id] = append(c.kills[id], time.Now())
				c.terms++
				c.mu.Unlock()
				c.note("%s exited (%d)", id, r.code)
				c.restartAfter(id, down, v)
			})
			return
		}
		at := r.kill9()
		c.mu.Lock()
		c.kills[id] = append(c.kills[id], at)
		c.mu.Unlock()
		c.note("kill -9 %s, back in %s", id, down)
		c.wg.Go(func() {
			c.restartAfter(id, down, v)
		})
	case k < 8: // SIGSTOP a daemon
		if len(healthy) < 2 {
			return
		}
		id := pick()
		d := time.Duration(500+c.rng.IntN(5500)) * time.Millisecond
		r := c.impair(id)
		from := r.stop()
		c.note("SIGSTOP %s for %s", id, d)
		c.wg.Go(func() {
			time.Sleep(d)
			until := r.cont()
			c.mu.Lock()
			c.freezes[id] = append(c.freezes[id], chaosSpan{from, until})
			delete(c.impaired, id)
			c.mu.Unlock()
			c.note("SIGCONT %s", id)
		})
	case k < 12: // a Redis fault
		c.mu.Lock()
		busy := c.redisBad
		c.redisBad = true
		c.mu.Unlock()
		if busy {
			return
		}
		switch k {
		case 8, 9: // stall
			d := time.Duration(1000+c.rng.IntN(5000)) * time.Millisecond
			from := time.Now()
			c.redis.Pause()
			c.note("Redis SIGSTOP for %s", d)
			c.wg.Go(func() {
				time.Sleep(d)
				c.redis.Resume()
				c.mu.Lock()
				c.stalls = append(c.stalls, chaosSpan{from, time.Now()})
				c.redisBad = false
				c.mu.Unlock()
				c.note("Redis SIGCONT")
			})
		case 10: // restart, data kept
			at := time.Now()
			c.redis.Restart()
			c.note("Redis kill -9 and restart, appendonly kept its data")
			c.mu.Lock()
			c.restarts++
			c.restartAt = append(c.restartAt, chaosSpan{at, time.Now()})
			c.redisBad = false
			c.mu.Unlock()
		case 11: // restart, data lost
			// Keep the records Redis holds before it loses them.
			snap := time.Now()
			for _, name := range c.names() {
				for _, r := range c.history(name) {
					c.mu.Lock()
					c.before[r.ID] = true
					c.mu.Unlock()
				}
			}
			c.redis.Kill()
			at := time.Now()
			for _, f := range []string{"appendonlydir", "dump.rdb"} {
				_ = os.RemoveAll(filepath.Join(c.redis.Dir, f))
			}
			c.redis.Restart()
			c.mu.Lock()
			// Records from the snapshot on may be gone: an instant may be
			// decided up to its starting deadline (10 s) and max_wait (2 s)
			// after it, and a run queued for a slot then loses its place
			// without a record. Instants up to the loss floor (loss +
			// max_clock_skew + claim ahead, about 2.5 s, and the noticing)
			// are recorded missed or not at all.
			c.losses = append(c.losses, chaosSpan{snap.Add(-13 * time.Second), time.Now().Add(5 * time.Second)})
			c.lossAt = append(c.lossAt, at)
			c.redisBad = false
			c.mu.Unlock()
			c.note("Redis kill -9 and restart EMPTY")
		}
	default: // a reload of the table
		c.mu.Lock()
		v := c.variant
		for v == c.variant {
			v = c.rng.IntN(len(c.vars))
		}
		c.mu.Unlock()
		c.reload(v)
	}
}

// reload makes table variant v the one in force: each live daemon gets it
// by SIGHUP, one after the other, so two tables are live at once.
func (c *chaos) reload(v int) {
	c.mu.Lock()
	c.variant = v
	c.reloads++
	c.mu.Unlock()
	c.note("reload: %s", c.vars[v])
	for _, r := range c.live() {
		c.mu.Lock()
		frozen := c.impaired[r.id]
		c.mu.Unlock()
		before := len(r.logs("table reloaded"))
		c.writeTable(r.id, v)
		asked := time.Now()
		_ = r.cmd.Process.Signal(syscall.SIGHUP)
		c.mu.Lock()
		c.tables[r.id] = append(c.tables[r.id], replicaTable{asked: asked, sure: asked.Add(time.Hour), v: v})
		i := len(c.tables[r.id]) - 1
		c.mu.Unlock()
		c.wg.Go(func() {
			ok := waitUntil(15*time.Second, func() bool { return len(r.logs("table reloaded")) > before || !r.alive() })
			if errs := r.logs("reload failed"); len(errs) > 0 {
				c.t.Errorf("%s: reload failed: %v", r.id, errs[0].Fields)
			}
			c.mu.Lock()
			if ok && r.alive() {
				c.tables[r.id][i].sure = time.Now()
			}
			c.mu.Unlock()
			if !ok && !frozen {
				c.t.Errorf("%s did not reload within 15 s", r.id)
			}
		})
		// Replicas reload one after the other: two tables live at once.
		time.Sleep(time.Duration(c.rng.IntN(1500)) * time.Millisecond)
	}
}

func (c *chaos) history(job string) []scheduler.Run {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := c.ctl.History(ctx, job, 2000)
	if err != nil {
		c.t.Errorf("history %s: %v", job, err)
	}
	return h
}

func (c *chaos) tryAPI(id, method, path string, out any) error {
	c.mu.Lock()
	r := c.replicas[id]
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.admin+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

func (c *chaos) api(id, method, path string, out any) {
	c.t.Helper()
	if err := c.tryAPI(id, method, path, out); err != nil {
		c.t.Errorf("%s %s on %s: %v", method, path, id, err)
	}
}

// fileStart is one line of the starts file.
type fileStart struct {
	runID string
	token int64
	at    time.Time
	pid   int
}

func (c *chaos) fileStarts() []fileStart {
	f, err := os.Open(c.startsAt)
	if err != nil {
		c.t.Errorf("starts file: %v", err)
		return nil
	}
	defer f.Close()
	var out []fileStart
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			c.t.Errorf("starts file: bad line %q", sc.Text())
			continue
		}
		tok, _ := strconv.ParseInt(fs[1], 10, 64)
		ns, _ := strconv.ParseInt(fs[2], 10, 64)
		pid, _ := strconv.Atoi(fs[3])
		out = append(out, fileStart{fs[0], tok, time.Unix(0, ns), pid})
	}
	return out
}

// tablesAt is the table variants replica id may have run at t.
func (c *chaos) tablesAt(id string, t time.Time) []int {
	var out []int
	ts := c.tables[id]
	for _, rt := range ts {
		if rt.asked.After(t) {
			break
		}
		if !rt.sure.After(t) {
			out = out[:0]
		}
		out = append(out, rt.v)
	}
	return out
}

// limitAt is the largest concurrency of job any table in force at t allows.
func (c *chaos) limitAt(job string, t time.Time) int {
	if job != "conc" {
		return 1
	}
	m := 0
	for id := range c.tables {
		for _, v := range c.tablesAt(id, t) {
			m = max(m, c.vars[v].conc)
		}
	}
	return max(m, 1)
}

// poolAt is the largest size of pool any table in force at t gives.
func (c *chaos) poolAt(pool string, t time.Time) int {
	m := 1
	for id := range c.tables {
		for _, v := range c.tablesAt(id, t) {
			m = max(m, c.vars[v].poolSizeOf(pool))
		}
	}
	return m
}

// scheduledByAll reports whether every table in force from a while before
// instant at (a job new to the store runs no instant in the first 2.5 s of
// its state, and a renamed job is new) to its starting deadline (10 s) has
// job's run at at: then the run must be decided. Otherwise it may be run by
// a replica whose table has it, or by none.
func (c *chaos) scheduledByAll(job string, at time.Time) bool {
	for id := range c.tables {
		for _, v := range c.tablesDuring(id, at.Add(-5*time.Second), at.Add(11*time.Second)) {
			if !c.vars[v].schedules(job, at) {
				return false
			}
		}
	}
	return true
}

// scheduledOn reports whether some table replica id ran between from and
// until has job's run at at.
func (c *chaos) scheduledOn(id, job string, at, from, until time.Time) bool {
	for _, v := range c.tablesDuring(id, from, until) {
		if c.vars[v].schedules(job, at) {
			return true
		}
	}
	return false
}

// tablesDuring is the table variants replica id may have run at some time
// between from and until: each from when it was asked for until the next
// one was surely in force.
func (c *chaos) tablesDuring(id string, from, until time.Time) []int {
	var out []int
	ts := c.tables[id]
	for i, rt := range ts {
		if rt.asked.After(until) {
			break
		}
		replaced := false
		for _, next := range ts[i+1:] {
			replaced = replaced || !next.sure.After(from)
		}
		if !replaced {
			out = append(out, rt.v)
		}
	}
	return out
}

// claimFrom is the earliest a run's claim may have been sent, and with it
// the table whose limits it was claimed under: its process may start
// seconds later on a loaded machine (sh, then exec), after its daemon
// reloaded another table. At most 3 s before the start; for a scheduled
// run a claim ahead and some before its instant; for a manual one its
// request.
func (c *chaos) claimFrom(r runRec) time.Time {
	from := r.Start.Add(-3 * time.Second)
	if at := r.Scheduled(); !at.IsZero() {
		return minTime(from, at.Add(-2*time.Second))
	}
	for _, tr := range c.triggers {
		if tr.id == r.RunID {
			return minTime(from, tr.at)
		}
	}
	return from
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// effective is the span a process counted as a holder: from its start until
// it died or its lease ended at Redis, whichever came first.
type effective struct {
	runRec
	until time.Time
	obs   slotObs
	seen  bool
}

func (c *chaos) judge(from, to, stopped time.Time, records map[string][]scheduler.Run) {
	t := c.t
	c.mu.Lock()
	defer c.mu.Unlock()
	all := c.led.Runs()
	files := c.fileStarts()
	inLoss := func(at time.Time) bool {
		for _, l := range c.losses {
			if l.has(at) {
				return true
			}
		}
		return false
	}
	lostBefore := func(at time.Time) bool { // a loss came after at
		for _, l := range c.lossAt {
			if l.After(at) {
				return true
			}
		}
		return false
	}

	// One start per run id, by the file and by the ledger; they agree.
	byFile := map[string][]fileStart{}
	for _, f := range files {
		byFile[f.runID] = append(byFile[f.runID], f)
	}
	for id, fs := range byFile {
		if len(fs) > 1 {
			t.Errorf("run %s started %d times: %+v", id, len(fs), fs)
		}
	}
	if dups := duplicates(all); len(dups) > 0 {
		t.Errorf("the ledger saw run ids started twice: %v", dups)
	}
	for _, r := range all {
		ok := false
		for _, f := range byFile[r.RunID] {
			ok = ok || (f.pid == r.PID && f.token == r.Token)
		}
		if !ok {
			t.Errorf("%s (pid %d, token %d) reported to the ledger but is not in the starts file", r.RunID, r.PID, r.Token)
		}
	}

	// Effective spans, per job.
	byJob := map[string][]effective{}
	for _, r := range all {
		e := effective{runRec: r, until: r.End}
		if e.until.IsZero() {
			e.until = stopped.Add(time.Hour)
		}
		if o, ok := c.watch[jobOf(r.RunID)].Obs(r.RunID); ok && len(o.Grants) > 0 {
			e.obs, e.seen = o, true
			if end := o.End(); end.Before(e.until) {
				e.until = end
			}
		}
		// A run replaced (overlap: replace) lost its slot when its
		// replacement was claimed, on Redis' clock, though the watcher may
		// not have seen a slot held for less than a poll (claim answers
		// that come in a burst after a stall); its holder learns it at
		// its next renewal (judged below).
		if rs := records[r.RunID]; len(rs) > 0 && rs[0].Outcome == scheduler.Replaced && !rs[0].FinishedAt.IsZero() && rs[0].FinishedAt.Before(e.until) {
			e.until = rs[0].FinishedAt
		}
		byJob[jobOf(r.RunID)] = append(byJob[jobOf(r.RunID)], e)
	}
	// A replaced run's process ends within a renewal (lease / 3), the kill
	// grace and some slack of its replacement, unless its replica or Redis
	// could not say so then.
	for _, r := range all {
		rs := records[r.RunID]
		if len(rs) == 0 || rs[0].Outcome != scheduler.Replaced || r.End.IsZero() || rs[0].FinishedAt.IsZero() {
			continue
		}
		at := rs[0].FinishedAt
		late := r.End.Sub(at)
		if late <= 2*time.Second {
			continue
		}
		hit := func(s chaosSpan) bool { return s.from.Before(r.End) && s.to.After(at.Add(-time.Second)) }
		if slices.ContainsFunc(c.stalls, hit) || slices.ContainsFunc(c.restartAt, hit) || slices.ContainsFunc(c.freezes[r.Replica], hit) {
			continue
		}
		t.Errorf("%s on %s was replaced at %s, and its process ran on %s after that", r.RunID, r.Replica, at.Format("15:04:05.000"), late)
	}
	overlapErr := 0
	for job, es := range byJob {
		sort.Slice(es, func(a, b int) bool { return es[a].Start.Before(es[b].Start) })
		// Limits: at every start, the holders alive then.
		for i, e := range es {
			n := 0
			var who []string
			for _, o := range es[:i+1] {
				if o.until.After(e.Start) {
					n++
					who = append(who, fmt.Sprintf("%s slot %d on %s [%s, %s]", o.RunID, o.Slot, o.Replica, o.Start.Format("15:04:05.000"), o.until.Format("15:04:05.000")))
				}
			}
			limit := 0
			for at := c.claimFrom(e.runRec); !at.After(e.Start); at = at.Add(100 * time.Millisecond) {
				limit = max(limit, c.limitAt(job, at))
			}
			if n > limit && overlapErr < 10 {
				overlapErr++
				t.Errorf("%s: %d holders at %s, the largest concurrency in force was %d: %s", job, n, e.Start.Format("15:04:05.000"), limit, strings.Join(who, "; "))
			}
		}
		// Per slot: one holder at a time, tokens rising.
		slots := map[int][]runRec{}
		for i, e := range es {
			for _, o := range es[:i] {
				if o.Slot == e.Slot && o.until.After(e.Start) && overlapErr < 10 {
					overlapErr++
					t.Errorf("%s slot %d held by %s (on %s, until %s) and %s (on %s, from %s)", job, e.Slot, o.RunID, o.Replica,
						o.until.Format("15:04:05.000"), e.RunID, e.Replica, e.Start.Format("15:04:05.000"))
				}
			}
			slots[e.Slot] = append(slots[e.Slot], e.runRec)
		}
		for slot, rs := range slots {
			if bad := tokensRise(rs); bad != "" {
				t.Errorf("%s slot %d: tokens do not rise: %s", job, slot, bad)
			}
		}
		// Tokens: unique, and above every token of a run that started
		// before this one could be claimed.
		tok := map[int64]string{}
		for _, e := range es {
			if o, ok := tok[e.Token]; ok {
				t.Errorf("%s: %s and %s share token %d", job, o, e.RunID, e.Token)
			}
			tok[e.Token] = e.RunID
		}
		for _, b := range es {
			claimable := b.Scheduled().Add(-time.Second)
			if b.Scheduled().IsZero() {
				claimable = time.Time{}
				for _, tr := range c.triggers {
					if tr.id == b.RunID {
						claimable = tr.at
					}
				}
			}
			if claimable.IsZero() {
				continue
			}
			for _, a := range es {
				if a.Start.Before(claimable) && a.Token >= b.Token {
					t.Errorf("%s: %s (token %d) started at %s, after %s (token %d) had started at %s", job, b.RunID, b.Token,
						b.Start.Format("15:04:05.000"), a.RunID, a.Token, a.Start.Format("15:04:05.000"))
					break
				}
			}
		}
	}

	// The pools: the runs of pa, pb (pc), and tick that took a slot of
	// pool p, or of q, never more at once than the largest size in force.
	for _, pool := range []string{"p", "q"} {
		var pooled []effective
		for _, job := range []string{"pa", "pb", "pc", "tick"} {
			for _, e := range byJob[job] {
				o, held := c.watch["pool:"+pool].Obs(e.RunID)
				held = held && len(o.Grants) > 0
				if !held {
					// Not seen holding a slot of the pool: pooled for sure if
					// every table its replica ran between the earliest claim
					// and the start had the job in it (a claim may be
					// answered late).
					from := e.Scheduled().Add(-time.Second)
					if e.Scheduled().IsZero() {
						from = e.Start.Add(-10 * time.Second)
						for _, tr := range c.triggers {
							if tr.id == e.RunID {
								from = tr.at
							}
						}
					}
					sure := true
					for at := from; !at.After(e.Start); at = at.Add(100 * time.Millisecond) {
						vs := c.tablesAt(e.Replica, at)
						sure = sure && len(vs) > 0
						for _, v := range vs {
							sure = sure && c.vars[v].poolOf(job) == pool
						}
					}
					if !sure {
						continue
					}
				}
				if held && o.End().Before(e.until) {
					e.until = o.End()
				}
				pooled = append(pooled, e)
			}
		}
		sort.Slice(pooled, func(a, b int) bool { return pooled[a].Start.Before(pooled[b].Start) })
		mostPool := 1
		for _, v := range c.vars {
			mostPool = max(mostPool, v.poolSizeOf(pool))
		}
		for i, e := range pooled {
			var who []string
			for _, o := range pooled[:i+1] {
				if o.until.After(e.Start) {
					who = append(who, fmt.Sprintf("%s on %s [%s, %s]", o.RunID, o.Replica, o.Start.Format("15:04:05.000"), o.until.Format("15:04:05.000")))
				}
			}
			limit := 0
			for at := c.claimFrom(e.runRec); !at.After(e.Start); at = at.Add(100 * time.Millisecond) {
				limit = max(limit, c.poolAt(pool, at))
			}
			if len(who) > limit && overlapErr < 10 {
				overlapErr++
				t.Errorf("pool %s: %d holders at %s, the largest size in force was %d: %s", pool, len(who), e.Start.Format("15:04:05.000"), limit, strings.Join(who, "; "))
			}
		}
		if m := c.watch["pool:"+pool].MaxValid(); m > mostPool {
			t.Errorf("Redis held %d valid holds of pool %s (size at most %d) at once", m, pool, mostPool)
		}
	}

	// Kill timing.
	for _, r := range all {
		var frozen, killed bool
		for _, k := range c.kills[r.Replica] {
			if k.After(r.Start) && (r.End.IsZero() || r.End.After(k)) {
				killed = true
				if r.End.IsZero() || r.End.Sub(k) > time.Second {
					t.Errorf("%s's process outlived its daemon %s (killed %s) by more than 1 s: ended %s", r.RunID, r.Replica, k.Format("15:04:05.000"), r.End.Format("15:04:05.000"))
				}
			}
		}
		o, seen := c.watch[jobOf(r.RunID)].Obs(r.RunID)
		seen = seen && len(o.Grants) > 0
		for _, f := range c.freezes[r.Replica] {
			if f.from.Before(r.End) && f.to.After(r.Start) {
				frozen = true
				if seen && o.End().Before(f.to) && r.End.Sub(f.to) > 1500*time.Millisecond {
					t.Errorf("%s's lease ended at %s while %s was frozen; its process ended %s after SIGCONT", r.RunID, o.End().Format("15:04:05.000"), r.Replica, r.End.Sub(f.to))
				}
			}
		}
		removed := !o.Removed.IsZero() && o.Removed.Before(o.Expiry) // released, reaped or lost before it expired
		if seen && !frozen && !killed && !removed && !r.End.IsZero() && r.End.Sub(o.Expiry) > 200*time.Millisecond {
			t.Errorf("%s on %s: its process ended %s, %s after its lease ended at Redis (%s)", r.RunID, r.Replica, r.End.Format("15:04:05.000"), r.End.Sub(o.Expiry), o.Expiry.Format("15:04:05.000"))
		}
	}

	// Records: every start has one, with its token, none left running;
	// every scheduled instant of the window has a start or one record.
	started := map[string]runRec{}
	for _, r := range all {
		started[r.RunID] = r
	}
	for id, rs := range records {
		if len(rs) > 1 {
			t.Errorf("%s has %d records: %+v", id, len(rs), rs)
		}
		for _, r := range rs {
			if r.Outcome == scheduler.Running {
				t.Errorf("%s's record still says running after every process ended", id)
			}
		}
	}
	for _, f := range files {
		if _, ok := started[f.runID]; !ok {
			started[f.runID] = runRec{RunID: f.runID, Token: f.token, PID: f.pid, Start: f.at}
		}
	}
	for id, r := range started {
		if r.Replica == "" {
			continue // its process died before it reported to the ledger
		}
		rs := records[id]
		claimed := r.Scheduled().Add(-time.Second) // claims go out ahead of the instant
		if r.Scheduled().IsZero() {
			claimed = r.Start.Add(-10 * time.Second) // a manual run asked for by a request that timed out
			for _, tr := range c.triggers {
				if tr.id == id {
					claimed = tr.at
				}
			}
		}
		if lostBefore(claimed) {
			// Its record may be gone, or be the loss' missed record.
			continue
		}
		if len(rs) == 0 {
			t.Errorf("%s started (token %d on %s at %s) and has no record", id, r.Token, r.Replica, r.Start.Format("15:04:05.000"))
			continue
		}
		if rs[0].FencingToken != r.Token || rs[0].Replica != r.Replica {
			t.Errorf("%s started with token %d on %s; its record says token %d on %s (%s/%s)", id, r.Token, r.Replica, rs[0].FencingToken, rs[0].Replica, rs[0].Decision, rs[0].Outcome)
		}
	}
	// A lease_lost record means the run ran: its process started, unless
	// its daemon died or froze before it could start it or say it never did.
	for id, rs := range records {
		r := rs[0]
		if r.Outcome != scheduler.LeaseLost {
			continue
		}
		if _, ok := started[id]; ok {
			continue
		}
		claimed := r.ScheduledAt.Add(-time.Second)
		if r.Kind != scheduler.KindScheduled {
			claimed = r.StartedAt.Add(-10 * time.Second)
			for _, tr := range c.triggers {
				if tr.id == id {
					claimed = tr.at
				}
			}
		}
		if lostBefore(claimed) {
			continue
		}
		end := r.FinishedAt.Add(5 * time.Second)
		excused := false
		for _, k := range c.kills[r.Replica] {
			excused = excused || (!k.Before(claimed) && k.Before(end))
		}
		for _, f := range c.freezes[r.Replica] {
			excused = excused || (f.from.Before(end) && f.to.After(claimed))
		}
		if !excused {
			t.Errorf("%s is recorded lease_lost (replica %s, token %d, %q) but never started, and %s neither died nor froze", id, r.Replica, r.FencingToken, r.Error, r.Replica)
		}
	}
	// No run loses its lease but by a fault of its replica or of Redis: a
	// reload (a lease changed, a job removed or renamed, moved to another
	// pool) under a run leaves it to renew its lease and end as it would.
	// (Scenario 20's link faults make a lease_lost of their own.)
	for id, rs := range records {
		r := rs[0]
		if c.links != nil || r.Outcome != scheduler.LeaseLost {
			continue
		}
		from, end := r.StartedAt.Add(-10*time.Second), r.FinishedAt.Add(time.Second)
		if r.StartedAt.IsZero() {
			from = r.FinishedAt.Add(-20 * time.Second)
		}
		hit := func(s chaosSpan) bool { return s.from.Before(end) && s.to.After(from) }
		excused := slices.ContainsFunc(c.stalls, hit) || slices.ContainsFunc(c.restartAt, hit) || slices.ContainsFunc(c.losses, hit)
		for _, k := range c.kills[r.Replica] {
			excused = excused || (k.After(from) && k.Before(end))
		}
		excused = excused || slices.ContainsFunc(c.freezes[r.Replica], hit)
		for _, l := range c.lossAt {
			excused = excused || (l.After(from) && l.Before(end))
		}
		if !excused {
			t.Errorf("%s ended lease_lost (replica %s, %s to %s, %q) though neither its replica nor Redis failed", id, r.Replica,
				r.StartedAt.Format("15:04:05.000"), r.FinishedAt.Format("15:04:05.000"), r.Error)
		}
	}
	undecided := map[string][]string{}
	decided := map[string]int{}
	missed := 0
	for _, name := range c.names() {
		every := everyOf(name) // the finest of any table
		for at := from.Truncate(every); !at.After(to); at = at.Add(every) {
			if at.Before(from) || inLoss(at) {
				continue
			}
			id := name + "@" + at.UTC().Format(time.RFC3339)
			o, held := c.watch[name].Obs(id)
			held = held && len(o.Grants) > 0 // started, perhaps by a daemon that died before the job did
			if _, ok := started[id]; ok || held || len(records[id]) > 0 || c.before[id] {
				decided[name]++
				if rs := records[id]; len(rs) > 0 && rs[0].Decision == scheduler.Missed {
					missed++
				}
				continue
			}
			if !c.scheduledByAll(name, at) {
				continue // a table in force then lacked it: no replica need have run it
			}
			undecided[name] = append(undecided[name], at.UTC().Format(time.TimeOnly))
		}
	}
	// A scheduled run starts only on a replica whose table had it, at
	// some time between its claim and its start.
	for id, r := range started {
		if r.Replica == "" || r.Scheduled().IsZero() {
			continue
		}
		if !c.scheduledOn(r.Replica, jobOf(id), r.Scheduled(), r.Scheduled().Add(-2*time.Second), r.Start) {
			t.Errorf("%s started on %s at %s, whose table did not have it", id, r.Replica, r.Start.Format("15:04:05.000"))
		}
	}
	for job, ats := range undecided {
		t.Errorf("%s: %d instants of the window neither started nor recorded: %v", job, len(ats), ats)
	}

	// Manual requests: each ran once, unless Redis lost it first.
	for _, tr := range c.triggers {
		if _, ok := started[tr.id]; !ok && !lostBefore(tr.at) {
			t.Errorf("manual run %s (asked at %s via %s) never started", tr.id, tr.at.Format("15:04:05.000"), tr.via)
		}
	}

	counts := map[string]int{}
	for _, r := range all {
		counts[jobOf(r.RunID)]++
	}
	kills, freezes := 0, 0
	for id := range c.kills {
		kills += len(c.kills[id])
	}
	for id := range c.freezes {
		freezes += len(c.freezes[id])
	}
	t.Logf("%d starts %v, %d manual requests, %d kills, %d freezes, %d Redis stalls, %d losses; instants judged %v",
		len(all), counts, len(c.triggers), kills, freezes, len(c.stalls), len(c.lossAt), decided)
	dups := 0
	for _, fs := range byFile {
		if len(fs) > 1 {
			dups++
		}
	}
	c.row.Runs, c.row.Duplicates, c.row.Missed = len(byFile), dups, missed
	c.row.figure("%d daemons stopped (%d by SIGTERM, the rest SIGKILL), %d frozen (SIGSTOP), %d Redis stalls, %d restarts keeping data, %d losing it, %d reloads, %d manual runs",
		kills, c.terms, freezes, len(c.stalls), c.restarts, len(c.lossAt), c.reloads, len(c.triggers))
	if len(c.linkCounts) > 0 {
		c.row.figure("link faults of one daemon: %v", c.linkCounts)
	}
	t.Logf("faults:\n%s", strings.Join(c.log, "\n"))
}
