//go:build faults

package faults_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// 17. A rolling deploy across three daemons on one redis-server. Table v1:
// busy (a run every second lasting 3.5 s that fails, overlap: skip,
// concurrency 1), waiter (a run every 2 s lasting 2.5 s, overlap: wait,
// concurrency 1) and held (paused through the CLI before the deploy). Table
// v2 moves all three into pool p (size 4) and raises busy's concurrency to
// 3 and waiter's to 2. The deploy: r1 restarts with v2 (SIGTERM, start), r2
// reloads v2 (SIGHUP) while a busy run is in flight, r3 restarts with v2;
// for about 4 s after each step the replicas run different tables. Judged
// from outside — the jobs' own reports (run id, fencing token, slot), the
// run records and the pause through the admin API, and the notifications a
// test receiver got: no run id starts twice; never more processes of a job
// at once than the largest concurrency in force (1 while only v1 runs), nor
// more of the pool's jobs than its size once only v2 runs; per job and slot
// the tokens rise and no slot is held by two processes at once (no write is
// refused by a per-slot fencing sink); held stays paused after every step
// and starts no instant more than a second after the pause (claims go out
// up to 500 ms ahead); every run's record has the token
// its process got, and every run that ended failed, timed_out, lease_lost or
// missed — the runs in flight at each step among them — is notified once,
// with an event and record that match the run's record.
func TestScenario17RollingDeploy(t *testing.T) {
	t.Parallel()
	bound(t, 90*time.Second)
	row := report(t, "17", "rolling deploy of 3 daemons (2 restarts, 1 SIGHUP): a busy skip job and a wait job moved into a pool, concurrency 1→3 and 1→2; a paused job")
	d := newDeploy(t)
	for _, id := range []string{"r1", "r2", "r3"} {
		d.start(id, "v1")
	}
	for _, r := range d.replicas {
		r.waitReady()
	}

	// held runs, then is paused through the CLI.
	d.waitRun("held", 20*time.Second)
	out, code, _ := runCLIWithin(t, 20*time.Second, "pause", "held", "--reason", "before the deploy", "--config", d.tablePath("cli", "v1"))
	if code != 0 {
		t.Fatalf("scheduler pause held exited %d:\n%s", code, out)
	}
	pausedAt := time.Now()
	d.wantPaused("after the pause")
	d.waitRun("busy", 20*time.Second)
	d.waitRun("waiter", 20*time.Second)
	time.Sleep(3 * time.Second) // v1 alone
	v1Only := time.Now()

	// The deploy. Each step is taken while a busy run is in flight; the
	// runs in flight then must end with one event each.
	inFlight := map[string]string{} // run id -> step
	step := func(name string, do func()) time.Time {
		d.waitInFlight("busy", 10*time.Second)
		for _, r := range d.led.Runs() {
			if r.End.IsZero() {
				inFlight[r.RunID] = name
			}
		}
		do()
		d.wantPaused("after " + name)
		at := time.Now()
		time.Sleep(4 * time.Second) // mixed tables
		return at
	}
	step("r1 restarted with v2", func() { d.restart("r1", "v2") })
	step("r2 reloaded v2 (SIGHUP)", func() { d.reload("r2", "v2") })
	allV2 := step("r3 restarted with v2", func() { d.restart("r3", "v2") })
	time.Sleep(5 * time.Second) // v2 alone

	// Stop new starts (a pause through the admin API), let the runs in
	// flight end and their events go out.
	for _, job := range []string{"busy", "waiter"} {
		d.post("r1", "/api/v1/jobs/"+job+"/pause")
	}
	stopped := time.Now()
	testkit.WaitFor(t, 15*time.Second, "every job process to end", func() bool {
		for _, r := range d.led.Runs() {
			if r.End.IsZero() {
				return false
			}
		}
		return true
	})
	records := map[string]scheduler.Run{}
	notified := func(r scheduler.Run) (string, bool) {
		for _, e := range []scheduler.Outcome{scheduler.Failed, scheduler.TimedOut, scheduler.LeaseLost} {
			if r.Outcome == e {
				return string(e), true
			}
		}
		if r.Decision == scheduler.Missed || r.Outcome == scheduler.Missed {
			return string(scheduler.Missed), true
		}
		return "", false
	}
	// Not fatal when it times out: what is missing is reported below.
	waitUntil(20*time.Second, func() bool {
		clear(records)
		for _, job := range []string{"busy", "waiter", "held"} {
			for _, r := range d.runs(job) {
				records[r.ID] = r // two records of one run are reported below
			}
		}
		for _, r := range d.led.Runs() {
			if rec, ok := records[r.RunID]; !ok || rec.Outcome == scheduler.Running || rec.FinishedAt.IsZero() {
				return false
			}
		}
		got := d.hooks.byDelivery()
		for _, r := range records {
			if e, ok := notified(r); ok && len(got[r.ID+":"+e]) == 0 {
				return false
			}
		}
		return true
	})

	// Records, seen through the admin API.
	seen := map[string]int{}
	for _, job := range []string{"busy", "waiter", "held"} {
		for _, r := range d.runs(job) {
			seen[r.ID]++
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s has %d records", id, n)
		}
	}

	// One start per run id, and each start's token and slot are its record's.
	all := d.led.Runs()
	dups := duplicates(all)
	if len(dups) > 0 {
		t.Errorf("run ids started twice: %v", dups)
	}
	for _, r := range all {
		rec, ok := records[r.RunID]
		switch {
		case !ok:
			t.Errorf("%s started (token %d on %s) but has no record", r.RunID, r.Token, r.Replica)
		case rec.Outcome == scheduler.Running || rec.FinishedAt.IsZero():
			t.Errorf("%s's process ended at %s; its record still says %s", r.RunID, r.End.Format("15:04:05.000"), rec.Outcome)
		case rec.FencingToken != r.Token || rec.Replica != r.Replica:
			t.Errorf("%s started with token %d on %s; its record says token %d on %s", r.RunID, r.Token, r.Replica, rec.FencingToken, rec.Replica)
		}
	}

	// Limits: per job, the largest concurrency in force (1 while only v1
	// ran); per slot, one process at a time with rising tokens; the pool's
	// size once only v2 runs (from when the last run a v1 table started
	// has ended).
	byJob := map[string][]runRec{}
	for _, r := range all {
		job, _, _ := strings.Cut(r.RunID, "@")
		byJob[job] = append(byJob[job], r)
	}
	limits := map[string]int{"busy": 3, "waiter": 2, "held": 1}
	for job, runs := range byJob {
		if m := maxOverlap(runs, time.Time{}, stopped); m > limits[job] {
			t.Errorf("%s: %d processes at once, the largest concurrency in force is %d", job, m, limits[job])
		}
		if m := maxOverlap(runs, time.Time{}, v1Only); m > 1 {
			t.Errorf("%s: %d processes at once while every replica ran v1 (concurrency 1)", job, m)
		}
		slots := map[int][]runRec{}
		for _, r := range runs {
			slots[r.Slot] = append(slots[r.Slot], r)
		}
		for slot, rs := range slots {
			if bad := tokensRise(rs); bad != "" {
				t.Errorf("%s slot %d: tokens do not rise: %s", job, slot, bad)
			}
			if m := maxOverlap(rs, time.Time{}, stopped); m > 1 {
				t.Errorf("%s slot %d: held by %d processes at once", job, slot, m)
			}
		}
	}
	v2From := allV2
	for _, r := range all {
		if r.Start.Before(allV2) && r.End.After(v2From) {
			v2From = r.End
		}
	}
	poolMax := maxOverlap(append(append([]runRec(nil), byJob["busy"]...), byJob["waiter"]...), v2From, stopped)
	if poolMax > 4 {
		t.Errorf("pool p (size 4): %d of its jobs' processes at once after %s, when only v2 ran", poolMax, v2From.Format("15:04:05.000"))
	}
	if !v2From.Before(stopped.Add(-2 * time.Second)) {
		t.Errorf("only %s of v2 alone before the end: the pool check saw too little", stopped.Sub(v2From))
	}
	refused := d.refused()
	if refused > 0 {
		t.Errorf("the per-slot fencing sink refused %d writes: a slot's token went backwards under a live holder", refused)
	}

	// The pause held across every step. A pause is honoured at the next
	// claim, and claims go out up to 500 ms before their instant: an
	// instant less than a second after the pause may have been claimed
	// before it.
	var heldAfter []string
	for _, r := range byJob["held"] {
		if at := r.Scheduled(); at.After(pausedAt.Add(time.Second)) {
			heldAfter = append(heldAfter, r.RunID)
		}
	}
	if len(heldAfter) > 0 {
		t.Errorf("held, paused at %s, ran instants after it: %v", pausedAt.Format("15:04:05.000"), heldAfter)
	}

	// Each final event once, matching its run's record.
	got := d.hooks.byDelivery()
	events := 0
	for key, posts := range got {
		i := strings.LastIndexByte(key, ':') // run ids hold colons
		id, ev := key[:max(i, 0)], key[i+1:]
		rec, ok := records[id]
		want, notify := notified(rec)
		switch {
		case !ok:
			t.Errorf("notification %s for a run with no record", key)
			continue
		case !notify || want != ev:
			t.Errorf("notification %s, but the record says decision %s, outcome %s", key, rec.Decision, rec.Outcome)
		case len(posts) != 1:
			t.Errorf("notification %s delivered %d times", key, len(posts))
		}
		for _, p := range posts {
			if p.Run == nil || p.Run.ID != id || string(p.Event) != ev || (p.Run.Outcome != rec.Outcome && ev != string(scheduler.Missed)) {
				t.Errorf("notification %s carries event %s and run %+v; the record is %+v", key, p.Event, p.Run, rec)
			}
		}
		events += len(posts)
	}
	for id, rec := range records {
		if ev, ok := notified(rec); ok && len(got[id+":"+ev]) == 0 {
			what := ""
			if s, ok := inFlight[id]; ok {
				what = " (in flight when " + s + ")"
			}
			t.Errorf("%s%s ended %s/%s; its %s event was never delivered", id, what, rec.Decision, rec.Outcome, ev)
		}
	}
	// The runs in flight at each step, by outcome and events delivered.
	atStep := map[string]map[string]int{}
	for id, s := range inFlight {
		rec := records[id]
		ev, _ := notified(rec)
		if atStep[s] == nil {
			atStep[s] = map[string]int{}
		}
		out := cmp.Or(string(rec.Outcome), "no record")
		atStep[s][fmt.Sprintf("%s %s (%d events)", strings.SplitN(id, "@", 2)[0], out, len(got[id+":"+ev]))]++
	}
	var steps []string
	for s, outs := range atStep {
		steps = append(steps, s[:2]+": "+decisionSummary(outs))
	}
	sort.Strings(steps)

	missed := 0
	for _, r := range records {
		if r.Decision == scheduler.Missed {
			missed++
		}
	}
	outcomes := map[string]map[string]int{}
	for _, r := range records {
		o := string(r.Decision)
		if r.Decision == scheduler.Started {
			o = string(r.Outcome)
		}
		if outcomes[r.Job] == nil {
			outcomes[r.Job] = map[string]int{}
		}
		outcomes[r.Job][o]++
	}
	row.Runs, row.Duplicates, row.Missed = len(starts(all)), len(dups), missed
	row.figure("max processes at once: busy %d (limit 1→3), waiter %d (1→2); pool p %d of 4 with v2 alone; writes refused by the per-slot sink %d",
		maxOverlap(byJob["busy"], time.Time{}, stopped), maxOverlap(byJob["waiter"], time.Time{}, stopped), poolMax, refused)
	row.figure("held paused as seen by all 3 replicas after %d of 4 steps (pause, r1, r2, r3), %d instants started > 1 s after the pause", d.pausedSeen, len(heldAfter))
	row.figure("records: busy %s; waiter %s; held %s", decisionSummary(outcomes["busy"]), decisionSummary(outcomes["waiter"]), decisionSummary(outcomes["held"]))
	row.figure("%d notifications for %d final events; runs in flight at the steps: %s", events, len(got), strings.Join(steps, "; "))
}

