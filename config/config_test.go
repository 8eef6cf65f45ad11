package config_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// env is the environment the tests parse with.
var env = map[string]string{
	"HOST":           "web",
	"REDIS_PASSWORD": "s3cret",
	"TOKEN":          "tok-123",
	"EMPTY":          "",
	"N":              "3",
	"D":              "45s",
	"WORD":           "two",
	"PAUSED":         "true",
}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

// probe is a Go function job that can be told apart from another.
type probe struct{ name string }

func (p *probe) Run(context.Context) error { return nil }

var reindex = &probe{"reindex"}

func parse(t *testing.T, text string, opts ...config.Option) (*config.File, error) {
	t.Helper()
	opts = append([]config.Option{config.WithLookupEnv(lookup),
		config.WithFuncs(map[string]jobs.Job{"reindex": reindex})}, opts...)
	return config.Parse("t.yaml", []byte(text), opts...)
}

func mustParse(t *testing.T, text string, opts ...config.Option) *config.File {
	t.Helper()
	f, err := parse(t, text, opts...)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return f
}

const goodFile = `# a table using every field
replica_id: ${HOST}-1
store:
  url: redis://:${REDIS_PASSWORD}@redis:6379/2
  key_prefix: myapp
  max_clock_skew: 500ms
admin:
  listen: 127.0.0.1:9090
  token: ${TOKEN}
defaults:
  timezone: Europe/Berlin
  lease: 1m
  env: {LOG_LEVEL: info, REGION: eu}
jobs:
  - name: lottery
    schedule: "0 0 12 * * *"
    timezone: Asia/Shanghai
    command: ["./draw", "--winners", 10]
    env: {REGION: asia}
    dir: /srv/lottery
    kill_grace: 5s
    concurrency: 2
    overlap: wait
    max_wait: 30s
    timeout: 10m
    retries: 3
    retry_backoff: 2s
    jitter: 1s
    starting_deadline: 20s
    catchup_window: 1h
    catchup: all
    on_lease_lost: continue
    paused: true
    history_limit: 50
    pause_after_failures: 3
  - name: ping
    schedule: "@every 10s"
    offset: 3s
    http:
      method: POST
      url: https://example.com/hook?x=1
      headers: {Authorization: "Bearer ${TOKEN}", content-type: application/json}
      body: '{"a": 1}'
      expect_status: [200, 204]
  - name: reindex.nightly
    schedule: "@hourly"
    func: reindex
    timeout: 0
`

func TestParseGoodFile(t *testing.T) {
	f := mustParse(t, goodFile)
	if f.Path != "t.yaml" || f.ReplicaID != "web-1" {
		t.Errorf("Path, ReplicaID = %q, %q; want t.yaml, web-1", f.Path, f.ReplicaID)
	}
	wantStore := config.Store{URL: "redis://:s3cret@redis:6379/2", Mode: "standalone",
		KeyPrefix: "myapp", MaxClockSkew: 500 * time.Millisecond}
	if !reflect.DeepEqual(f.Store, wantStore) {
		t.Errorf("Store = %#v\nwant %#v", f.Store, wantStore)
	}
	if want := (config.Admin{Listen: "127.0.0.1:9090", Token: "tok-123", RateLimit: 20, RateBurst: 40}); !reflect.DeepEqual(f.Admin, want) {
		t.Errorf("Admin = %+v, want %+v", f.Admin, want)
	}
	want := []scheduler.Job{{
		Name: "lottery", Schedule: "0 0 12 * * *", Timezone: "Asia/Shanghai",
		Concurrency: 2, Overlap: scheduler.OverlapWait, MaxWait: 30 * time.Second, Lease: time.Minute,
		Timeout: 10 * time.Minute, Retries: 3, RetryBackoff: 2 * time.Second, Jitter: time.Second,
		StartingDeadline: 20 * time.Second, CatchupWindow: time.Hour, Catchup: scheduler.CatchupAll,
		OnLeaseLost: scheduler.LeaseLostContinue, Paused: true, HistoryLimit: 50, PauseAfterFailures: 3,
	}, {
		// An HTTP job without a timeout gets jobs.DefaultHTTPTimeout.
		Name: "ping", Schedule: "@every 10s", Timezone: "Europe/Berlin", Offset: 3 * time.Second, Lease: time.Minute,
		Timeout: jobs.DefaultHTTPTimeout,
	}, {
		Name: "reindex.nightly", Schedule: "@hourly", Timezone: "Europe/Berlin", Lease: time.Minute,
	}}
	if len(f.Jobs) != len(want) {
		t.Fatalf("got %d jobs, want %d", len(f.Jobs), len(want))
	}
	handlers := make([]jobs.Job, len(f.Jobs))
	for i := range f.Jobs {
		got := f.Jobs[i]
		handlers[i], got.Handler = got.Handler, nil
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("jobs[%d] =\n%+v\nwant\n%+v", i, got, want[i])
		}
	}
	cmd, ok := handlers[0].(*jobs.Command)
	if !ok {
		t.Fatalf("jobs[0].Handler is %T, want *jobs.Command", handlers[0])
	}
	wantCmd := jobs.Command{Args: []string{"./draw", "--winners", "10"},
		Env: map[string]string{"LOG_LEVEL": "info", "REGION": "asia"}, Dir: "/srv/lottery", KillGrace: 5 * time.Second}
	if !reflect.DeepEqual(*cmd, wantCmd) {
		t.Errorf("jobs[0].Handler = %+v\nwant %+v", *cmd, wantCmd)
	}
	h, ok := handlers[1].(*jobs.HTTP)
	if !ok {
		t.Fatalf("jobs[1].Handler is %T, want *jobs.HTTP", handlers[1])
	}
	wantHTTP := jobs.HTTP{Method: "POST", URL: "https://example.com/hook?x=1",
		Headers: map[string]string{"Authorization": "Bearer tok-123", "Content-Type": "application/json"},
		Body:    `{"a": 1}`, ExpectStatus: []int{200, 204}, Timeout: jobs.DefaultHTTPTimeout}
	if !reflect.DeepEqual(*h, wantHTTP) {
		t.Errorf("jobs[1].Handler = %+v\nwant %+v", *h, wantHTTP)
	}
	if handlers[2] != jobs.Job(reindex) {
		t.Errorf("jobs[2].Handler = %#v, want the function registered as reindex", handlers[2])
	}
	if err := scheduler.ValidateTable(f.Jobs); err != nil {
		t.Errorf("ValidateTable(f.Jobs) = %v", err)
	}
}

