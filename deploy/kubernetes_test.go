package deploy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/solocron/solocron/config"
)

const (
	chartDir        = "kubernetes/solocron"
	chartTestValues = "kubernetes/solocron/ci/test-values.yaml"
	// The secrets of chartTestValues: they may appear in a Secret only.
	testAdminToken    = "ci-admin-token-0a4f9c2e7b"
	testStorePassword = "ci-store-password-5d81e3"
)

// helm finds the helm binary: $SOLOCRON_HELM, or helm on PATH. .ci/run
// builds it from its Go module (go install helm.sh/helm/v3/cmd/helm@v3.22.0)
// into a cache. Without it the test skips, unless SOLOCRON_REQUIRE_HELM=1.
func helm(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SOLOCRON_HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		if os.Getenv("SOLOCRON_REQUIRE_HELM") == "1" {
			t.Fatalf("helm not found and SOLOCRON_REQUIRE_HELM=1: %v", err)
		}
		t.Skip("helm not found: go install helm.sh/helm/v3/cmd/helm@v3.22.0, or set SOLOCRON_HELM; set SOLOCRON_REQUIRE_HELM=1 to make this a failure")
	}
	return p
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	// A helm of its own: no user's repositories, plugins or cache.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String() + stderr.String(), err
	}
	return out.String(), nil
}

// object is a rendered Kubernetes object, decoded twice: generically and as
// the fields the tests read.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	raw        string
	node       yaml.Node
}

func render(t *testing.T, args ...string) []object {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "solocron", chartDir, "--namespace", "jobs", "-f", chartTestValues}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue // a document of comments only
		}
		o.raw = doc
		if err := yaml.Unmarshal([]byte(doc), &o.node); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

func find(t *testing.T, objs []object, kind string) object {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s among the rendered objects, have %d", kind, len(found))
	}
	return found[0]
}