// waitUntil polls cond every 50ms until it holds or timeout passes, and
// reports whether it held.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// maxOverlap is the most of runs' processes alive at once in [from, to].
func maxOverlap(runs []runRec, from, to time.Time) int {
	type edge struct {
		at time.Time
		d  int
	}
	var es []edge
	for _, r := range runs {
		s, e := r.Start, r.End
		if e.IsZero() {
			e = to
		}
		if s.Before(from) {
			s = from
		}
		if e.After(to) {
			e = to
		}
		if !e.After(s) {
			continue
		}
		es = append(es, edge{s, 1}, edge{e, -1})
	}
	sort.Slice(es, func(a, b int) bool {
		if es[a].at.Equal(es[b].at) {
			return es[a].d < es[b].d // an end before a start at the same instant
		}
		return es[a].at.Before(es[b].at)
	})
	n, m := 0, 0
	for _, e := range es {
		n += e.d
		m = max(m, n)
	}
	return m
}

// jobSlotSink fences per job and slot: the highest token accepted for each,
// a write with a lower token refused.
type jobSlotSink struct {
	high    map[string]int64
	refused int
}

func (s *jobSlotSink) key(r *runRec) string {
	job, _, _ := strings.Cut(r.RunID, "@")
	return job + "/" + strconv.Itoa(r.Slot)
}

