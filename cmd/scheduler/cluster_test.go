package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// Three replicas on one machine share one table file and one redis-server,
// each with its own replica id and admin port; the subtests run in order
// against that one cluster, the last one killing the redis-server.
func TestCluster(t *testing.T) {
	t.Parallel()
	tr := &transcript{}
	pw := "pw" + randomHex(t)
	token := "tok" + randomHex(t)
	// A password in the store URL (an ACL user) and an admin token: neither
	// may show in any log line, CLI output or API answer.
	srv := redistest.Start(t, "--user", "solo", "on", ">"+pw, "~*", "&*", "+@all")
	dir := t.TempDir()
	tickLedger := filepath.Join(dir, "tick.ledger")
	manualLedger := filepath.Join(dir, "manual.ledger")
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://solo:%s@%s/0
  key_prefix: e2e
admin:
  token: ${TEST_ADMIN_TOKEN}
jobs:
  - name: tick
    schedule: "@every 1s"
    concurrency: 10         # a run slowed down by a loaded machine is no reason to skip the next:
                            # under -race its supervisor alone starts in ~1.2 s, 3.6 s under CI's load
    command: %s
  - name: manual            # runs only when triggered
    schedule: "@yearly"
    lease: 6s               # renewed every (6s - kill_grace - 0.5s)/3 = 1.5s: the run below renews once
    kill_grace: 1s          # at most half the lease
    command: %s
`, pw, srv.Addr(), ledgerCommand(tickLedger, ""), ledgerCommand(manualLedger, "; sleep 2.5")))
	cenv := env("TEST_ADMIN_TOKEN=" + token)
	cli := func(t *testing.T, code int, args ...string) result {
		t.Helper()
		r := runCLI(t, tr, cenv, append(args, "--config", table)...)
		r.want(t, code, args...)
		return r
	}

	reps := startReplicas(t, tr, cenv, table, "r1", "r2", "r3")

	t.Run("startup_log", func(t *testing.T) {
		recs := reps[0].findLogs("solocron starting")
		if len(recs) != 1 {
			t.Fatalf("want one start record, got %v", recs)
		}
		st, _ := recs[0]["store"].(map[string]any)
		if u, _ := st["url"].(string); !strings.Contains(u, "solo:xxxxx@"+srv.Addr()) {
			t.Errorf("the store is not logged with its password redacted: %v", recs[0])
		}
		if recs[0]["replica"] != "r1" || recs[0]["admin_token_set"] != true {
			t.Errorf("start record: %v", recs[0])
		}
		if w := reps[0].findLogs("EVICT"); len(w) > 0 {
			t.Errorf("eviction warning with maxmemory-policy noeviction: %v", w)
		}
		if w := reps[0].findLogs("EMBEDDED"); len(w) > 0 {
			t.Errorf("embedded-store warning with a store.url: %v", w)
		}
	})

	var manualID string
	t.Run("trigger_wait", func(t *testing.T) {
		r := cli(t, 0, "trigger", "manual", "--wait", "30s")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "manual@manual-") {
			t.Fatalf("trigger output:\n%s", r.stdout)
		}
		manualID = lines[0]
		m := regexp.MustCompile(`^` + regexp.QuoteMeta(manualID) + `: succeeded on (r\d) in \S+ \(fencing token \d+, 1 attempt\)$`).FindStringSubmatch(lines[1])
		if m == nil {
			t.Fatalf("trigger --wait does not report who ran it: %q", lines[1])
		}
		got := readLedger(t, manualLedger)
		if len(got) != 1 || got[0].runID != manualID || got[0].replica != m[1] {
			t.Fatalf("manual ledger %v, want one run of %s on %s", got, manualID, m[1])
		}
	})

	t.Run("exactly_once", func(t *testing.T) {
		from := time.Now().Truncate(time.Second).Add(time.Second)
		to := from.Add(5 * time.Second)
		testkit.WaitFor(t, 40*time.Second, "tick runs past the window", func() bool {
			for _, l := range readLedger(t, tickLedger) {
				if at, ok := scheduledAt(l.runID); ok && at.After(to) {
					return true
				}
			}
			return false
		})
		lines := readLedger(t, tickLedger)
		count := map[string]int{}
		runners := map[string]bool{}
		for _, l := range lines {
			count[l.runID]++
			runners[l.replica] = true
			if count[l.runID] == 2 {
				t.Errorf("run %s started more than once", l.runID)
			}
		}
		for at := from; !at.After(to); at = at.Add(time.Second) {
			id := "tick@" + at.UTC().Format(time.RFC3339)
			if count[id] != 1 {
				t.Errorf("run %s started %d times, want exactly once", id, count[id])
			}
		}
		// Every start got its own fencing token. (They rise in the order
		// the claims reached Redis, which is the order of the instants
		// unless a claim was delayed by more than a second.)
		tokens := map[int64]string{}
		for _, l := range lines {
			if other, dup := tokens[l.token]; dup {
				t.Errorf("runs %s and %s got the same fencing token %d", other, l.runID, l.token)
			}
			tokens[l.token] = l.runID
		}
		t.Logf("%d runs over %d replicas %v", len(lines), len(runners), runners)
		// The manual run, seconds later, still ran once.
		if got := readLedger(t, manualLedger); len(got) != 1 {
			t.Errorf("manual ledger %v, want one run", got)
		}
	})

	t.Run("pause_resume", func(t *testing.T) {
		r := cli(t, 0, "pause", "tick", "--reason", "load test INC-7")
		if !strings.Contains(r.stdout, "tick: paused") {
			t.Errorf("pause output: %q", r.stdout)
		}
		pausedAt := time.Now()
		testkit.WaitFor(t, 30*time.Second, "3 runs recorded skipped_paused", func() bool {
			code, body := httpDo(t, tr, "GET", reps[1].url("/api/v1/jobs/tick/runs?limit=10"), token)
			var rl struct{ Runs []scheduler.Run }
			if code != 200 || json.Unmarshal([]byte(body), &rl) != nil {
				return false
			}
			n := 0
			for _, run := range rl.Runs {
				if run.Outcome == scheduler.SkippedPaused && run.ScheduledAt.After(pausedAt) {
					n++
				}
			}
			return n >= 3
		})

		var st struct {
			Job           string
			Paused        bool
			PausedInTable bool `json:"paused_in_table"`
			History       []scheduler.Run
		}
		r = cli(t, 0, "status", "tick", "--json", "--limit", "2")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		if st.Job != "tick" || !st.Paused || st.PausedInTable || len(st.History) != 2 || st.History[0].Outcome != scheduler.SkippedPaused {
			t.Errorf("status --json while paused: %s", r.stdout)
		}
		if r = cli(t, 0, "status", "tick"); !regexp.MustCompile(`(?m)^paused: +yes$`).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^paused why: +load test INC-7 \(paused by cli \S+\)$`).MatchString(r.stdout) {
			t.Errorf("status while paused:\n%s", r.stdout)
		}

		resumedAt := time.Now()
		cli(t, 0, "resume", "tick")
		testkit.WaitFor(t, 30*time.Second, "a tick run after resume", func() bool {
			for _, l := range readLedger(t, tickLedger) {
				if at, _ := scheduledAt(l.runID); at.After(resumedAt) {
					return true
				}
			}
			return false
		})
		// Claims for instants after the pause returned found the job
		// paused; a claim running late may still have started a run due a
		// little before the resume. (Half a second of margin after the
		// pause for a timer firing a little early.)
		for _, l := range readLedger(t, tickLedger) {
			if at, _ := scheduledAt(l.runID); at.After(pausedAt.Add(500*time.Millisecond)) && at.Before(resumedAt.Add(-time.Second)) {
				t.Errorf("run %s started while the job was paused (%s to %s)", l.runID, pausedAt.Format(time.StampMilli), resumedAt.Format(time.StampMilli))
			}
		}
		r = cli(t, 0, "status", "--json")
		var all []struct {
			Job    string
			Paused bool
		}
		if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 2 || all[0].Job != "tick" || all[0].Paused || all[1].Job != "manual" {
			t.Errorf("status --json after resume (%v):\n%s", err, r.stdout)
		}
	})

	t.Run("status_history_text", func(t *testing.T) {
		r := cli(t, 0, "status")
		if !regexp.MustCompile(`(?m)^JOB +PAUSED +RUNNING +WAITING +LAST RUN +OUTCOME +REPLICA +FINISHED +DURATION$`).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^tick +no +\d+ +0 +tick@\S+ +\S+ +r\d`).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^manual +no +0 +0 +`+regexp.QuoteMeta(manualID)+` +succeeded +r\d +\S+ +\d`).MatchString(r.stdout) {
			t.Errorf("status:\n%s", r.stdout)
		}
		r = cli(t, 0, "status", "manual")
		for _, want := range []string{`(?m)^job: +manual$`, `(?m)^paused: +no$`, `(?m)^running: +0$`, `(?m)^last runs: +1$`,
			`(?m)^  RUN +KIND +OUTCOME +REPLICA +STARTED +DURATION +ATTEMPTS +TOKEN +ERROR$`,
			`(?m)^  ` + regexp.QuoteMeta(manualID) + ` +manual +succeeded +r\d +\S+Z +\d+(\.\d+)?s +1 +\d+ +-$`} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("status manual does not match %s:\n%s", want, r.stdout)
			}
		}
		r = cli(t, 0, "history", "tick", "--limit", "3") // a flag after the job
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "RUN ") {
			t.Fatalf("history --limit 3:\n%s", r.stdout)
		}
		for _, l := range lines[1:] {
			if !regexp.MustCompile(`^tick@\S+Z +scheduled +(succeeded|skipped_paused) +r\d`).MatchString(l) {
				t.Errorf("history line %q", l)
			}
		}
		// Newest first means the latest to end first: tick runs up to ten
		// at once, so an earlier instant may end after a later one.
		r = cli(t, 0, "history", "--json", "--limit", "2", "tick")
		var runs []scheduler.Run
		if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 2 || runs[0].FinishedAt.Before(runs[1].FinishedAt) {
			t.Errorf("history --json (%v):\n%s", err, r.stdout)
		}
		r = cli(t, 2, "history", "nope")
		if !strings.Contains(r.stderr, `no job "nope"`) {
			t.Errorf("history of an unknown job: %q", r.stderr)
		}
		cli(t, 2, "trigger", "nope")
		cli(t, 2, "pause", "nope")
		cli(t, 2, "history")
		cli(t, 2, "status", "tick", "manual")
	})

	t.Run("admin_api", func(t *testing.T) {
		r2 := reps[1]
		if code, _ := httpDo(t, tr, "GET", r2.url("/healthz"), ""); code != 200 {
			t.Errorf("/healthz: %d", code)
		}
		code, body := httpDo(t, tr, "GET", r2.url("/api/v1/jobs"), token)
		var list struct {
			Replica string
			Jobs    []struct {
				Name, Kind, Schedule string
				Paused               *bool
			}
		}
		if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || list.Replica != "r2" || len(list.Jobs) != 2 ||
			list.Jobs[1].Name != "tick" || list.Jobs[1].Kind != "command" || list.Jobs[1].Paused == nil || *list.Jobs[1].Paused { // name order
			t.Errorf("/api/v1/jobs: %d %s", code, body)
		}
		if strings.Contains(body, "ledger") || strings.Contains(body, "SOLOCRON_RUN_ID") {
			t.Errorf("/api/v1/jobs shows the command line: %s", body)
		}
		if code, body = httpDo(t, tr, "GET", r2.url("/api/v1/jobs/nope"), token); code != 404 || !strings.Contains(body, `"error"`) {
			t.Errorf("unknown job: %d %s", code, body)
		}
		if code, _ = httpDo(t, tr, "GET", r2.url("/api/v1/jobs/manual"), token); code != 200 {
			t.Errorf("/api/v1/jobs/manual: %d", code)
		}
		trigger := r2.url("/api/v1/jobs/manual/trigger")
		if code, _ = httpDo(t, tr, "POST", trigger, ""); code != 401 {
			t.Errorf("trigger without a token: %d, want 401", code)
		}
		if code, _ = httpDo(t, tr, "POST", trigger, "wrong"+token); code != 403 {
			t.Errorf("trigger with a wrong token: %d, want 403", code)
		}
		if code, _ = httpDo(t, tr, "GET", trigger, token); code != 405 {
			t.Errorf("GET trigger: %d, want 405", code)
		}
		if got := readLedger(t, manualLedger); len(got) != 1 {
			t.Fatalf("a refused trigger ran the job: %v", got)
		}
		code, body = httpDo(t, tr, "POST", trigger, token)
		var tg struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(body), &tg); code != 202 || err != nil || !strings.HasPrefix(tg.RunID, "manual@manual-") {
			t.Fatalf("trigger: %d %s", code, body)
		}
		testkit.WaitFor(t, 30*time.Second, "the triggered run", func() bool { return len(readLedger(t, manualLedger)) >= 2 })
		if got := readLedger(t, manualLedger); len(got) != 2 || got[1].runID != tg.RunID {
			t.Errorf("manual ledger %v, want a second run %s", got, tg.RunID)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		var all []sample
		for _, r := range reps {
			code, body := httpDo(t, tr, "GET", r.url("/metrics"), "")
			if code != 200 {
				t.Fatalf("%s /metrics: %d", r.id, code)
			}
			ms := parseMetrics(t, body)
			if _, ok := sum(ms, "target_info", map[string]string{"service_name": "solocron", "service_instance_id": r.id}); !ok {
				t.Errorf("%s: no target_info with service_name solocron and its replica id", r.id)
			}
			if _, ok := sum(ms, "go_goroutines", nil); !ok {
				t.Errorf("%s: no Go runtime metrics", r.id)
			}
			all = append(all, ms...)
		}
		succeeded, _ := sum(all, "solocron_runs_total", map[string]string{"job": "tick", "outcome": "succeeded"})
		started, _ := sum(all, "solocron_runs_total", map[string]string{"job": "tick", "outcome": "started"})
		paused, _ := sum(all, "solocron_runs_total", map[string]string{"job": "tick", "outcome": "skipped_paused"})
		ledger := float64(len(readLedger(t, tickLedger)))
		// Up to tick's concurrency (10) may be in flight: started, not yet succeeded.
		if succeeded < 8 || succeeded > ledger || started < succeeded || started > succeeded+10 || paused < 3 {
			t.Errorf("solocron_runs_total{job=tick}: succeeded %v, started %v, skipped_paused %v; the ledger has %v runs", succeeded, started, paused, ledger)
		}
		// Each replica's scrape is a snapshot, but pairs of instruments
		// recorded one after the other may differ by a run in flight.
		near := func(a, b float64) bool { return a >= b-3 && a <= b+3 }
		won, _ := sum(all, "solocron_claims_total", map[string]string{"job": "tick", "result": "won"})
		taken, _ := sum(all, "solocron_claims_total", map[string]string{"job": "tick", "result": "taken"})
		if !near(won, started) || taken == 0 {
			t.Errorf("solocron_claims_total{job=tick}: won %v (started %v), taken %v: every run is won once and found taken by the others", won, started, taken)
		}
		n, _ := sum(all, "solocron_run_duration_seconds_count", map[string]string{"job": "tick", "outcome": "succeeded"})
		s, _ := sum(all, "solocron_run_duration_seconds_sum", map[string]string{"job": "tick", "outcome": "succeeded"})
		if !near(n, succeeded) || s <= 0 || s/n > 5 {
			t.Errorf("solocron_run_duration_seconds{job=tick}: count %v sum %v (succeeded %v)", n, s, succeeded)
		}
		n, _ = sum(all, "solocron_dispatch_delay_seconds_count", map[string]string{"job": "tick"})
		s, _ = sum(all, "solocron_dispatch_delay_seconds_sum", map[string]string{"job": "tick"})
		if !near(n, started) || s < 0 || s/n > 2 {
			t.Errorf("solocron_dispatch_delay_seconds{job=tick}: count %v sum %v (started %v)", n, s, started)
		}
		if n, _ = sum(all, "solocron_claim_duration_seconds_count", nil); n < won+taken {
			t.Errorf("solocron_claim_duration_seconds_count %v < claims %v", n, won+taken)
		}
		if n, _ = sum(all, "solocron_lease_renewals_total", map[string]string{"result": "ok"}); n < 1 {
			t.Errorf("solocron_lease_renewals_total{result=ok} = %v; the manual runs outlived a third of their lease", n)
		}
		if v, ok := sum(all, "solocron_running", map[string]string{"job": "tick"}); !ok || v < 0 || v > 10 {
			t.Errorf("solocron_running{job=tick} = %v (found %v)", v, ok)
		}
		for _, m := range all {
			if strings.HasPrefix(m.name, "solocron_") && (m.labels["run_id"] != "" || strings.Contains(fmt.Sprint(m.labels), "@")) {
				t.Errorf("high-cardinality label on %s: %v", m.name, m.labels)
				break
			}
		}
	})

	t.Run("readyz_after_redis_dies", func(t *testing.T) {
		srv.Kill()
		testkit.WaitFor(t, 30*time.Second, "r1 /readyz 503", func() bool { return testkit.HTTPStatus(reps[0].url("/readyz")) == 503 })
		code, body := httpDo(t, tr, "GET", reps[0].url("/readyz"), "")
		if code != 503 || !strings.Contains(body, "store") {
			t.Errorf("/readyz with the store down: %d %s", code, body)
		}
		if code := testkit.HTTPStatus(reps[0].url("/healthz")); code != 200 {
			t.Errorf("/healthz with the store down: %d, want 200", code)
		}
		if code, _ := httpDo(t, tr, "GET", reps[0].url("/api/v1/jobs"), token); code != 503 {
			t.Errorf("/api/v1/jobs with the store down: %d, want 503", code)
		}
		r := cli(t, 1, "status")
		if !strings.Contains(r.stderr, "store") {
			t.Errorf("status with the store down: %q", r.stderr)
		}
	})

	for _, r := range reps {
		r.signal(syscall.SIGTERM)
	}
	for _, r := range reps {
		if code := r.wait(60 * time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0", r.id, code)
		}
	}

	all := tr.String()
	for name, secret := range map[string]string{"store password": pw, "admin token": token} {
		if strings.Contains(all, secret) {
			i := strings.Index(all, secret)
			t.Errorf("the %s appears in the output: ...%s...", name, all[max(0, i-200):min(len(all), i+100)])
		}
	}
	if !strings.Contains(all, "xxxxx") {
		t.Error("the redacted store URL appears nowhere: was the store logged at all?")
	}
}