func decode(t *testing.T, o object, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type deployment struct {
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
				SecurityContext               struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []struct {
					Name    string   `yaml:"name"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []envVar `yaml:"env"`
					EnvFrom []any    `yaml:"envFrom"`
					Ports   []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
					LivenessProbe  probe `yaml:"livenessProbe"`
					ReadinessProbe probe `yaml:"readinessProbe"`
					Resources      struct {
						Requests map[string]string `yaml:"requests"`
					} `yaml:"resources"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
						SubPath   string `yaml:"subPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// flagValue returns the value of --name in args ("--name V" or
// "--name=V"), and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name || a == "-"+name {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
		for _, p := range []string{"--" + name + "=", "-" + name + "="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v, true
			}
		}
	}
	return "", false
}

// deref is *p, or -1 for a field left out.
func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// The chart passes helm lint, strictly.
func TestChartLint(t *testing.T) {
	out, err := runHelm(t, "lint", "--strict", chartDir, "-f", chartTestValues)
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

// The rendered objects: three replicas reading the table from a ConfigMap
// where the command looks for it, secrets from a Secret only, a replica id
// per pod, probes on the admin port, a grace period the shutdown fits in, a
// PodDisruptionBudget, requests, a Service, and the monitoring objects.
func TestChartObjects(t *testing.T) {
	objs := render(t)
	dep := find(t, objs, "Deployment")
	var d deployment
	decode(t, dep, &d)
	spec := d.Spec.Template.Spec
	if n := deref(d.Spec.Replicas); n != 3 {
		t.Errorf("Deployment replicas %d, want 3", n)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, have %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) > 0 {
		t.Errorf("container command %q overrides the image's entrypoint", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("container args %q: want run first", c.Args)
	}
	if spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}

	// The table: mounted from the ConfigMap at the path the command reads.
	tablePath, ok := flagValue(c.Args, "config")
	if !ok {
		tablePath = "/etc/solocron/solocron.yaml" // the image's WORKDIR + the default ./solocron.yaml
	}
	cm := find(t, objs, "ConfigMap")
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
				continue
			}
			key := path.Base(tablePath)
			if m.SubPath != "" {
				mounted = m.MountPath == tablePath && cm.Data[m.SubPath] != ""
			} else {
				mounted = path.Dir(tablePath) == path.Clean(m.MountPath) && cm.Data[key] != ""
			}
		}
	}
	if !mounted {
		t.Errorf("--config %s is not a key of ConfigMap %s mounted there (mounts %+v, volumes %+v)", tablePath, cm.Metadata.Name, c.VolumeMounts, spec.Volumes)
	}
	table := cm.Data[path.Base(tablePath)]

	// Replica ids and secrets through the environment.
	env := map[string]envVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["SOLOCRON_REPLICA_ID"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("SOLOCRON_REPLICA_ID is not the pod's name (valueFrom.fieldRef.fieldPath: metadata.name)")
	}
	sec := find(t, objs, "Secret")
	secretEnv := map[string]string{}
	for _, name := range []string{"SOLOCRON_ADMIN_TOKEN", "SOLOCRON_STORE_PASSWORD"} {
		e := env[name]
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != sec.Metadata.Name {
			t.Errorf("%s does not come from Secret %s: %+v", name, sec.Metadata.Name, e)
			continue
		}
		if _, ok := sec.Data[e.ValueFrom.SecretKeyRef.Key]; !ok {
			t.Errorf("%s: Secret %s has no key %q", name, sec.Metadata.Name, e.ValueFrom.SecretKeyRef.Key)
		}
		secretEnv[name] = e.ValueFrom.SecretKeyRef.Key
	}
	// No secret outside the Secret: not in the ConfigMap, not in the pod
	// spec, nowhere.
	for _, o := range objs {
		if o.Kind == "Secret" {
			continue
		}
		for _, s := range []string{testAdminToken, testStorePassword} {
			if strings.Contains(o.raw, s) {
				t.Errorf("%s %s holds a secret of the values (%s...)", o.Kind, o.Metadata.Name, s[:8])
			}
		}
	}
	// The table is valid and takes its secrets from that environment.
	t.Setenv("SOLOCRON_ADMIN_TOKEN", testAdminToken)
	t.Setenv("SOLOCRON_STORE_PASSWORD", testStorePassword)
	file := filepath.Join(t.TempDir(), "solocron.yaml")
	if err := os.WriteFile(file, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(file)
	if err != nil {
		t.Fatalf("the chart's table does not load: %v\n%s", err, table)
	}
	if f.Admin.Token != testAdminToken {
		t.Errorf("the table's admin.token is not ${SOLOCRON_ADMIN_TOKEN} (the Secret's admin token)")
	}
	if !strings.Contains(f.Store.URL, testStorePassword) {
		t.Errorf("the table's store.url does not take ${SOLOCRON_STORE_PASSWORD}")
	}

	// Probes on the admin port, where --admin-listen listens.
	listen, ok := flagValue(c.Args, "admin-listen")
	if !ok || !strings.HasPrefix(listen, ":") && !strings.HasPrefix(listen, "0.0.0.0:") && !strings.HasPrefix(listen, "[::]:") {
		t.Errorf("--admin-listen %q: want the pod's every address, so that the kubelet and Prometheus reach it", listen)
	}
	adminPort := ""
	for _, p := range c.Ports {
		if ":"+strconv.Itoa(p.ContainerPort) == listen[strings.LastIndex(listen, ":"):] {
			adminPort = p.Name
		}
	}
	if adminPort == "" {
		t.Errorf("no container port for --admin-listen %s: %+v", listen, c.Ports)
	}
	for _, p := range []struct {
		name string
		pr   probe
		want string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.pr.HTTPGet == nil || p.pr.HTTPGet.Path != p.want || p.pr.HTTPGet.Port != adminPort {
			t.Errorf("%s probe %+v: want GET %s on port %s", p.name, p.pr, p.want, adminPort)
		}
	}

	// Grace: the kubelet waits for the drain.
	grace := 30 * time.Second
	if v, ok := flagValue(c.Args, "shutdown-grace"); ok {
		if grace, err = time.ParseDuration(v); err != nil {
			t.Fatalf("--shutdown-grace %q: %v", v, err)
		}
	}
	if tg := deref(spec.TerminationGracePeriodSeconds); time.Duration(tg)*time.Second <= grace+stopBudget {
		t.Errorf("terminationGracePeriodSeconds %d: want more than --shutdown-grace %s + %s", tg, grace, stopBudget)
	}
	if len(c.Resources.Requests) == 0 || c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
		t.Errorf("no cpu and memory requests: %+v", c.Resources.Requests)
	}

	// The PodDisruptionBudget and the Service select these pods.
	podLabels := d.Spec.Template.Metadata.Labels
	selects := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if podLabels[k] != v {
				return false
			}
		}
		return true
	}
	var pdb struct {
		Spec struct {
			MaxUnavailable any `yaml:"maxUnavailable"`
			MinAvailable   any `yaml:"minAvailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	decode(t, find(t, objs, "PodDisruptionBudget"), &pdb)
	if !selects(pdb.Spec.Selector.MatchLabels) || (pdb.Spec.MaxUnavailable == nil) == (pdb.Spec.MinAvailable == nil) {
		t.Errorf("PodDisruptionBudget %+v: want one of maxUnavailable/minAvailable, selecting the pods %v", pdb.Spec, podLabels)
	}
	var svc struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				Name       string `yaml:"name"`
				TargetPort any    `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	decode(t, find(t, objs, "Service"), &svc)
	if !selects(svc.Spec.Selector) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != adminPort {
		t.Errorf("Service %+v: want the admin port (%s) of the pods %v", svc.Spec, adminPort, podLabels)
	}

	// Monitoring: the scrape job the alert rules expect, and those rules.
	var sm struct {
		Spec struct {
			JobLabel  string `yaml:"jobLabel"`
			Endpoints []struct {
				Port        string `yaml:"port"`
				Path        string `yaml:"path"`
				HonorLabels bool   `yaml:"honorLabels"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	decode(t, find(t, objs, "ServiceMonitor"), &sm)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" || !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor endpoints %+v: want /metrics on port %s with honorLabels (Solocron's job label)", sm.Spec.Endpoints, svc.Spec.Ports[0].Name)
	}
	if got := svc.Metadata.Labels[sm.Spec.JobLabel]; got != "solocron" {
		t.Errorf("ServiceMonitor jobLabel %q gives the scrape job %q: the alert rules look for up{job=\"solocron\"}", sm.Spec.JobLabel, got)
	}
	var rule struct {
		Spec map[string]any `yaml:"spec"`
	}
	decode(t, find(t, objs, "PrometheusRule"), &rule)
	var shipped map[string]any
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &shipped); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule.Spec, shipped) {
		t.Errorf("the chart's PrometheusRule differs from %s: cp %s %s/files/", rulesFile, rulesFile, chartDir)
	}
}

