package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// runsAfter reports whether the ledger at path has a run scheduled after t.
func runsAfter(t *testing.T, path string, after time.Time) bool {
	t.Helper()
	for _, l := range readLedger(t, path) {
		if at, ok := scheduledAt(l.runID); ok && at.After(after) {
			return true
		}
	}
	return false
}

// SIGHUP reloads the table: a good file puts a new job in force; a bad one
// is reported problem by problem and the old table keeps running.
func TestReload(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	dir := t.TempDir()
	ledgerA, ledgerB := filepath.Join(dir, "a.ledger"), filepath.Join(dir, "b.ledger")
	table := filepath.Join(dir, "solocron.yaml")
	head := fmt.Sprintf("store: {url: \"redis://%s/0\", key_prefix: %%s}\njobs:\n", srv.Addr())
	jobA := fmt.Sprintf("  - {name: a, schedule: \"@every 1s\", concurrency: 3, command: %s}\n", ledgerCommand(ledgerA, ""))
	jobB := fmt.Sprintf("  - {name: b, schedule: \"@every 1s\", concurrency: 3, command: %s}\n", ledgerCommand(ledgerB, ""))
	writeFile(t, table, fmt.Sprintf(head, "one")+jobA)

	p := start(t, nil, "replica", env(), "run", "--config", table, "--replica-id", "solo", "--log-format", "json")
	testkit.WaitFor(t, 60*time.Second, "a run of a", func() bool { return len(readLedger(t, ledgerA)) > 0 })

	// maxmemory-policy allkeys-lru can evict the run records.
	w := p.waitLog(30*time.Second, "EVICT", 1)
	if w[0]["level"] != "WARN" || w[0]["maxmemory_policy"] != "allkeys-lru" {
		t.Errorf("eviction warning: %v", w[0])
	}

	// A good file with a new job, and a changed key prefix, which needs a
	// restart.
	writeFile(t, table, fmt.Sprintf(head, "two")+jobA+jobB)
	p.signal(syscall.SIGHUP)
	rec := p.waitLog(30*time.Second, "table reloaded", 1)[0]
	if fmt.Sprint(rec["added"]) != "[b]" || fmt.Sprint(rec["removed"]) != "[]" || rec["jobs"] != 2.0 {
		t.Errorf("reload record: %v", rec)
	}
	if w := p.findLogs("take effect only after a restart"); len(w) != 1 || fmt.Sprint(w[0]["sections"]) != "[store]" {
		t.Errorf("no warning naming the store section: %v", w)
	}
	testkit.WaitFor(t, 30*time.Second, "a run of the new job b", func() bool { return len(readLedger(t, ledgerB)) > 0 })
	// The old prefix stays in force until a restart.
	if ids, _ := srv.Client(t, nil).Keys(t.Context(), "two:*").Result(); len(ids) > 0 {
		t.Errorf("keys under the new prefix before a restart: %v", ids)
	}

	// A bad file: three problems (a jitter longer than the schedule's
	// interval among them). All are logged, nothing changes.
	writeFile(t, table, fmt.Sprintf(head, "two")+jobA+jobB+"  - {name: c, schedule: \"61 * * * *\", command: [\"true\"]}\n  - {name: a, schedule: \"@hourly\", command: [\"true\"]}\n"+
		"  - {name: d, schedule: \"@every 1s\", jitter: 1m, command: [\"true\"]}\n")
	p.signal(syscall.SIGHUP)
	failed := p.waitLog(30*time.Second, "reload failed", 1)[0]
	badAt := time.Now()
	if failed["problems"] != 3.0 {
		t.Errorf("reload failure record: %v", failed)
	}
	var problems []string
	for _, r := range p.findLogs("reload: invalid job table") {
		problems = append(problems, fmt.Sprint(r["problem"]))
	}
	if len(problems) != 3 || !strings.HasPrefix(problems[0], table+":5:") || !strings.Contains(problems[0], "jobs[2].schedule") ||
		!strings.HasPrefix(problems[1], table+":6:") || !strings.Contains(problems[1], "jobs[3].name") ||
		!strings.HasPrefix(problems[2], table+":7:") || !strings.Contains(problems[2], "jobs[4].jitter: 1m0s is longer than the schedule's interval, 1s") {
		t.Errorf("logged problems:\n%s", strings.Join(problems, "\n"))
	}
	testkit.WaitFor(t, 30*time.Second, "runs of a and b after the bad reload", func() bool {
		return runsAfter(t, ledgerA, badAt) && runsAfter(t, ledgerB, badAt)
	})
	if n := len(p.findLogs("table reloaded")); n != 1 {
		t.Errorf("the bad file was reloaded (%d reload records)", n)
	}
	for _, r := range p.records() {
		checkNoNulls(t, fmt.Sprint(r["msg"]), r)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}

// otlpSink is a fake OTLP/HTTP collector that keeps the trace requests.
type otlpSink struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Method == "POST" {
			s.mu.Lock()
			s.bodies = append(s.bodies, b)
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *otlpSink) all() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Join(s.bodies, nil)
}

