//go:build faults

package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
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
// by SIGHUP (conc's concurrency 2→1→3, tick moved into and out of the pool).
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
// force, nor more than one of the pool's jobs at once; fencing tokens unique
// per job, rising per slot in start order and above those of runs that
// started before the later run could be claimed; a killed daemon's jobs gone
// within 1 s, a job whose lease ended while its daemon was frozen gone within
// 1.5 s of SIGCONT, and otherwise every job gone by its lease's end at
// Redis; every scheduled instant of the window has a start or exactly one
// record, except around a data loss (the documented window: records before
// it are gone, instants below its floor are recorded missed or not at all);
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
			randomFaults(t, row, uint64(seed), chaos)
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
}

var variants = []tableVariant{{2, false}, {1, false}, {3, true}, {1, true}, {2, true}, {3, false}}

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
	kills    map[string][]time.Time
	freezes  map[string][]chaosSpan
	stalls   []chaosSpan
	losses   []chaosSpan // from the snapshot before a data loss to the loss floor
	lossAt   []time.Time
	before   map[string]bool // run ids recorded before a loss
	procs    []*replica      // every daemon process, in start order
	restarts int             // of Redis, keeping its data
	terms    int             // daemons stopped by SIGTERM
	reloads  int
	triggers []chaosTrigger
	log      []string
	wg       sync.WaitGroup
}

func (c *chaos) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf("%6.2fs ", time.Since(c.begin).Seconds())+fmt.Sprintf(format, args...))
}