func TestParseMinimalFiles(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"empty list", "jobs: []\n"},
		{"all entries commented out", "store:\nadmin:\ndefaults:\njobs:\n#  - name: x\n"},
		{"trailing empty document", "jobs: []\n---\n"},
		{"document markers", "---\njobs: []\n...\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, tc.text)
			if len(f.Jobs) != 0 {
				t.Errorf("Jobs = %v, want none", f.Jobs)
			}
			want := config.Store{Mode: "standalone", KeyPrefix: "solocron", MaxClockSkew: 2 * time.Second}
			if !reflect.DeepEqual(f.Store, want) {
				t.Errorf("Store = %#v, want the defaults %#v", f.Store, want)
			}
			if wantAdmin := (config.Admin{RateLimit: 20, RateBurst: 40}); !reflect.DeepEqual(f.Admin, wantAdmin) || f.ReplicaID != "" {
				t.Errorf("Admin, ReplicaID = %v, %q; want the defaults", f.Admin, f.ReplicaID)
			}
		})
	}
}

func TestDefaultsMerge(t *testing.T) {
	f := mustParse(t, `
defaults:
  timezone: UTC
  retries: 2
  env: {A: "1", B: "2"}
  command: [echo, default]
  http:
    method: POST
    headers: {X-Team: core, Authorization: Bearer d}
    expect_status: [202]
jobs:
  - name: a            # env merges key by key
    schedule: "@hourly"
    command: [echo, a]
    env: {B: "20", C: "30"}
    retries: 0
  - name: b            # an http job: method and headers from the defaults
    schedule: "@hourly"
    http: {url: "https://x.example/", headers: {authorization: Bearer own}}
  - name: c            # its own command replaces the default one whole
    schedule: "@hourly"
    command: ["true"]
    timezone: Asia/Tokyo
  - name: d            # a func job: the default env does not apply to it
    schedule: "@hourly"
    func: reindex
`)
	if len(f.Jobs) != 4 {
		t.Fatalf("got %d jobs, want 4", len(f.Jobs))
	}
	a, b, c, d := f.Jobs[0], f.Jobs[1], f.Jobs[2], f.Jobs[3]
	if a.Timezone != "UTC" || a.Retries != 0 || b.Retries != 2 || c.Timezone != "Asia/Tokyo" {
		t.Errorf("a.Timezone, a.Retries, b.Retries, c.Timezone = %q, %d, %d, %q; want UTC, 0, 2, Asia/Tokyo",
			a.Timezone, a.Retries, b.Retries, c.Timezone)
	}
	checkCommand(t, a.Handler, []string{"echo", "a"}, map[string]string{"A": "1", "B": "20", "C": "30"})
	checkCommand(t, c.Handler, []string{"true"}, map[string]string{"A": "1", "B": "2"})
	h, ok := b.Handler.(*jobs.HTTP)
	if !ok {
		t.Fatalf("b.Handler is %T, want *jobs.HTTP", b.Handler)
	}
	want := jobs.HTTP{Method: "POST", URL: "https://x.example/", ExpectStatus: []int{202},
		Headers: map[string]string{"X-Team": "core", "Authorization": "Bearer own"}, Timeout: jobs.DefaultHTTPTimeout}
	if !reflect.DeepEqual(*h, want) {
		t.Errorf("b.Handler = %+v\nwant %+v", *h, want)
	}
	if d.Handler != jobs.Job(reindex) {
		t.Errorf("d.Handler = %#v, want reindex", d.Handler)
	}
	// Each job owns its maps and slices: changing one changes no other.
	a.Handler.(*jobs.Command).Env["A"] = "changed"
	a.Handler.(*jobs.Command).Args[0] = "changed"
	checkCommand(t, c.Handler, []string{"true"}, map[string]string{"A": "1", "B": "2"})
}