func (s *jobSlotSink) write(r *runRec) bool {
	k := s.key(r)
	if r.Token < s.high[k] {
		s.refused++
		return false
	}
	s.high[k] = r.Token
	return true
}
func (s *jobSlotSink) gone(*runRec)      {}
func (s *jobSlotSink) maxEffective() int { return 0 }

// hookRecv is the notification receiver: it records every POST.
type hookRecv struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []scheduler.Notification
	keys  []string // Solocron-Delivery of each post
}

func newHookRecv(t *testing.T) *hookRecv {
	h := &hookRecv{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n scheduler.Notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notification body: %v: %s", err, body)
		}
		h.mu.Lock()
		h.posts = append(h.posts, n)
		h.keys = append(h.keys, r.Header.Get("Solocron-Delivery"))
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// byDelivery groups the posts by their Solocron-Delivery key.
func (h *hookRecv) byDelivery() map[string][]scheduler.Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]scheduler.Notification{}
	for i, p := range h.posts {
		out[h.keys[i]] = append(out[h.keys[i]], p)
	}
	return out
}

// deploy is scenario 17's world: one redis-server, replicas r1..r3 each with
// a table file of its own, the ledger with a per-job, per-slot sink, and the
// notification receiver.
type deploy struct {
	t        *testing.T
	dir      string
	prefix   string
	redis    *redistest.Server
	sink     *jobSlotSink
	led      *ledger
	hooks    *hookRecv
	replicas map[string]*replica
	// pausedSeen counts the wantPaused checks every replica passed.
	pausedSeen int
}