// SIGTERM drains: a run in flight finishes within the grace period and the
// process exits 0; past a short grace, a run is cancelled and recorded
// interrupted. Spans are flushed to the OTLP collector on the way out.
func TestShutdown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		sleep   string
		grace   string
		outcome scheduler.Outcome
		tracing bool
	}{
		{"finishes_within_grace", "2", "30s", scheduler.Succeeded, true},
		{"interrupted_after_grace", "60", "1s", scheduler.Interrupted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			table := filepath.Join(dir, "solocron.yaml")
			writeFile(t, table, fmt.Sprintf(`
store: {url: "redis://%s/0", key_prefix: %s}
jobs:
  - name: slow
    schedule: "@yearly"
    command: ["sh", "-c", "touch %s; sleep %s; echo finished"]
`, srv.Addr(), tc.name, started, tc.sleep))
			sink := newOTLPSink(t)
			e := env("OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL)
			if !tc.tracing {
				e = append(e, "OTEL_TRACES_EXPORTER=none")
			}
			p := start(t, nil, "replica", e, "run", "--config", table, "--replica-id", "drainer", "--shutdown-grace", tc.grace, "--log-format", "json")
			p.waitLog(60*time.Second, "replica starting", 1)
			runCLI(t, nil, env(), "trigger", "slow", "--wait", "0", "--config", table).want(t, 0, "trigger")
			testkit.WaitFor(t, 60*time.Second, "the job to start", func() bool { _, err := os.Stat(started); return err == nil })

			p.signal(syscall.SIGTERM)
			sent := time.Now()
			if code := p.wait(60 * time.Second); code != 0 {
				t.Errorf("exit %d after SIGTERM, want 0", code)
			}
			took := time.Since(sent)
			r := runCLI(t, nil, env(), "history", "slow", "--json", "--config", table)
			r.want(t, 0, "history")
			var runs []scheduler.Run
			if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
				t.Fatalf("history (%v):\n%s", err, r.stdout)
			}
			if runs[0].Outcome != tc.outcome || runs[0].Replica != "drainer" {
				t.Errorf("run record %+v, want outcome %s", runs[0], tc.outcome)
			}
			switch tc.outcome {
			case scheduler.Succeeded:
				if !strings.Contains(runs[0].Output, "finished") {
					t.Errorf("the drained run did not finish: output %q", runs[0].Output)
				}
			case scheduler.Interrupted:
				if took > 30*time.Second {
					t.Errorf("shutdown took %s with a 1s grace", took)
				}
				if len(p.findLogs("shutdown grace period over")) != 1 {
					t.Error("no log of the grace period ending")
				}
			}

			spans := sink.all()
			if !tc.tracing {
				if len(spans) > 0 {
					t.Errorf("OTEL_TRACES_EXPORTER=none, yet %d bytes of spans were sent", len(spans))
				}
				return
			}
			// OTLP protobuf carries strings as they are.
			for _, want := range []string{"solocron.run", "solocron.claim", "service.name", "solocron", "service.instance.id", "drainer", runs[0].ID} {
				if !bytes.Contains(spans, []byte(want)) {
					t.Errorf("the exported spans lack %q", want)
				}
			}
		})
	}
}