// A job that names no handler takes the one defaults names.
func TestDefaultHandler(t *testing.T) {
	f := mustParse(t, `
defaults:
  command: [./task, --verbose]
  env: {A: "1"}
  kill_grace: 3s
jobs:
  - {name: a, schedule: "@hourly"}
  - {name: b, schedule: "@hourly", env: {B: "2"}}
  - {name: c, schedule: "@hourly", func: reindex}
  - {name: d, schedule: "@hourly", http: {url: "https://x.example/"}}
`)
	checkCommand(t, f.Jobs[0].Handler, []string{"./task", "--verbose"}, map[string]string{"A": "1"})
	checkCommand(t, f.Jobs[1].Handler, []string{"./task", "--verbose"}, map[string]string{"A": "1", "B": "2"})
	if g := f.Jobs[1].Handler.(*jobs.Command).KillGrace; g != 3*time.Second {
		t.Errorf("b's KillGrace = %v, want the default 3s", g)
	}
	if f.Jobs[2].Handler != jobs.Job(reindex) {
		t.Errorf("c.Handler = %#v, want reindex", f.Jobs[2].Handler)
	}
	if h, ok := f.Jobs[3].Handler.(*jobs.HTTP); !ok || h.URL != "https://x.example/" || h.Headers != nil {
		t.Errorf("d.Handler = %#v, want an HTTP job to https://x.example/ without headers", f.Jobs[3].Handler)
	}
}

