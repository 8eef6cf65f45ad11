package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/internal/testkit"
)

// pendingMetrics are metrics of the contract in docs/monitoring.md that the
// rules and the dashboard read but the scheduler does not export yet.
// TestDeployMetricsExist fails when one of them appears on /metrics: take
// it off this list then. Empty: the scheduler exports them all.
var pendingMetrics = []string{}

var deployMetricRE = regexp.MustCompile(`\bsolocron_[a-z0-9_]*[a-z0-9]\b`)

// deployMetrics returns every solocron_ metric named by a query of the
// alert rules or of the Grafana dashboard.
func deployMetrics(t *testing.T) []string {
	t.Helper()
	var exprs []string
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "solocron.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	data, err = os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "solocron.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	var names []string
	for _, e := range exprs {
		names = append(names, deployMetricRE.FindAllString(e, -1)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Every metric the alert rules and the dashboard read is on a live
// replica's /metrics, or listed in pendingMetrics; none of pendingMetrics
// is there yet. The replica runs a quick job and one that lasts past a
// third of its lease, so that the counters that appear at their first
// event (renewals) have had one.
func TestDeployMetricsExist(t *testing.T) {
	t.Parallel()
	want := deployMetrics(t)
	if len(want) < 10 {
		t.Fatalf("found only %d metric names in deploy/: %v", len(want), want)
	}
	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	// A notification target, so that its counters (the rules read them) are
	// there: from the start, at 0.
	writeFile(t, table, `
notifications:
  - {name: ops, url: "http://127.0.0.1:1/hook", on: [failed]}
jobs:
  - {name: quick, schedule: "@every 1s", command: ["true"]}
  - {name: slow, schedule: "@every 2s", lease: 600ms, kill_grace: 100ms, command: ["sleep", "1"]}
  - {name: broken, schedule: "@every 1s", command: ["false"], notify: [ops]}
  - {name: held, schedule: "@every 1s", command: ["true"], paused: true}
`)
	addr := freeAddr(t)
	p := start(t, nil, "replica", env(), "run", "--config", table, "--admin-listen", addr, "--log-format", "json")

	base := func(name string) string {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		return name
	}
	testkit.WaitFor(t, 60*time.Second, "/readyz 200", func() bool { return testkit.HTTPStatus("http://"+addr+"/readyz") == 200 })
	var exported map[string]bool
	var missing []string
	var body string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var code int
		code, body = httpDo(t, nil, "GET", "http://"+addr+"/metrics", "")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		exported = map[string]bool{}
		for _, s := range parseMetrics(t, body) {
			exported[s.name] = true
			exported[base(s.name)] = true
		}
		missing = missing[:0]
		for _, m := range want {
			if !exported[m] && !slices.Contains(pendingMetrics, m) {
				missing = append(missing, m)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90s, /metrics still lacks %v, which the rules or the dashboard read (pending: %v)", missing, pendingMetrics)
		}
	}
	for _, m := range pendingMetrics {
		if exported[m] {
			t.Errorf("%s is exported now: take it off pendingMetrics", m)
		}
		if !slices.Contains(want, m) {
			t.Errorf("%s is in pendingMetrics but no rule or panel reads it", m)
		}
	}
	checkMetricLabels(t, parseMetrics(t, body))
	promtoolCheckMetrics(t, body)
	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}

// specLabels are the labels of the metrics SPEC section 5 names (besides
// the otel_scope_* every OpenTelemetry metric carries).
var specLabels = map[string][]string{
	"solocron_runs_total":                         {"job", "outcome"},
	"solocron_claims_total":                       {"job", "result"},
	"solocron_run_duration_seconds_count":         {"job", "outcome"},
	"solocron_claim_duration_seconds_count":       nil,
	"solocron_dispatch_delay_seconds_count":       {"job"},
	"solocron_lease_renewals_total":               {"result"},
	"solocron_lease_lost_total":                   {"job"},
	"solocron_running":                            {"job"},
	"solocron_job_last_success_timestamp_seconds": {"job"},
	"solocron_job_last_run_timestamp_seconds":     {"job", "outcome"},
	"solocron_job_next_run_timestamp_seconds":     {"job"},
	"solocron_job_consecutive_failures":           {"job"},
	"solocron_job_paused":                         {"job"},
	"solocron_job_interval_seconds":               {"job"},
	"solocron_replica_info":                       {"replica", "table", "version"},
}

// checkMetricLabels fails the test when a metric of the contract is
// missing or has other labels than it says, or when any solocron_ label
// carries a run id (one series per run: unbounded cardinality).
func checkMetricLabels(t *testing.T, ms []sample) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range ms {
		if !strings.HasPrefix(m.name, "solocron_") {
			continue
		}
		for k, v := range m.labels {
			if strings.Contains(v, "@") || strings.Contains(k, "run") || k == "trace_id" {
				t.Errorf("%s has label %s=%q: no run ids in metrics", m.name, k, v)
			}
		}
		want, ok := specLabels[m.name]
		if !ok {
			continue
		}
		seen[m.name] = true
		var got []string
		for k := range m.labels {
			if !strings.HasPrefix(k, "otel_scope_") {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s has labels %v, want %v", m.name, got, want)
		}
	}
	for name := range specLabels {
		if !seen[name] {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// promtoolCheckMetrics lints a scrape as Prometheus' own tool does (HELP
// on every metric, counters ending _total, base units in names). Without
// promtool it skips that check, unless SOLOCRON_REQUIRE_PROMTOOL=1.
func promtoolCheckMetrics(t *testing.T, scrape string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SOLOCRON_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("promtool not found and SOLOCRON_REQUIRE_PROMTOOL=1: %v", err)
		}
		t.Log("promtool not found (apt-get install prometheus): /metrics not linted")
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("promtool check metrics on /metrics: %v\n%s", err, out)
	}
}
