package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
)

// prometheusBinary finds Prometheus (Debian's prometheus package). Without
// it the test skips, unless SOLOCRON_REQUIRE_PROMETHEUS=1 says it must run.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("SOLOCRON_REQUIRE_PROMETHEUS") == "1" {
			t.Fatalf("prometheus not found and SOLOCRON_REQUIRE_PROMETHEUS=1: %v", err)
		}
		t.Skip("prometheus not found (apt-get install prometheus); set SOLOCRON_REQUIRE_PROMETHEUS=1 to make this a failure")
	}
	return p
}

// scaledRules is the rules file with every for: and keep_firing_for: of
// N minutes cut to 3N seconds, so that a test of a few minutes sees them
// fire and resolve. Nothing else changes.
func scaledRules(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(\s+(?:for|keep_firing_for): )(\d+)m\s*$`)
	return re.ReplaceAllFunc(data, func(m []byte) []byte {
		s := re.FindSubmatch(m)
		n, _ := strconv.Atoi(string(s[2]))
		return []byte(fmt.Sprintf("%s%ds", s[1], 3*n))
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// daemon is a process the test started; killed in t.Cleanup if still up.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startDaemon(t *testing.T, log string, bin string, args ...string) *daemon {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d := &daemon{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.cmd.SysProcAttr = redistest.DieWithParent()
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(d.kill)
	return d
}

// signal sends sig (SIGSTOP freezes the process, SIGCONT resumes it,
// SIGHUP reloads a scheduler's table).
func (d *daemon) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// kill sends SIGKILL (a crash: no shutdown, no closing of runs) and waits.
func (d *daemon) kill() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Kill()
	<-d.done
}

// alert is one entry of Prometheus' /api/v1/alerts.
type alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"` // pending | firing
	ActiveAt time.Time         `json:"activeAt"`
}

func (a alert) key() string { return a.Labels["alertname"] + "/" + a.Labels["job"] }

// watcher polls Prometheus' alerts and keeps what it saw, so that the test
// can say an alert never fired (or never resolved) over a stretch of time.
type watcher struct {
	url  string
	mu   sync.Mutex
	now  map[string]alert
	seen []seenAlert
}

type seenAlert struct {
	at time.Time
	a  alert
}