func newDeploy(t *testing.T) *deploy {
	d := &deploy{t: t, dir: t.TempDir(), prefix: "d" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		sink: &jobSlotSink{high: map[string]int64{}}, replicas: map[string]*replica{}}
	d.redis = redistest.Start(t)
	d.led = newLedger(t, d.sink)
	d.hooks = newHookRecv(t)
	return d
}

// tablePath writes table version v (v1 or v2) to name.yaml and returns its path.
func (d *deploy) tablePath(name, v string) string {
	job := func(jn, sleep, exit, v1, v2 string) string {
		fields := v1
		if v == "v2" {
			fields = v2
		}
		return fmt.Sprintf(`  - name: %s
    schedule: "@every %s"
    command: [%q, "-sleep", %q, "-write-every", "100ms", "-exit", %q]
%s`, jn, map[string]string{"busy": "1s", "waiter": "2s", "held": "1s"}[jn], faultjobBin, sleep, exit, fields)
	}
	text := fmt.Sprintf(`store:
  url: redis://%s/0
  key_prefix: %s
admin:
  rate_limit: 0 # the test polls the run records
pools:
  p: 4
notifications:
  - name: hook
    url: %s/
    on: [failed, timed_out, lease_lost, missed]
defaults:
  lease: 3s
  kill_grace: 100ms
  history_limit: 2000
  env: {FAULT_LEDGER: %q}
  notify: [hook]
jobs:
`, d.redis.Addr(), d.prefix, d.hooks.srv.URL, d.led.Addr()) +
		job("busy", "3500ms", "1",
			"    overlap: skip\n    concurrency: 1\n",
			"    overlap: skip\n    concurrency: 3\n    pool: p\n") +
		job("waiter", "2500ms", "0",
			"    overlap: wait\n    max_wait: 2s\n    concurrency: 1\n",
			"    overlap: wait\n    max_wait: 2s\n    concurrency: 2\n    pool: p\n") +
		job("held", "200ms", "0", "", "    pool: p\n")
	path := filepath.Join(d.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		d.t.Fatal(err)
	}
	return path
}

