//go:build faults

package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// jobName is the one job of every scenario's table.
const jobName = "tick"

// jobSpec is the job a scenario's replicas run: the faultjob command.
// termGrace is the kill_grace of the scenarios that assert the job ended by
// its SIGTERM ("end term"): with the default 100 ms, a job process not
// scheduled within 100 ms on a loaded machine is SIGKILLed before it can
// say so (CI, scenario 4b: the job gone 105 ms after SIGTERM, reason "").
// Those scenarios' faults outlast the lease, so a longer grace (declared
// lost 1.5 s before a 3 s lease runs out) costs them nothing.
const termGrace = time.Second

type jobSpec struct {
	Schedule    string        // default "@every 1s"
	Lease       time.Duration // default 3s
	Concurrency int           // default 1
	Sleep       time.Duration // how long each run lasts
	WriteEvery  time.Duration // sink write period; default 100ms
	KillGrace   time.Duration // SIGTERM to SIGKILL; default 100ms (termGrace where a scenario wants "end term")
	Extra       []string      // more faultjob flags; {{redis}} is Redis' address
	YAML        string        // more job fields, "key: value" lines
}

type clusterConfig struct {
	Replicas  int
	Proxies   bool // each replica reaches Redis through its own fault proxy
	Job       jobSpec
	Sink      sink     // default a mutexSink
	RedisArgs []string // extra redis-server arguments
	Top       string   // more top-level table text (notifications:, pools:, ...)
}

// cluster is one scenario's world: a redis-server, replicas of the daemon
// (each perhaps behind a proxy), the ledger and sink, and the slot watcher.
type cluster struct {
	t      *testing.T
	cfg    clusterConfig
	dir    string
	prefix string
	redis  *redistest.Server
	direct *redis.Client // the test's own connection, never through a proxy
	ctl    *scheduler.Control
	led    *ledger
	watch  *slotWatch

	mu       sync.Mutex
	replicas []*replica
	n        int
}