func (w *watcher) poll(ctx context.Context) {
	for {
		if as, err := w.fetch(ctx); err == nil {
			m := map[string]alert{}
			now := time.Now()
			w.mu.Lock()
			for _, a := range as {
				m[a.key()] = a
				w.seen = append(w.seen, seenAlert{now, a})
			}
			w.now = m
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (w *watcher) fetch(ctx context.Context) ([]alert, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", w.url+"/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	return body.Data.Alerts, nil
}

// query returns the value of an instant query's single sample, or "".
func (w *watcher) query(t *testing.T, q string) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(w.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data.Result) != 1 {
		return ""
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	return v
}

// lastEvaluation returns when Prometheus last evaluated the rule group
// (zero if it cannot tell).
func (w *watcher) lastEvaluation(t *testing.T, group string) time.Time {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(w.url + "/api/v1/rules")
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Name           string    `json:"name"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return time.Time{}
	}
	for _, g := range body.Data.Groups {
		if g.Name == group {
			return g.LastEvaluation
		}
	}
	return time.Time{}
}

// current returns the alert name/job as last polled, if active.
func (w *watcher) current(key string) (alert, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.now[key]
	return a, ok
}

// waitFiring waits until the alert name/job fires.
func (w *watcher) waitFiring(t *testing.T, key string, limit time.Duration) alert {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if a, ok := w.current(key); ok && a.State == "firing" {
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("alert %s not firing after %v; active: %v", key, limit, w.active())
	return alert{}
}

func (w *watcher) active() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, a := range w.now {
		out = append(out, k+"="+a.State)
	}
	return out
}

// waitFiringSince waits until the alert name/job fires, active since from
// or later: not one that was already active before.
func (w *watcher) waitFiringSince(t *testing.T, key string, from time.Time, limit time.Duration) alert {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if a, ok := w.current(key); ok && a.State == "firing" && !a.ActiveAt.Before(from.Add(-time.Second)) {
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("alert %s not firing (active since %v or later) after %v; active: %v", key, from, limit, w.active())
	return alert{}
}

// since returns the alerts seen (pending or firing) at or after from.
func (w *watcher) since(from time.Time) []seenAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []seenAlert
	for _, s := range w.seen {
		if !s.at.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// The shipped rules in a real Prometheus, scraping three real replicas
// every second and evaluating every second, with the rules' for: and
// keep_firing_for: cut from minutes to 3 s per minute (scaledRules). A new
// cluster; one replica frozen (SIGSTOP) past its run's lease, then resumed;
// a pause and a resume; a reload (SIGHUP) of every replica with a changed
// table; one replica killed; every replica killed for a while, then one
// back. Which alerts fire, and which never do, is read from Prometheus'
// HTTP API. About 90 s.
func TestRulesInPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs three replicas and Prometheus for about 90 s")
	}
	testkit.Long(t) // about 90 s; TestRules (promtool test rules) runs by default
	prom := prometheusBinary(t)
	srv := redistest.Start(t)
	dir := t.TempDir()

	bin := filepath.Join(dir, "scheduler")
	build := exec.Command("go", "build", "-o", bin, "github.com/solocron/solocron/cmd/scheduler")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// starting_deadline 3s: a 2 s job is late after 2 × 2 + 3 = 7 s. The
	// lease is short next to that, as in production (a 30 s lease on a 2 s
	// job would let a frozen holder keep it from running for 15 periods,
	// and its lateness would be true).
	table := filepath.Join(dir, "solocron.yaml")
	// The reload removes gone and adds added.
	tableText := func(last string) string {
		return fmt.Sprintf(`store:
  url: redis://%s/0
defaults:
  starting_deadline: 3s
  lease: 2s
  kill_grace: 500ms
jobs:
  - {name: failing, schedule: "@every 2s", command: ["false"]}
  - {name: healthy, schedule: "@every 2s", command: ["true"]}
  - {name: held, schedule: "@every 2s", command: ["true"], paused: true}
  - {name: flaky, schedule: "@every 2s", command: ["false"], pause_after_failures: 3}
  - {name: toggled, schedule: "@every 2s", command: ["true"]}
  - {name: probe, schedule: "@every 5s", command: ["sleep", "4"]}   # a miss stays its latest run for seconds
  - {name: long, schedule: "@every 10s", command: ["sleep", "6"]}   # a lease_lost stays its latest end for seconds
  - {name: hourly, schedule: "@hourly", command: ["true"]}
  - %s
`, srv.Addr(), last)
	}
	writeTestFile(t, table, tableText(`{name: gone, schedule: "@every 2s", command: ["true"]}`))

	admins := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	replica := func(i int) *daemon {
		return startDaemon(t, filepath.Join(dir, fmt.Sprintf("r%d.log", i+1)), bin, "run", "--config", table,
			"--replica-id", fmt.Sprintf("r%d", i+1), "--admin-listen", admins[i])
	}

	rules := filepath.Join(dir, "solocron.rules.yaml")
	writeTestFile(t, rules, string(scaledRules(t)))
	var targets []string
	for _, a := range admins {
		targets = append(targets, `"`+a+`"`)
	}
	promCfg := filepath.Join(dir, "prometheus.yml")
	writeTestFile(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: solocron
    honor_labels: true
    static_configs:
      - targets: [%s]
        labels: {deployment: test}
`, rules, strings.Join(targets, ", ")))
	promAddr := freeAddr(t)
	startDaemon(t, filepath.Join(dir, "prometheus.log"), prom, "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)

	reps := []*daemon{replica(0), replica(1), replica(2)}
	w := &watcher{url: "http://" + promAddr}
	// The test watches from when Prometheus sees all three up.
	for deadline := time.Now().Add(60 * time.Second); w.query(t, `count(up{job="solocron"} == 1)`) != "3"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Prometheus does not see three replicas up after 60s")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.poll(ctx)
	start := time.Now()
	defer func() {
		if t.Failed() {
			for _, name := range []string{"prometheus.log", "r1.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					t.Logf("%s (tail):\n%s", name, tail(string(b), 3000))
				}
			}

		}
	}()

	// A new cluster: the failing job pages, the job pause_after_failures
	// paused says so (and does not page as failing).
	failing := w.waitFiring(t, "SolocronJobFailing/failing", 60*time.Second)
	w.waitFiring(t, "SolocronJobPausedAfterFailures/flaky", 30*time.Second)
	// "No replica up" may still be active from before the first scrapes
	// (no target known yet) for an evaluation or two; from here on it
	// must not be, until the outage.
	settled := time.Now()

	// One replica frozen (SIGSTOP) while it runs long, for longer than
	// its 2 s lease: the cluster closes that run lease_lost and
	// Prometheus cannot scrape the replica, two warnings; nothing critical
	// pages. Meanwhile a pause and a resume through the API: no lateness,
	// then or after.
	h := holder(t, admins, "long")
	api := "http://" + admins[(h+1)%len(admins)]
	paused := time.Now()
	post(t, api+"/api/v1/jobs/toggled/pause")
	reps[h].signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	w.waitFiringSince(t, "SolocronLeaseLost/long", frozen, 30*time.Second)
	w.waitFiringSince(t, "SolocronReplicaDown/", frozen, 30*time.Second)
	time.Sleep(time.Until(paused.Add(10 * time.Second))) // past toggled's 7 s late budget
	reps[h].signal(t, syscall.SIGCONT)
	post(t, api+"/api/v1/jobs/toggled/resume")
	resumed := time.Now()
	// Until its next heartbeat the thawed replica exports no job state (its
	// store reads stale: it exported what it read before the freeze until
	// the replicas stopped exporting job state they cannot refresh), and
	// the heartbeat after a freeze may lag: reloaded now, it could be the
	// last to export gone, with a last success older than gone's late
	// budget, and the rules would rightly call gone late. And what the freeze did to gone
	// (a run it held recorded missed) is for an alert active before gone
	// is removed. So the reload waits for the thawed replica's gauges to be
	// fresh (gone succeeds every 2 s), and for the rules to have read them.
	testkit.WaitFor(t, 30*time.Second, "the thawed replica's gauges fresh", func() bool {
		v, err := strconv.ParseFloat(w.query(t, fmt.Sprintf(`time() - solocron_job_last_run_timestamp_seconds{instance=%q, job="gone", outcome="succeeded"}`, admins[h])), 64)
		return err == nil && v < 5
	})
	fresh := time.Now()
	testkit.WaitFor(t, 30*time.Second, "the rules evaluated after the thawed replica's fresh scrape", func() bool {
		return w.lastEvaluation(t, "solocron.jobs").After(fresh)
	})

	// A reload (SIGHUP, every replica) of a table without gone and with a
	// new job, added: gone leaves the metrics, every replica runs the new
	// table, and added raises nothing (a new job has no missed runs).
	writeTestFile(t, table, tableText(`{name: added, schedule: "@every 2s", command: ["true"]}`))
	reloaded := time.Now()
	for _, r := range reps {
		r.signal(t, syscall.SIGHUP)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		gone := w.query(t, `count(solocron_job_interval_seconds{job="gone"})`)
		added := w.query(t, `count(solocron_job_interval_seconds{job="added"})`)
		tables := w.query(t, `count(count by (table) (solocron_replica_info))`)
		if gone == "" && added == "3" && tables == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the reload: replicas exporting gone %q, added %q; tables %q (want none, 3, 1)", gone, added, tables)
		}
	}
	time.Sleep(time.Until(resumed.Add(8 * time.Second)))
	for _, s := range w.since(paused) {
		if s.a.key() == "SolocronJobLate/toggled" {
			t.Errorf("%s (%s) during a pause or right after the resume", s.a.key(), s.a.State)
			break
		}
	}
	testkit.WaitFor(t, 30*time.Second, "SolocronReplicaDown to resolve once the frozen replica runs again", func() bool {
		_, ok := w.current("SolocronReplicaDown/")
		return !ok
	})

	// One replica of three killed: a warning, not "no replica up".
	killed := time.Now()
	reps[2].kill()
	w.waitFiringSince(t, "SolocronReplicaDown/", killed, 40*time.Second)

	// Every replica down: the failing job's alert does not resolve, and
	// "no replica up" pages.
	outage := time.Now()
	reps[0].kill()
	reps[1].kill()
	w.waitFiring(t, "SolocronNoReplicaUp/", 40*time.Second)
	time.Sleep(10 * time.Second) // two of probe's instants at least, one past its deadline

	// One back: it records the runs due meanwhile missed ("no replica was
	// up"), which RunsMissed reports, and the failing job's alert is still
	// the one that fired before the outage.
	back := time.Now()
	reps[0] = replica(0)
	w.waitFiring(t, "SolocronRunsMissed/probe", 60*time.Second)
	time.Sleep(3 * time.Second)
	if a, ok := w.current("SolocronJobFailing/failing"); !ok || a.State != "firing" || !a.ActiveAt.Equal(failing.ActiveAt) {
		t.Errorf("after the outage, SolocronJobFailing/failing is %+v (present %v); want still the one active since %v", a, ok, failing.ActiveAt)
	}
	cancel()

	// Over the whole test: the failing job's alert never resolved (it is in
	// every poll from its first firing on); nothing fired for the paused,
	// healthy or hourly jobs, nor for the paused-after-failures job as
	// failing; no miss before the outage (a new cluster has none).
	polls := map[time.Time]bool{}
	failingAt := map[time.Time]bool{}
	for _, s := range w.since(failing.ActiveAt) {
		polls[s.at] = true
		if s.a.key() == "SolocronJobFailing/failing" {
			failingAt[s.at] = true
		}
	}
	for at := range polls {
		if !failingAt[at] {
			t.Errorf("SolocronJobFailing/failing was not active at %v (outage from %v, back at %v): it resolved", at.Sub(start), outage.Sub(start), back.Sub(start))
			break
		}
	}
	// The rules judged lateness while the cluster was unseen (the healthy
	// job, 2 s, is late 7 s into the outage): gone's silence then is the
	// rules', not the test's timing.
	lateInOutage := false
	for _, s := range w.since(outage) {
		if s.a.key() == "SolocronJobLate/healthy" {
			lateInOutage = true
		}
	}
	if !lateInOutage {
		t.Errorf("SolocronJobLate/healthy never active during the outage (from %v, back at %v): the check that a removed job stays removed proves nothing", outage.Sub(start), back.Sub(start))
	}
	reported := map[string]bool{}
	for _, s := range w.since(start) {
		job, name := s.a.Labels["job"], s.a.Labels["alertname"]
		errorf := func(format string, args ...any) { // once per alert
			if !reported[s.a.key()] {
				reported[s.a.key()] = true
				t.Errorf(format, args...)
			}
		}
		switch {
		case job == "held" || job == "hourly":
			errorf("%s for job %s (%s) at %v", name, job, s.a.State, s.at.Sub(start))
		case job == "flaky" && name != "SolocronJobPausedAfterFailures":
			errorf("%s for the job pause_after_failures paused (%s) at %v", name, s.a.State, s.at.Sub(start))
		case name == "SolocronRunsMissed" && s.at.Before(frozen):
			errorf("%s for job %s on a new cluster (%s) at %v", name, job, s.a.State, s.at.Sub(start))
		case name == "SolocronNoReplicaUp" && s.at.After(settled) && s.at.Before(outage):
			errorf("%s (%s) at %v while replicas were up", name, s.a.State, s.at.Sub(start))
		case job == "added" && s.at.Before(outage):
			errorf("%s for job %s, new in the reload at %v (%s) at %v", name, job, reloaded.Sub(start), s.a.State, s.at.Sub(start))
		case job == "gone" && s.a.ActiveAt.After(reloaded):
			// No new alert for gone once removed, also through the outage,
			// while the rules keep the values of an unseen cluster: only
			// for the jobs seen at its last sighting, not one removed
			// before (it would be late, like every job then). (One active
			// before the reload may last its keep_firing_for.)
			errorf("%s for job %s, removed by the reload at %v (%s) at %v (outage from %v, back at %v)", name, job, reloaded.Sub(start), s.a.State, s.at.Sub(start), outage.Sub(start), back.Sub(start))
		case s.a.Labels["severity"] == "critical" && s.at.After(frozen) && s.at.Before(outage) && s.a.key() != "SolocronJobFailing/failing" &&
			!(s.a.key() == "SolocronJobLate/probe" && s.a.State == "pending"):
			// (probe, every 5 s with 4 s runs, is there for RunsMissed. When
			// the frozen replica happens to hold its run too, its next
			// success comes 10 s after the last plus a loaded machine's
			// delays in the close, the scrape and the evaluation: at its
			// 13 s budget, as long's was with 8 s runs, and the alert may be
			// pending for a moment (CI saw it once, 2026-11-26, at load ~5).
			// `for: 1m` keeps it from paging; long, whose holder the test
			// freezes on purpose, is the job that proves the budget absorbs
			// one lost run, and is still checked.)
			errorf("%s for job %q (%s, critical) at %v: a frozen replica, a reload or one replica down pages", name, job, s.a.State, s.at.Sub(start))
		}
		if s.a.Labels["deployment"] != "test" && s.a.Labels["alertname"] != "SolocronNoReplicaUp" {
			errorf("%s for job %s without the deployment label: %v", name, job, s.a.Labels)
		}
	}
	t.Logf("took %v", time.Since(start).Round(time.Second))
}