// run refuses an admin API open to the network without a token, before it
// touches anything.
func TestRunRefusesPublicAdminWithoutToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open.yaml")
	writeFile(t, open, "admin: {listen: \"0.0.0.0:9\"}\njobs: []\n")
	local := filepath.Join(dir, "local.yaml")
	writeFile(t, local, "admin: {listen: \"127.0.0.1:9\"}\njobs: []\n")
	for _, args := range [][]string{
		{"--config", open},
		{"--config", local, "--admin-listen", ":9"},
		{"--config", local, "--admin-listen", "[::]:9"},
		{"--config", local, "--admin-listen", "example.com:9"},
	} {
		r := runCLI(t, nil, env(), append([]string{"run"}, args...)...)
		r.want(t, 2, args...)
		if !strings.Contains(r.stderr, "refusing to start") {
			t.Errorf("run %v: %q", args, r.stderr)
		}
	}
	r := runCLI(t, nil, env(), "validate", "--config", open)
	r.want(t, 0, "validate")
	if !strings.Contains(r.stderr, "will refuse to start") {
		t.Errorf("validate does not warn about the open admin address: %q", r.stderr)
	}
}

// run with a bad table logs every problem and exits 2.
func TestRunBadTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "bad.yaml")
	writeFile(t, table, "jobs:\n  - {name: a, schedule: \"@every 0s\", command: [\"true\"]}\n  - {name: b, schedule: \"@daily\", func: nope}\n")
	r := runCLI(t, nil, env(), "run", "--config", table)
	r.want(t, 2, "run")
	if n := strings.Count(r.stderr, "invalid job table"); n != 2 || !strings.Contains(r.stderr, "jobs[0].schedule") || !strings.Contains(r.stderr, "jobs[1].func") {
		t.Errorf("want both problems logged:\n%s", r.stderr)
	}
	r = runCLI(t, nil, env(), "run", "--config", filepath.Join(dir, "missing.yaml"))
	r.want(t, 2, "run")
	if !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file: %q", r.stderr)
	}
}

// A replica id with a control character (a newline, an escape sequence)
// would break or forge lines of status tables and logs: run refuses it,
// wherever it came from, before it touches the store.
func TestRunRefusesControlCharactersInReplicaID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "t.yaml")
	writeFile(t, table, "jobs: []\n")
	for _, tc := range []struct {
		environ []string
		args    []string
	}{
		{env(), []string{"--replica-id", "web-1\nlevel=ERROR"}},
		{env("SOLOCRON_REPLICA_ID=web-1\x1b[31m"), nil},
	} {
		r := runCLI(t, nil, tc.environ, append([]string{"run", "--config", table}, tc.args...)...)
		r.want(t, 2, "run")
		if !strings.Contains(r.stderr, "invalid replica id") || !strings.Contains(r.stderr, "control characters") {
			t.Errorf("run %q: %q", tc.args, r.stderr)
		}
	}
	// In the file it is a problem of the table, at its line.
	writeFile(t, table, "replica_id: \"web-1\\tx\"\njobs: []\n")
	r := runCLI(t, nil, env(), "validate", "--config", table)
	r.want(t, 2, "validate")
	if want := table + ":1:13: replica_id: must not contain control characters"; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("validate: %q, want it to start with %q", r.stderr, want)
	}
}

// An admin API without a token is open to every local user, loopback or
// not: run says so, and says nothing of it with a token.
func TestRunWarnsOfAnAdminAPIWithoutToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "t.yaml")
	writeFile(t, table, "admin: {token: \"${TOK}\"}\njobs: []\n")
	const warning = "the admin API has no token"
	for _, tc := range []struct {
		tok  string
		warn bool
	}{{"", true}, {"a-long-random-token", false}} {
		// ${TOK} set to "" leaves admin.token unset.
		p := start(t, nil, "admin", env("TOK="+tc.tok, "STATE_DIRECTORY="+t.TempDir()), "run", "--config", table,
			"--admin-listen", freeAddr(t), "--log-format", "json")
		l := p.waitLog(60*time.Second, "admin API and console listening", 1)[0]
		if got := len(p.findLogs(warning)) > 0; got != tc.warn {
			t.Errorf("token %q: warned %v, want %v", tc.tok, got, tc.warn)
		}
		// No allowed_hosts: an empty list, as the text format shows it,
		// not null. And no start-up record holds a null.
		if h, ok := l["allowed_hosts"].([]any); !ok || len(h) != 0 {
			t.Errorf("allowed_hosts logged as %#v, want []", l["allowed_hosts"])
		}
		for _, r := range p.records() {
			checkNoNulls(t, fmt.Sprint(r["msg"]), r)
		}
		p.signal(syscall.SIGTERM)
		p.wait(30 * time.Second)
	}
}