// refused counts the writes the sink refused.
func (d *deploy) refused() int {
	d.led.mu.Lock()
	defer d.led.mu.Unlock()
	return d.sink.refused
}

func (d *deploy) start(id, v string) *replica {
	r := startReplica(d.t, id, d.tablePath(id, v))
	d.replicas[id] = r
	return r
}

// restart stops id (SIGTERM, waiting for it to exit) and starts it again
// with table v.
func (d *deploy) restart(id, v string) {
	r := d.replicas[id]
	r.term()
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		d.t.Fatalf("%s did not exit within 15 s of SIGTERM", id)
	}
	if r.code != 0 {
		d.t.Errorf("%s exited %d on SIGTERM", id, r.code)
	}
	d.start(id, v).waitReady()
}

// reload rewrites id's table file with version v and sends it SIGHUP.
func (d *deploy) reload(id, v string) {
	r := d.replicas[id]
	before := len(r.logs("table reloaded"))
	d.tablePath(id, v)
	_ = r.cmd.Process.Signal(syscall.SIGHUP)
	testkit.WaitFor(d.t, 10*time.Second, id+" to reload", func() bool { return len(r.logs("table reloaded")) > before })
	if errs := r.logs("reload failed"); len(errs) > 0 {
		d.t.Fatalf("%s: %v", id, errs[0].Fields)
	}
}

// waitRun waits for a process of job.
func (d *deploy) waitRun(job string, timeout time.Duration) {
	d.t.Helper()
	testkit.WaitFor(d.t, timeout, "a run of "+job, func() bool {
		for _, r := range d.led.Runs() {
			if strings.HasPrefix(r.RunID, job+"@") {
				return true
			}
		}
		return false
	})
}

// waitInFlight waits for a process of job that is alive.
func (d *deploy) waitInFlight(job string, timeout time.Duration) {
	d.t.Helper()
	testkit.WaitFor(d.t, timeout, "a run of "+job+" in flight", func() bool {
		for _, r := range d.led.Runs() {
			if strings.HasPrefix(r.RunID, job+"@") && r.End.IsZero() {
				return true
			}
		}
		return false
	})
}

// api does one admin API request on replica id and decodes its answer.
func (d *deploy) api(id, method, path string, out any) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+d.replicas[id].admin+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s on %s: %v", method, path, id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		d.t.Fatalf("%s %s on %s: %s: %s", method, path, id, resp.Status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			d.t.Fatalf("%s %s on %s: %v: %s", method, path, id, err, body)
		}
	}
}

func (d *deploy) post(id, path string) { d.api(id, http.MethodPost, path, nil) }

// runs returns job's run records through r1's admin API.
func (d *deploy) runs(job string) []scheduler.Run {
	var l admin.RunList
	d.api("r1", http.MethodGet, "/api/v1/jobs/"+job+"/runs?limit=1000", &l)
	return l.Runs
}

// wantPaused checks, through every replica's admin API, that held is paused.
func (d *deploy) wantPaused(when string) {
	d.t.Helper()
	all := true
	for _, id := range []string{"r1", "r2", "r3"} {
		var st admin.JobStatus
		d.api(id, http.MethodGet, "/api/v1/jobs/held?limit=1", &st)
		if !st.Status.Paused {
			d.t.Errorf("%s: %s says held is not paused", when, id)
			all = false
		}
	}
	if all {
		d.pausedSeen++
	}
}