// holder returns the index of the replica running job, in a run that
// started less than 2 s ago (long lasts 6 s: it is still running, for
// longer than its 2 s lease, when the test freezes its replica). Not
// longer: the frozen run is lost, so long's next success comes a period
// plus a run after the last (10 + 6 s), and it must stay inside long's
// late budget (2 × 10 + 3 s) with room for a loaded machine's delays in
// the close, the heartbeat, the scrape and the evaluation (with 8 s runs
// that room was about 1 s, and the test failed now and then with
// SolocronJobLate/long pending).
func holder(t *testing.T, admins []string, job string) int {
	t.Helper()
	var found int
	asked := 0
	testkit.WaitFor(t, 20*time.Second, "a replica running "+job, func() bool {
		// Slowly, and each replica in turn: the admin API limits the rate
		// of each client.
		time.Sleep(250 * time.Millisecond)
		asked++
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + admins[asked%len(admins)] + "/api/v1/jobs/" + job)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Status struct {
				Running []struct {
					Replica   string    `json:"replica"`
					StartedAt time.Time `json:"started_at"`
				} `json:"running"`
			} `json:"status"`
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil {
			return false
		}
		for _, r := range body.Status.Running {
			i, err := strconv.Atoi(strings.TrimPrefix(r.Replica, "r"))
			if err == nil && i >= 1 && i <= len(admins) && !r.StartedAt.IsZero() && time.Since(r.StartedAt) < 2*time.Second {
				found = i - 1
				return true
			}
		}
		return false
	})
	return found
}

func post(t *testing.T, to string) {
	t.Helper()
	c := http.Client{Timeout: 20 * time.Second}
	resp, err := c.Post(to, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", to, resp.Status)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