func randomFaults(t *testing.T, row *row, seed uint64, chaosFor time.Duration) {
	c := &chaos{t: t, row: row, rng: rand.New(rand.NewPCG(seed, 0x5eed)), dir: t.TempDir(),
		prefix:   "x" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		replicas: map[string]*replica{}, impaired: map[string]bool{}, tables: map[string][]replicaTable{},
		kills: map[string][]time.Time{}, before: map[string]bool{}, freezes: map[string][]chaosSpan{}, watch: map[string]*slotWatch{}}
	c.startsAt = filepath.Join(c.dir, "starts.log")
	c.redis = redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	c.direct = c.redis.Client(t, &redis.Options{MaxRetries: -1, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	c.ctl = schedtest.RedisStore(t, c.direct, scheduler.WithKeyPrefix(c.prefix)).Control()
	c.led = newLedger(t, &jobSlotSink{high: map[string]int64{}})
	for _, j := range randomJobs {
		c.watch[j.name] = watchSlots(t, c.direct, c.prefix+":{"+j.name+"}:slots", 3*time.Second)
	}
	c.watch["pool:p"] = watchSlots(t, c.direct, c.prefix+":{pool:p}:held", 3*time.Second)
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
	// Every daemon up, the table settled; then stop new starts and let every
	// run end.
	for _, r := range c.live() {
		r.waitReady()
	}
	time.Sleep(3 * time.Second)
	for _, j := range randomJobs {
		c.api(c.anyLive(), http.MethodPost, "/api/v1/jobs/"+j.name+"/pause", nil)
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
	records := map[string][]scheduler.Run{}
	waitUntil(15*time.Second, func() bool {
		clear(records)
		for _, j := range randomJobs {
			for _, r := range c.history(j.name) {
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
		return true
	})
	// Once every process has ended, no slot of a job or of the pool stays
	// held past a lease and a heartbeat (a dead holder's is reaped).
	keys := []string{c.prefix + ":{pool:p}:held"}
	for _, j := range randomJobs {
		keys = append(keys, c.prefix+":{"+j.name+"}:slots")
	}
	held := map[string][]string{}
	waitUntil(6*time.Second, func() bool {
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

// tableText is table variant v for replica id.
func (c *chaos) tableText(v int) string {
	tv := variants[v]
	var b strings.Builder
	fmt.Fprintf(&b, `store:
  url: redis://%s/0
  key_prefix: %s
admin:
  rate_limit: 0
pools:
  p: 1
defaults:
  lease: 3s
  kill_grace: 100ms
  history_limit: 2000
  env: {FAULT_LEDGER: %q}
jobs:
`, c.redis.Addr(), c.prefix, c.led.Addr())
	// $$ is a literal $ in a table: the shell sees $$, its pid.
	script := `echo "$SOLOCRON_RUN_ID $SOLOCRON_FENCING_TOKEN $(date +%s%N) $$$$" >> ` + c.startsAt + `; exec "$@"`
	for _, j := range randomJobs {
		fields := j.fields
		switch {
		case j.name == "conc":
			fields += fmt.Sprintf("    concurrency: %d\n", tv.conc)
		case j.name == "tick" && tv.tickPooled:
			fields += "    pool: p\n"
		}
		fmt.Fprintf(&b, "  - name: %s\n    schedule: \"@every %s\"\n    command: [\"/bin/sh\", \"-c\", %q, \"sh\", %q, \"-sleep\", %q, \"-write-every\", \"100ms\"]\n%s",
			j.name, j.every, script, faultjobBin, j.sleep.String(), fields)
	}
	return b.String()
}

func (c *chaos) writeTable(id string, v int) string {
	path := filepath.Join(c.dir, id+".yaml")
	if err := os.WriteFile(path, []byte(c.tableText(v)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// start starts replica id (again) with the table in force.
func (c *chaos) start(id string) *replica {
	c.mu.Lock()
	v := c.variant
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
func (c *chaos) restartAfter(id string, down time.Duration) {
	time.Sleep(down)
	c.start(id)
	c.mu.Lock()
	delete(c.impaired, id)
	c.mu.Unlock()
	c.note("%s restarted", id)
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
	switch k := c.rng.IntN(14); {
	case k < 3: // a manual run
		job := randomJobs[c.rng.IntN(len(randomJobs))].name
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
				c.restartAfter(id, down)
			})
			return
		}
		at := r.kill9()
		c.mu.Lock()
		c.kills[id] = append(c.kills[id], at)
		c.mu.Unlock()
		c.note("kill -9 %s, back in %s", id, down)
		c.wg.Go(func() {
			c.restartAfter(id, down)
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
			c.redis.Restart()
			c.note("Redis kill -9 and restart, appendonly kept its data")
			c.mu.Lock()
			c.restarts++
			c.redisBad = false
			c.mu.Unlock()
		case 11: // restart, data lost
			// Keep the records Redis holds before it loses them.
			snap := time.Now()
			for _, j := range randomJobs {
				for _, r := range c.history(j.name) {
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
			v = c.rng.IntN(len(variants))
		}
		c.variant = v
		c.reloads++
		c.mu.Unlock()
		c.note("reload: conc concurrency %d, tick pooled %v", variants[v].conc, variants[v].tickPooled)
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
			m = max(m, variants[v].conc)
		}
	}
	return max(m, 1)
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
		byJob[jobOf(r.RunID)] = append(byJob[jobOf(r.RunID)], e)
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
			for at := e.Start.Add(-3 * time.Second); !at.After(e.Start); at = at.Add(100 * time.Millisecond) {
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

	// The pool: pa, pb and tick's runs that took a pool slot, one at a time.
	var pooled []effective
	for _, job := range []string{"pa", "pb", "tick"} {
		for _, e := range byJob[job] {
			o, held := c.watch["pool:p"].Obs(e.RunID)
			held = held && len(o.Grants) > 0
			if job == "tick" && !held {
				// Not seen holding a pool slot: pooled for sure if every
				// table its replica ran between the earliest claim and the
				// start had tick in the pool (a claim may be answered late).
				if e.Scheduled().IsZero() {
					continue
				}
				sure := true
				for at := e.Scheduled().Add(-time.Second); !at.After(e.Start); at = at.Add(100 * time.Millisecond) {
					vs := c.tablesAt(e.Replica, at)
					sure = sure && len(vs) > 0
					for _, v := range vs {
						sure = sure && variants[v].tickPooled
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
	for i, e := range pooled {
		for _, o := range pooled[:i] {
			if o.until.After(e.Start) && overlapErr < 10 {
				overlapErr++
				t.Errorf("pool p (1 slot): %s (on %s, until %s) and %s (on %s, from %s) at once", o.RunID, o.Replica,
					o.until.Format("15:04:05.000"), e.RunID, e.Replica, e.Start.Format("15:04:05.000"))
			}
		}
	}
	if m := c.watch["pool:p"].MaxValid(); m > 1 {
		t.Errorf("Redis held %d valid holds of pool p (size 1) at once", m)
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
	undecided := map[string][]string{}
	decided := map[string]int{}
	missed := 0
	for _, j := range randomJobs {
		every, _ := time.ParseDuration(j.every)
		for at := from.Truncate(every); !at.After(to); at = at.Add(every) {
			if at.Before(from) || inLoss(at) {
				continue
			}
			id := j.name + "@" + at.UTC().Format(time.RFC3339)
			o, held := c.watch[j.name].Obs(id)
			held = held && len(o.Grants) > 0 // started, perhaps by a daemon that died before the job did
			if _, ok := started[id]; ok || held || len(records[id]) > 0 || c.before[id] {
				decided[j.name]++
				if rs := records[id]; len(rs) > 0 && rs[0].Decision == scheduler.Missed {
					missed++
				}
				continue
			}
			undecided[j.name] = append(undecided[j.name], at.UTC().Format(time.TimeOnly))
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
	t.Logf("faults:\n%s", strings.Join(c.log, "\n"))
}