func checkCommand(t *testing.T, h jobs.Job, args []string, env map[string]string) {
	t.Helper()
	cmd, ok := h.(*jobs.Command)
	if !ok {
		t.Fatalf("Handler is %T, want *jobs.Command", h)
	}
	if !reflect.DeepEqual(cmd.Args, args) || !maps.Equal(cmd.Env, env) {
		t.Errorf("Command Args, Env = %q, %v; want %q, %v", cmd.Args, cmd.Env, args, env)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	f := mustParse(t, `
jobs:
  - &base
    name: a
    schedule: "@hourly"
    command: &cmd [./run, --fast]
    timeout: 1m
  - <<: *base
    name: b
    timeout: 2m
  - name: c
    schedule: "@daily"
    command: *cmd
`)
	if len(f.Jobs) != 3 {
		t.Fatalf("got %d jobs, want 3", len(f.Jobs))
	}
	if b := f.Jobs[1]; b.Name != "b" || b.Schedule != "@hourly" || b.Timeout != 2*time.Minute {
		t.Errorf("jobs[1] = %+v; want name b, schedule @hourly, timeout 2m (merged from jobs[0])", b)
	}
	checkCommand(t, f.Jobs[2].Handler, []string{"./run", "--fast"}, nil)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "solocron.yaml")
	if err := os.WriteFile(path, []byte("jobs:\n  - name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path, config.WithLookupEnv(lookup))
	var es *config.Errors
	if !errors.As(err, &es) || len(*es) == 0 {
		t.Fatalf("Load = %v, want a *config.Errors", err)
	}
	for _, e := range *es {
		if e.File != path || !strings.HasPrefix(e.Error(), path+":2:5: jobs[0]") {
			t.Errorf("error %q does not name %s:2:5", e, path)
		}
	}

	_, err = config.Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) = %v, want an fs.ErrNotExist naming the file", err)
	}

	if err := os.WriteFile(path, []byte("jobs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil || f.Path != path {
		t.Fatalf("Load = %+v, %v; want a File with Path %s", f, err, path)
	}
}

func TestFuncJobsNeedWithFuncs(t *testing.T) {
	text := "jobs:\n  - {name: a, schedule: \"@hourly\", func: reindex}\n"
	_, err := config.Parse("t.yaml", []byte(text))
	wantErrors(t, err, `2:42: jobs[0].func: "reindex" is not a registered Go function: func jobs run only in a program that embeds Solocron`)
	if _, err := config.Parse("t.yaml", []byte(text), config.WithFuncs(map[string]jobs.Job{"reindex": reindex})); err != nil {
		t.Errorf("with WithFuncs: %v", err)
	}
}

// TestSecurityFields: log_output and http.follow_redirects reach the
// handlers; an HTTP job's own timeout bounds its request; bad values are
// errors naming the field.
func TestSecurityFields(t *testing.T) {
	f := mustParse(t, `
jobs:
  - {name: loud, schedule: "@hourly", command: ["true"], log_output: info}
  - {name: quiet, schedule: "@hourly", command: ["true"]}
  - {name: hook, schedule: "@hourly", timeout: 5m, http: {url: "https://x.example/", follow_redirects: none}}
  - {name: hook2, schedule: "@hourly", http: {url: "https://x.example/"}}
`)
	if c := f.Jobs[0].Handler.(*jobs.Command); c.LogOutput == nil || c.LogOutput.Level() != slog.LevelInfo {
		t.Errorf("log_output: info gave %v", c.LogOutput)
	}
	if c := f.Jobs[1].Handler.(*jobs.Command); c.LogOutput != nil {
		t.Errorf("no log_output gave %v, want nil (debug)", c.LogOutput)
	}
	if h := f.Jobs[2].Handler.(*jobs.HTTP); h.FollowRedirects != "none" || h.Timeout != 5*time.Minute || f.Jobs[2].Timeout != 5*time.Minute {
		t.Errorf("hook: %+v, job timeout %v", h, f.Jobs[2].Timeout)
	}
	if h := f.Jobs[3].Handler.(*jobs.HTTP); h.FollowRedirects != "" || h.Timeout != time.Minute || f.Jobs[3].Timeout != time.Minute {
		t.Errorf("hook2: %+v, job timeout %v", h, f.Jobs[3].Timeout)
	}
	_, err := config.Parse("t.yaml", []byte(`
jobs:
  - {name: a, schedule: "@hourly", command: ["true"], log_output: loud}
  - {name: b, schedule: "@hourly", http: {url: "https://x.example/", follow_redirects: same-host}}
  - {name: c, schedule: "@hourly", http: {url: "https://x.example/"}, log_output: info}
`))
	for _, want := range []string{`t.yaml:3:67: jobs[0].log_output: "loud" is not one of debug`,
		`t.yaml:4:88: jobs[1].http.follow_redirects: "same-host" is not one of same_host, all, none (did you mean "same_host"?)`,
		`jobs[2].log_output: applies only to command jobs`} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}

// TestAdminSecurityFields: allowed_hosts, rate_limit, rate_burst and tls
// decode, with errors naming file, line and field.
func TestAdminSecurityFields(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	for _, p := range []string{cert, key} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := mustParse(t, fmt.Sprintf(`
admin:
  listen: 0.0.0.0:9090
  token: tok
  allowed_hosts: [solocron.internal, 10.0.0.5]
  rate_limit: 0
  rate_burst: 5
  tls: {cert_file: %q, key_file: %q, client_ca_file: %q}
jobs: []
`, cert, key, cert))
	want := config.Admin{Listen: "0.0.0.0:9090", Token: "tok", AllowedHosts: []string{"solocron.internal", "10.0.0.5"},
		RateLimit: 0, RateBurst: 5, TLS: &config.AdminTLS{CertFile: cert, KeyFile: key, ClientCAFile: cert}}
	if !reflect.DeepEqual(f.Admin, want) {
		t.Errorf("Admin = %v\nwant %v", f.Admin, want)
	}
	_, err := config.Parse("t.yaml", []byte(`
admin:
  allowed_hosts: ["http://evil.example/"]
  rate_limit: -1
  rate_burst: 0
  tls: {cert_file: /nonexistent/c.pem}
jobs: []
`))
	for _, want := range []string{`t.yaml:3:19: admin.allowed_hosts[0]: "http://evil.example/" is not a host name`,
		`t.yaml:4:15: admin.rate_limit: must be 0 (no limit)`, `t.yaml:5:15: admin.rate_burst: must be at least 1`,
		`admin.tls.cert_file: "/nonexistent/c.pem": no such file`, `admin.tls.key_file: is required`} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}