func newCluster(t *testing.T, cfg clusterConfig) *cluster {
	t.Helper()
	if cfg.Job.Schedule == "" {
		cfg.Job.Schedule = "@every 1s"
	}
	if cfg.Job.Lease == 0 {
		cfg.Job.Lease = 3 * time.Second
	}
	if cfg.Job.Concurrency == 0 {
		cfg.Job.Concurrency = 1
	}
	if cfg.Job.KillGrace == 0 {
		// Short: a lease is declared lost kill_grace + 0.5 s before it
		// runs out (2.4 s into a 3 s lease here), and the scenarios whose
		// faults last 2 s must still end inside it. faultjob stops at once
		// on SIGTERM anyway.
		cfg.Job.KillGrace = 100 * time.Millisecond
	}
	if cfg.Job.WriteEvery == 0 {
		cfg.Job.WriteEvery = 100 * time.Millisecond
	}
	if cfg.Sink == nil {
		cfg.Sink = &mutexSink{}
	}
	c := &cluster{t: t, cfg: cfg, dir: t.TempDir(), prefix: "f" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	c.redis = redistest.Start(t, cfg.RedisArgs...)
	c.direct = c.redis.Client(t, &redis.Options{MaxRetries: -1, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	c.ctl = schedtest.RedisStore(t, c.direct, scheduler.WithKeyPrefix(c.prefix)).Control()
	c.led = newLedger(t, cfg.Sink)
	c.watch = watchSlots(t, c.direct, c.prefix+":{"+jobName+"}:slots", cfg.Job.Lease)
	for range cfg.Replicas {
		c.addReplica()
	}
	for _, r := range c.Replicas() {
		r.waitReady()
	}
	return c
}

// table writes the YAML table for a replica reaching Redis at addr.
func (c *cluster) table(name, addr string) string {
	j := c.cfg.Job
	args := []string{faultjobBin, "-sleep", j.Sleep.String(), "-write-every", j.WriteEvery.String()}
	for _, a := range j.Extra {
		args = append(args, strings.ReplaceAll(a, "{{redis}}", c.redis.Addr()))
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	var extra strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(j.YAML), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			extra.WriteString("    " + l + "\n")
		}
	}
	text := fmt.Sprintf(`store:
  url: redis://%s/0
  key_prefix: %s
jobs:
  - name: %s
    schedule: %q
    lease: %s
    concurrency: %d
    kill_grace: %s
    history_limit: 2000
    command: [%s]
    env: {FAULT_LEDGER: %q}
%s%s`, addr, c.prefix, jobName, j.Schedule, j.Lease, j.Concurrency, j.KillGrace, strings.Join(quoted, ", "), c.led.Addr(), extra.String(), c.cfg.Top)
	path := filepath.Join(c.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// addReplica starts one more replica, r1, r2, ...
func (c *cluster) addReplica() *replica {
	c.t.Helper()
	c.mu.Lock()
	c.n++
	id := "r" + strconv.Itoa(c.n)
	c.mu.Unlock()
	addr := c.redis.Addr()
	var px *proxy
	if c.cfg.Proxies {
		var err error
		if px, err = startProxy(c.redis.Addr(), scriptNames); err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(px.Close)
		addr = px.Addr()
	}
	r := startReplica(c.t, id, c.table(id, addr))
	r.px = px
	c.mu.Lock()
	c.replicas = append(c.replicas, r)
	c.mu.Unlock()
	return r
}

// restart starts r again — a new process with the same id, table and proxy
// — once it has exited, and returns the new replica, which takes r's place.
func (c *cluster) restart(r *replica) *replica {
	c.t.Helper()
	if r.alive() {
		c.t.Fatalf("restart %s: still running", r.id)
	}
	n := startReplica(c.t, r.id, r.table)
	n.px = r.px
	c.mu.Lock()
	for i, o := range c.replicas {
		if o == r {
			c.replicas[i] = n
		}
	}
	c.mu.Unlock()
	return n
}

func (c *cluster) Replicas() []*replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*replica(nil), c.replicas...)
}

// live returns the replicas whose daemon is running.
func (c *cluster) live() []*replica {
	var out []*replica
	for _, r := range c.Replicas() {
		if r.alive() {
			out = append(out, r)
		}
	}
	return out
}

func (c *cluster) replica(id string) *replica {
	for _, r := range c.Replicas() {
		if r.id == id {
			return r
		}
	}
	c.t.Fatalf("no replica %q", id)
	return nil
}

// renewEvery is how often a run's lease is renewed, which is also each
// renewal's deadline: a command job's lease is declared lost kill_grace +
// 0.5 s before it runs out, and renewed three times in what is left.
func (c *cluster) renewEvery() time.Duration {
	return (c.cfg.Job.Lease - c.cfg.Job.KillGrace - 500*time.Millisecond) / 3
}

// waitRun waits for a run the ledger has that satisfies ok.
func (c *cluster) waitRun(timeout time.Duration, what string, ok func(runRec) bool) runRec {
	c.t.Helper()
	var got runRec
	testkit.WaitFor(c.t, timeout, what, func() bool {
		for _, r := range c.led.Runs() {
			if ok(r) {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

// firstRun waits for the cluster's first run, whichever it is.
func (c *cluster) firstRun() runRec {
	c.t.Helper()
	return c.waitRun(20*time.Second, "a first run", func(runRec) bool { return true })
}

// waitEnded waits until the job process of runID has ended.
func (c *cluster) waitEnded(runID string, timeout time.Duration) runRec {
	c.t.Helper()
	return c.waitRun(timeout, runID+" to end", func(r runRec) bool { return r.RunID == runID && !r.End.IsZero() })
}

// history returns the job's finished run records, by scheduled instant.
func (c *cluster) history() []scheduler.Run {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := c.ctl.History(ctx, jobName, 2000)
	if err != nil {
		c.t.Fatalf("history: %v", err)
	}
	sort.Slice(h, func(a, b int) bool { return h[a].ScheduledAt.Before(h[b].ScheduledAt) })
	return h
}

// record returns the history record of runID.
func (c *cluster) record(runID string) (scheduler.Run, bool) {
	for _, r := range c.history() {
		if r.ID == runID {
			return r, true
		}
	}
	return scheduler.Run{}, false
}

// decisions checks that every instant of an "@every 1s" job in [from, to]
// has exactly one record and returns the instants by decision/outcome. It
// reports undecided instants and instants with several records as errors.
func (c *cluster) decisions(from, to time.Time) map[string]int {
	c.t.Helper()
	byInstant := map[time.Time][]scheduler.Run{}
	for _, r := range c.history() {
		if r.Kind == scheduler.KindScheduled {
			byInstant[r.ScheduledAt.UTC()] = append(byInstant[r.ScheduledAt.UTC()], r)
		}
	}
	out := map[string]int{}
	var undecided []string
	for at := from.Truncate(time.Second); !at.After(to); at = at.Add(time.Second) {
		rs := byInstant[at.UTC()]
		if len(rs) == 0 {
			// Not in the history yet: still in flight?
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if r, err := c.ctl.Get(ctx, runID(at)); err == nil && r != nil {
				rs = append(rs, *r)
			}
			cancel()
		}
		switch len(rs) {
		case 0:
			undecided = append(undecided, at.UTC().Format(time.TimeOnly))
		case 1:
			o := string(rs[0].Decision)
			if rs[0].Decision == scheduler.Started {
				o = string(rs[0].Outcome)
			}
			out[o]++
		default:
			c.t.Errorf("instant %s has %d records: %+v", at.UTC().Format(time.RFC3339), len(rs), rs)
		}
	}
	if len(undecided) > 0 {
		c.t.Errorf("%d instants in [%s, %s] never decided (no record): %v", len(undecided),
			from.UTC().Format(time.TimeOnly), to.UTC().Format(time.TimeOnly), undecided)
	}
	return out
}

// decisionSummary prints decisions as "2 started, 1 lease_lost", in a
// stable order.
func decisionSummary(got map[string]int) string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", got[k], k))
	}
	return strings.Join(parts, ", ")
}

// replica is one scheduler daemon process.
type replica struct {
	t     *testing.T
	id    string
	table string
	admin string
	px    *proxy
	cmd   *exec.Cmd
	out   testkit.SyncBuffer
	done  chan struct{}
	code  int
}

func startReplica(t *testing.T, id, table string) *replica {
	t.Helper()
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, id: id, table: table, admin: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	r.cmd = exec.Command(schedulerBin, "run", "--config", table, "--replica-id", id,
		"--admin-listen", r.admin, "--log-format", "json", "--shutdown-grace", "1s")
	r.cmd.Env = cleanEnv()
	r.cmd.Stderr, r.cmd.Stdout = &r.out, &r.out
	// If the test binary dies, so does the replica, and with it its jobs.
	r.cmd.SysProcAttr = redistest.DieWithParent()
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	go func() {
		_ = r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		if r.alive() {
			_ = r.cmd.Process.Signal(syscall.SIGCONT)
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("%s output (last 16 KiB):\n%s", r.id, tail(r.out.String(), 16<<10))
		}
	})
	return r
}

// cleanEnv is the test's environment without what would change the
// scheduler's behaviour.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "SOLOCRON_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (r *replica) alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

func (r *replica) waitReady() {
	r.t.Helper()
	testkit.WaitFor(r.t, 30*time.Second, r.id+" ready", func() bool { return testkit.HTTPStatus("http://"+r.admin+"/readyz") == 200 })
}

// kill9 kills the replica with SIGKILL and waits for it.
func (r *replica) kill9() time.Time {
	at := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	return at
}

// term asks the replica to shut down (SIGTERM) and returns the time just
// before the signal; it does not wait.
func (r *replica) term() time.Time {
	at := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	return at
}

// stop freezes the replica (SIGSTOP); its jobs, in process groups of their
// own, go on. It returns the time just before the signal.
func (r *replica) stop() time.Time {
	at := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGSTOP)
	return at
}

// cont resumes it. It returns the time just before the signal: the replica
// may act on it before the call returns.
func (r *replica) cont() time.Time {
	at := time.Now()
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	return at
}

// logRec is one JSON log record of a replica.
type logRec struct {
	Time   time.Time
	Level  string
	Msg    string
	Fields map[string]any
}

// logs returns the records whose message contains msg.
func (r *replica) logs(msg string) []logRec {
	var out []logRec
	sc := bufio.NewScanner(strings.NewReader(r.out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		text, _ := m["msg"].(string)
		if !strings.Contains(text, msg) {
			continue
		}
		ts, _ := m["time"].(string)
		at, _ := time.Parse(time.RFC3339Nano, ts)
		lvl, _ := m["level"].(string)
		out = append(out, logRec{Time: at, Level: lvl, Msg: text, Fields: m})
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// sleepUntil sleeps until t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// nextInstant is the first whole second after t.
func nextInstant(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// bound fails the scenario if it outlives its time budget; every wait in
// it has its own timeout, so this only guards the sum.
func bound(t *testing.T, budget time.Duration) {
	start := time.Now()
	t.Cleanup(func() {
		if took := time.Since(start); took > budget {
			t.Errorf("scenario took %s, over its budget of %s", took.Round(time.Second), budget)
		}
	})
}

// staleness judges every write against Redis' own view of the leases.
type staleness struct {
	// Stale writes were made by a run after its lease had ended at Redis.
	Stale int
	// Harmful stale writes came after a run that was granted the same slot
	// (SOLOCRON_SLOT; the one slot of a job without a concurrency limit)
	// later had written: the writes fencing exists to stop.
	Harmful int
	// HarmfulAccepted of those were accepted by the sink: the table's
	// "stale writes accepted".
	HarmfulAccepted int
	// LegitRejected writes were refused while their run held a valid lease.
	LegitRejected int
	// Unobserved runs were never seen holding a slot (Redis lost it before
	// the watcher looked), so their writes are not judged.
	Unobserved int
}

// tally fills a scenario's common columns — runs, duplicates, missed
// instants in [from, to], stale writes accepted — from the jobs' ledger,
// Redis' view of the leases and the run records, and fails the test on any
// duplicate start. It returns the judgement of the writes and the decisions
// in [from, to] for the scenario's own checks.
func (c *cluster) tally(t *testing.T, row *row, from, to time.Time) (staleness, map[string]int) {
	t.Helper()
	all := c.led.Runs()
	dups := duplicates(all)
	st := judge(all, c.watch)
	got := c.decisions(from, to)
	row.Runs, row.Duplicates, row.Missed, row.StaleAccepted = len(starts(all)), len(dups), got["missed"], st.HarmfulAccepted
	if len(dups) > 0 {
		t.Errorf("duplicate starts: %v", dups)
	}
	return st, got
}

// wantNoStaleWrites fails the test if any write was made after its run's
// lease had ended, or refused while its run held a valid one.
func wantNoStaleWrites(t *testing.T, st staleness) {
	t.Helper()
	if st.Stale > 0 || st.LegitRejected > 0 {
		t.Errorf("writes after their lease ended, or refused while it was valid: %+v", st)
	}
}

// judge computes the staleness of runs' writes against the slots seen in
// Redis. A stale write is harmful once a run granted the same numbered slot
// after the writer's lease ended has written.
func judge(runs []runRec, w *slotWatch) staleness {
	var s staleness
	obs := map[string]slotObs{}
	slot := map[string]int{}
	for _, r := range runs {
		if o, ok := w.Obs(r.RunID); ok && len(o.Grants) > 0 {
			obs[r.RunID] = o
		}
		slot[r.RunID] = r.Slot
	}
	firstWrite := map[string]time.Time{}
	for _, r := range runs {
		if len(r.Writes) > 0 {
			if f, ok := firstWrite[r.RunID]; !ok || r.Writes[0].At.Before(f) {
				firstWrite[r.RunID] = r.Writes[0].At
			}
		}
	}
	for _, r := range runs {
		o, ok := obs[r.RunID]
		if !ok {
			s.Unobserved++
			continue
		}
		end := o.End()
		for _, wr := range r.Writes {
			if !wr.At.After(end) {
				if !wr.Accepted && o.ValidAt(wr.At) {
					s.LegitRejected++
				}
				continue
			}
			s.Stale++
			// A later holder of the same slot that has written before it.
			for id, oo := range obs {
				if id == r.RunID || slot[id] != r.Slot {
					continue
				}
				if fw, wrote := firstWrite[id]; wrote && !fw.After(wr.At) && !oo.Granted().Before(end) {
					s.Harmful++
					if wr.Accepted {
						s.HarmfulAccepted++
					}
					break
				}
			}
		}
	}
	return s
}

// tokensRise reports the first pair of runs, in start order, whose fencing
// tokens do not strictly increase; "" if they all do.
func tokensRise(runs []runRec) string {
	sorted := append([]runRec(nil), runs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].Start.Before(sorted[b].Start) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Token <= sorted[i-1].Token {
			return fmt.Sprintf("%s (token %d, started %s) after %s (token %d, started %s)",
				sorted[i].RunID, sorted[i].Token, sorted[i].Start.Format("15:04:05.000"),
				sorted[i-1].RunID, sorted[i-1].Token, sorted[i-1].Start.Format("15:04:05.000"))
		}
	}
	return ""
}

// dur formats a duration for the table.
func dur(d time.Duration) string {
	s := d.Seconds()
	sign := ""
	if s < 0 {
		sign, s = "−", -s
	}
	if s < 10 {
		return fmt.Sprintf("%s%.2f s", sign, s)
	}
	return fmt.Sprintf("%s%.1f s", sign, s)
}