// checkNoNulls reports every null in a JSON log record.
func checkNoNulls(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil:
		t.Errorf("%s: null in a JSON log record", path)
	case map[string]any:
		for k, e := range v {
			checkNoNulls(t, path+"."+k, e)
		}
	case []any:
		for i, e := range v {
			checkNoNulls(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	}
}

// The example table runs out of the box on the embedded store: the
// heartbeat job every 5 seconds, its line in the log, the other commands
// through the admin API, a clean exit on SIGTERM.
func TestExampleRunsEmbedded(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := env("STATE_DIRECTORY=" + t.TempDir()) // not config.example.data in the repository
	p := start(t, nil, "example", e, "run", "--config", "../../config.example.yaml", "--admin-listen", addr, "--log-format", "json")
	w := p.waitLog(60*time.Second, "embedded store", 1)[0]
	if w["level"] != "INFO" || !strings.Contains(w["msg"].(string), "ONE replica") || w["data_dir"] == "" {
		t.Errorf("embedded-store line: %v", w)
	}
	if s, _ := p.findLogs("solocron starting")[0]["store"].(map[string]any); s["mode"] != "embedded" {
		t.Errorf("the embedded store is logged as %v", s)
	}
	var runs struct{ Runs []scheduler.Run }
	testkit.WaitFor(t, 30*time.Second, "a heartbeat run that succeeded", func() bool {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/api/v1/jobs/heartbeat/runs")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&runs) == nil && len(runs.Runs) > 0 && runs.Runs[0].Outcome == scheduler.Succeeded
	})
	if !strings.Contains(runs.Runs[0].Output, "heartbeat "+runs.Runs[0].ID) {
		t.Errorf("heartbeat output %q", runs.Runs[0].Output)
	}
	// The heartbeat's line is in the log, as the table says.
	p.waitLog(10*time.Second, "heartbeat "+runs.Runs[0].ID, 1)
	// The other commands reach the embedded store through the admin API.
	r := runCLI(t, nil, e, "status", "--config", "../../config.example.yaml", "--admin", "http://"+addr)
	r.want(t, 0, "status")
	if !strings.Contains(r.stdout, "heartbeat") {
		t.Errorf("status on the embedded store: %q", r.stdout)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}

// Redlock mode: the daemon and the CLI work over three independent masters.
func TestRedlockStore(t *testing.T) {
	t.Parallel()
	var urls []string
	for range 3 {
		urls = append(urls, fmt.Sprintf("%q", "redis://"+redistest.Start(t).Addr()+"/0"))
	}
	dir := t.TempDir()
	ledger, manual := filepath.Join(dir, "tick.ledger"), filepath.Join(dir, "manual.ledger")
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  mode: redlock
  redlock: {urls: [%s]}
jobs:
  - {name: tick, schedule: "@every 1s", command: %s}
  - {name: manual, schedule: "@yearly", command: %s}
`, strings.Join(urls, ", "), ledgerCommand(ledger, ""), ledgerCommand(manual, "")))
	p := startReplica(t, nil, env(), table, "rl")
	testkit.WaitFor(t, 30*time.Second, "a tick run", func() bool { return len(readLedger(t, ledger)) > 0 })

	r := runCLI(t, nil, env(), "trigger", "manual", "--wait", "30s", "--config", table)
	r.want(t, 0, "trigger")
	if !strings.Contains(r.stdout, ": succeeded on rl in ") {
		t.Errorf("trigger:\n%s", r.stdout)
	}
	if got := readLedger(t, manual); len(got) != 1 || got[0].replica != "rl" {
		t.Errorf("manual ledger %v", got)
	}
	r = runCLI(t, nil, env(), "status", "tick", "--json", "--config", table)
	r.want(t, 0, "status")
	var st scheduler.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Job != "tick" || len(st.History) == 0 {
		t.Errorf("status (%v):\n%s", err, r.stdout)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}