// The chart refuses values that would break a guarantee, with a message
// that says which and why.
func TestChartRefuses(t *testing.T) {
	noToken := filepath.Join(t.TempDir(), "table.yaml")
	if err := os.WriteFile(noToken, []byte("store: {url: redis://redis:6379/0}\nadmin: {token: hunter2-hunter2}\njobs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noStore := filepath.Join(t.TempDir(), "table.yaml")
	if err := os.WriteFile(noStore, []byte("admin: {token: ${SOLOCRON_ADMIN_TOKEN}}\njobs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "terminationGracePeriodSeconds=40"}, "must exceed shutdownGraceSeconds"},
		{[]string{"--set", "shutdownGraceSeconds=60"}, "must exceed shutdownGraceSeconds"},
		{[]string{"--set-file", "table=" + noToken}, "admin.token must be ${SOLOCRON_ADMIN_TOKEN}"},
		{[]string{"--set-file", "table=" + noStore}, "no store section"},
		{[]string{"--set", "secret.adminToken="}, "secret.adminToken is required"},
		// values.schema.json: a misspelt key is an error, as in the table.
		{[]string{"--set", "replicas=5"}, "additional properties 'replicas' not allowed"},
		{[]string{"--set", "logFormat=xml"}, "value must be one of"},
	} {
		out, err := runHelm(t, append([]string{"template", "solocron", chartDir, "-f", chartTestValues}, tc.args...)...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(out, tc.want) {
			t.Errorf("helm template %q: %v, want a failure saying %q:\n%.500s", tc.args, err, tc.want, out)
		}
	}
	// With an existing Secret the chart makes none and reads that one.
	objs := render(t, "--set", "secret.adminToken=", "--set", "secret.existingSecret=ops-solocron")
	if slices.ContainsFunc(objs, func(o object) bool { return o.Kind == "Secret" }) {
		t.Error("with secret.existingSecret the chart still renders a Secret")
	}
	var d deployment
	decode(t, find(t, objs, "Deployment"), &d)
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name != "ops-solocron" {
			t.Errorf("%s reads Secret %s, want ops-solocron", e.Name, r.SecretKeyRef.Name)
		}
	}
}

// With monitoring.prometheusRule.consoleURL each alert links to the
// console's page that answers it (an operator paged at night clicks
// through to the job, its missed runs, the replicas); the rules are the
// shipped ones otherwise, and without the value nothing is added.
func TestChartAlertsLinkToTheConsole(t *testing.T) {
	type rules struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Expr        string            `yaml:"expr"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		} `yaml:"spec"`
	}
	var linked, plain rules
	decode(t, find(t, render(t, "--set", "monitoring.prometheusRule.consoleURL=https://ops.example.com/solocron/"), "PrometheusRule"), &linked)
	decode(t, find(t, render(t), "PrometheusRule"), &plain)
	want := map[string]string{
		"SolocronJobFailing":       "https://ops.example.com/solocron/jobs/{{ $labels.job }}",
		"SolocronJobLate":          "https://ops.example.com/solocron/jobs/{{ $labels.job }}",
		"SolocronRunsMissed":       "https://ops.example.com/solocron/runs?outcome=missed&q={{ $labels.job }}@",
		"SolocronLeaseLost":        "https://ops.example.com/solocron/runs?outcome=lease_lost&q={{ $labels.job }}@",
		"SolocronReplicaDown":      "https://ops.example.com/solocron/replicas",
		"SolocronStoreUnreachable": "https://ops.example.com/solocron/replicas",
	}
	alerts := 0
	for gi, g := range linked.Spec.Groups {
		for ri, r := range g.Rules {
			p := plain.Spec.Groups[gi].Rules[ri]
			if r.Alert == "" {
				continue
			}
			alerts++
			link := r.Annotations["console_url"]
			if w, ok := want[r.Alert]; ok && link != w {
				t.Errorf("%s links to %q, want %q", r.Alert, link, w)
			}
			if !strings.HasPrefix(link, "https://ops.example.com/solocron/") {
				t.Errorf("%s links to %q, not to the console", r.Alert, link)
			}
			// A link to a job's page only where the alert has a job label.
			if strings.Contains(link, "$labels.job") && !strings.Contains(r.Expr, "(deployment, job)") && !strings.Contains(r.Expr, "deployment_job") {
				t.Errorf("%s links to %q but its series have no job label", r.Alert, link)
			}
			if _, ok := p.Annotations["console_url"]; ok {
				t.Errorf("without consoleURL %s still has a console_url", r.Alert)
			}
			delete(r.Annotations, "console_url")
			if !reflect.DeepEqual(r.Annotations, p.Annotations) || r.Expr != p.Expr {
				t.Errorf("%s: consoleURL changed more than its link", r.Alert)
			}
		}
	}
	if alerts < len(want) {
		t.Errorf("the chart's rules have %d alerts", alerts)
	}
}

// NOTES.txt tells the operator how to read the admin token (from the
// chart's Secret, or the existingSecret named instead) and how to reach
// the console. helm template does not render NOTES.txt, and helm install
// --dry-run=client still asks a cluster for its version: the test renders
// a copy of the chart in which NOTES.txt is also an ordinary template.
func TestChartNotes(t *testing.T) {
	notes := func(args ...string) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "solocron")
		if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "templates", "notes-rendered.txt"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runHelm(t, append([]string{"template", "solocron", dir, "--namespace", "jobs", "-f", chartTestValues,
			"--show-only", "templates/notes-rendered.txt"}, args...)...)
		if err != nil {
			t.Fatalf("helm template (NOTES.txt): %v\n%s", err, out)
		}
		if strings.Contains(out, testAdminToken) {
			t.Errorf("NOTES.txt shows the admin token itself:\n%s", out)
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{
			"kubectl -n jobs get secret solocron -o jsonpath='{.data.admin-token}' | base64 -d",
			"kubectl -n jobs port-forward service/solocron 9090",
			"http://localhost:9090/",
		}},
		{[]string{"--set", "secret.existingSecret=ops-solocron", "--set", "admin.port=8081"}, []string{
			"kubectl -n jobs get secret ops-solocron -o jsonpath='{.data.admin-token}' | base64 -d",
			"kubectl -n jobs port-forward service/solocron 8081",
			"http://localhost:8081/",
		}},
	} {
		out := notes(tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("helm template %q: NOTES.txt lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
}
