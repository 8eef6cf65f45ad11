package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	rulesFile     = "prometheus/solocron.rules.yaml"
	rulesTestFile = "prometheus/solocron.rules_test.yaml"
	dashboardFile = "grafana/solocron.json"
	monitoringDoc = "../docs/monitoring.md"
)

// promtool finds promtool (Debian's prometheus package ships it). Without
// it the test skips, unless SOLOCRON_REQUIRE_PROMTOOL=1 says it must run.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SOLOCRON_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("promtool not found and SOLOCRON_REQUIRE_PROMTOOL=1: %v", err)
		}
		t.Skip("promtool not found (apt-get install prometheus); set SOLOCRON_REQUIRE_PROMTOOL=1 to make this a failure")
	}
	return p
}

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The rules parse, and do what their unit tests say.
func TestRules(t *testing.T) {
	t.Run("check", func(t *testing.T) {
		out := runPromtool(t, "check", "rules", rulesFile)
		if !strings.Contains(out, "SUCCESS") {
			t.Errorf("promtool check rules:\n%s", out)
		}
	})
	t.Run("test", func(t *testing.T) {
		out := runPromtool(t, "test", "rules", rulesTestFile)
		if !strings.Contains(out, "SUCCESS") {
			t.Errorf("promtool test rules:\n%s", out)
		}
	})
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return f
}

// Every alert has a severity, a summary and a description, is exercised by
// the promtool tests (each alert both firing and not), and is explained in
// docs/monitoring.md.
func TestRulesComplete(t *testing.T) {
	f := readRules(t)
	doc, err := os.ReadFile(monitoringDoc)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	var n int
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			switch r.Labels["severity"] {
			case "critical", "warning":
			default:
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", r.Alert)
			}
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("%s: %s should test it both firing (%v) and not firing (%v)", r.Alert, rulesTestFile, fires[r.Alert], quiet[r.Alert])
			}
			if !strings.Contains(string(doc), "`"+r.Alert+"`") {
				t.Errorf("%s is not explained in %s", r.Alert, monitoringDoc)
			}
		}
	}
	if n < 8 {
		t.Errorf("%d alerts in %s, want at least 8", n, rulesFile)
	}
}

type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// grafanaVars are the dashboard's variables with a value that makes each
// query plain PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")

// The dashboard is one Grafana document: a uid, unique panel ids, every
// panel on the data source variable (no data source uid of one
// installation), and every query valid PromQL (promtool checks each as a
// recording rule).
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both are needed", d.UID, d.Title)
	}
	ids := map[int]string{}
	var exprs []string
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" || refs[q.RefID] {
				t.Errorf("panel %q: query %q with refId %q", p.Title, q.Expr, q.RefID)
			}
			refs[q.RefID] = true
			exprs = append(exprs, q.Expr)
		}
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Contains(vars, "datasource") || !slices.Contains(vars, "job") {
		t.Errorf("variables %v, want datasource and job", vars)
	}
	// The import's data source (__inputs DS_PROMETHEUS) is used: it is the
	// datasource variable's value. The job list comes from a gauge of the
	// table, so a job removed by a reload leaves it (a counter's series
	// outlive the job until the replica restarts), and "All" is the jobs
	// listed, not every series ever seen. A time to the next run is never
	// negative (the gauge is a scrape old).
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs struct {
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
				AllValue   string `json:"allValue"`
				Current    struct {
					Value string `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Templating.List {
		switch v.Name {
		case "datasource":
			if v.Current.Value != "${DS_PROMETHEUS}" {
				t.Errorf("the datasource variable's value is %q, want the import's ${DS_PROMETHEUS}", v.Current.Value)
			}
		case "job":
			if !strings.Contains(v.Definition, "solocron_job_interval_seconds") || v.AllValue != "" {
				t.Errorf("job variable: %q, allValue %q; want the table's gauge solocron_job_interval_seconds, no allValue", v.Definition, v.AllValue)
			}
		}
	}
	for _, e := range exprs {
		if strings.Contains(e, "solocron_job_next_run_timestamp_seconds") && !strings.HasPrefix(e, "clamp_min(") {
			t.Errorf("next run query %q can go negative", e)
		}
	}

	// promtool has no command that checks a bare expression; a rule file
	// of recording rules gets every query parsed.
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		fmt.Fprintf(&b, "      - record: dashboard_query_%d\n        expr: %s\n", i, jsonString(grafanaVars.Replace(e)))
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, "check", "rules", path)
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(exprs)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules on the dashboard's queries: want %q in\n%s", want, out)
	}
}

// jsonString quotes s for YAML (a JSON string is a YAML flow scalar).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The metrics the rules and the dashboard read are the ones
// docs/monitoring.md documents. (cmd/scheduler's TestDeployMetricsExist
// checks them against a live replica's /metrics.)
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile(monitoringDoc)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			text = append(text, r.Expr)
		}
	}
	for _, p := range readDashboard(t).Panels {
		for _, q := range p.Targets {
			text = append(text, q.Expr)
		}
	}
	metric := regexp.MustCompile(`\bsolocron_[a-z0-9_]*[a-z0-9]`)
	histogram := regexp.MustCompile(`_(bucket|sum|count)$`)
	seen := map[string]bool{}
	for _, s := range text {
		for _, m := range metric.FindAllString(s, -1) {
			m = histogram.ReplaceAllString(m, "")
			if seen[m] {
				continue
			}
			seen[m] = true
			if !strings.Contains(string(doc), "`"+m) {
				t.Errorf("%s is used by the rules or the dashboard but not documented in %s", m, monitoringDoc)
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("found only %d metric names: %v", len(seen), seen)
	}
}
