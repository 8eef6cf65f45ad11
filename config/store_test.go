package config_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/jobs"
)

func TestStoreModes(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       config.Store
	}{{
		name: "sentinel",
		text: `store:
  url: redis://:${REDIS_PASSWORD}@/1
  mode: sentinel
  sentinel: {master: mymaster, addrs: ["10.0.0.1:26379", "10.0.0.2:26379"], username: u, password: p}
`,
		want: config.Store{URL: "redis://:s3cret@/1", Mode: "sentinel", KeyPrefix: "solocron", MaxClockSkew: 2 * time.Second,
			Sentinel: config.Sentinel{Master: "mymaster", Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, Username: "u", Password: "p"}},
	}, {
		name: "cluster",
		text: "store: {mode: cluster, cluster: {addrs: [\"[::1]:7000\"]}, key_prefix: app:jobs}\n",
		want: config.Store{Mode: "cluster", KeyPrefix: "app:jobs", MaxClockSkew: 2 * time.Second,
			Cluster: config.Cluster{Addrs: []string{"[::1]:7000"}}},
	}, {
		name: "redlock",
		text: `store:
  mode: redlock
  redlock: {urls: ["redis://a:6379", "rediss://b:6380/2", "redis://:pw@c:6379"]}
  max_clock_skew: 1s
`,
		want: config.Store{Mode: "redlock", KeyPrefix: "solocron", MaxClockSkew: time.Second,
			Redlock: config.Redlock{URLs: []string{"redis://a:6379", "rediss://b:6380/2", "redis://:pw@c:6379"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, tc.text+"jobs:\n  - {name: a, schedule: \"@hourly\", command: [x], concurrency: 1}\n")
			if !reflect.DeepEqual(f.Store, tc.want) {
				t.Errorf("Store =\n%#v\nwant\n%#v", f.Store, tc.want)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	s := config.Store{
		URL:      "redis://user:hunter2@host:6379/0",
		Mode:     "redlock",
		Sentinel: config.Sentinel{Master: "m", Addrs: []string{"h:1"}, Username: "su", Password: "sentinel-pw"},
		Redlock:  config.Redlock{URLs: []string{"rediss://:pw-a@a:1", "redis://b:1", "::not a url::pw-c"}},
	}
	r := s.Redacted()
	want := config.Store{
		URL:      "redis://user:xxxxx@host:6379/0",
		Mode:     "redlock",
		Sentinel: config.Sentinel{Master: "m", Addrs: []string{"h:1"}, Username: "su", Password: "xxxxx"},
		Redlock:  config.Redlock{URLs: []string{"rediss://:xxxxx@a:1", "redis://b:1", "xxxxx"}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Redacted() =\n%#v\nwant\n%#v", r, want)
	}
	if s.URL != "redis://user:hunter2@host:6379/0" || s.Redlock.URLs[0] != "rediss://:pw-a@a:1" || s.Sentinel.Password != "sentinel-pw" {
		t.Errorf("Redacted changed the original: %#v", s)
	}
	if got := (config.Store{}).Redacted(); !reflect.DeepEqual(got, config.Store{}) {
		t.Errorf("zero Store Redacted() = %#v, want zero", got)
	}
}

// No way of printing a File, a Store or an Admin shows a password or the
// admin token: not fmt's verbs, not slog.
func TestSecretsNeverPrinted(t *testing.T) {
	f := mustParse(t, `store:
  url: redis://user:${REDIS_PASSWORD}@redis:6379
admin:
  listen: 127.0.0.1:9090
  token: ${TOKEN}
jobs: []
`)
	f.Store.Sentinel.Password = "sentinel-pw"
	f.Store.Redlock.URLs = []string{"redis://:redlock-pw@a:1"}
	secrets := []string{"s3cret", "tok-123", "sentinel-pw", "redlock-pw"}

	var out []string
	for _, v := range []any{f, *f, f.Store, f.Admin, f.Store.Sentinel, f.Store.Redlock, &f.Admin, &f.Store} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			out = append(out, fmt.Sprintf(verb, v))
		}
	}
	out = append(out, f.Store.String(), f.Admin.String())
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		slog.New(h).Info("loaded", "store", f.Store, "admin", f.Admin)
	}
	out = append(out, buf.String())
	for _, s := range out {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%q shows the secret %q", s, secret)
			}
		}
	}
	if !strings.Contains(f.Admin.String(), "127.0.0.1:9090") || !strings.Contains(f.Store.String(), "redis://user:xxxxx@redis:6379") {
		t.Errorf("String() hides too much: %s %s", f.Admin, f.Store)
	}
	if !strings.Contains(buf.String(), `"token_set":true`) {
		t.Errorf("slog output does not say the token is set: %s", buf.String())
	}
}

func TestStoreTLSAndReplicaAcks(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := dir+"/ca.pem", dir+"/client.pem", dir+"/client.key"
	for _, p := range []string{ca, cert, key} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, text string
		want       config.Store
	}{{
		name: "standalone",
		text: `store:
  url: rediss://app:${REDIS_PASSWORD}@redis:6380/0
  tls: {ca_file: ` + ca + `, cert_file: ` + cert + `, key_file: ` + key + `, server_name: redis.internal}
  min_replicas_ack: 1
`,
		want: config.Store{URL: "rediss://app:s3cret@redis:6380/0", Mode: "standalone", KeyPrefix: "solocron", MaxClockSkew: 2 * time.Second,
			TLS:            &config.TLS{CAFile: ca, CertFile: cert, KeyFile: key, ServerName: "redis.internal"},
			MinReplicasAck: 1, MinReplicasAckTimeout: time.Second},
	}, {
		name: "sentinel: tls alone turns TLS on",
		text: `store:
  mode: sentinel
  sentinel: {master: m, addrs: ["10.0.0.1:26379"]}
  tls:
  min_replicas_ack: 2
  min_replicas_ack_timeout: 250ms
`,
		want: config.Store{Mode: "sentinel", KeyPrefix: "solocron", MaxClockSkew: 2 * time.Second,
			Sentinel: config.Sentinel{Master: "m", Addrs: []string{"10.0.0.1:26379"}},
			TLS:      &config.TLS{}, MinReplicasAck: 2, MinReplicasAckTimeout: 250 * time.Millisecond},
	}, {
		name: "redlock with some TLS masters",
		text: `store:
  mode: redlock
  redlock: {urls: ["rediss://a:6379", "redis://b:6379", "rediss://c:6379"]}
  tls: {insecure_skip_verify: true}
`,
		want: config.Store{Mode: "redlock", KeyPrefix: "solocron", MaxClockSkew: 2 * time.Second,
			Redlock: config.Redlock{URLs: []string{"rediss://a:6379", "redis://b:6379", "rediss://c:6379"}},
			TLS:     &config.TLS{InsecureSkipVerify: true}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, tc.text+"jobs: []\n")
			if !reflect.DeepEqual(f.Store, tc.want) {
				t.Errorf("Store =\n%#v\nwant\n%#v", f.Store, tc.want)
			}
		})
	}
}

func TestStoreTLSAndReplicaAckErrors(t *testing.T) {
	dir := t.TempDir()
	cert := dir + "/client.pem"
	if err := os.WriteFile(cert, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{{
		name: "embedded",
		text: "store:\n  tls: {}\n  min_replicas_ack: 1\n  min_replicas_ack_timeout: 1s\njobs: []\n",
		want: []string{
			`2:3: store.tls: needs store.url: the embedded in-process store has no TLS`,
			`3:3: store.min_replicas_ack: needs store.url: the embedded in-process store has no replicas`,
		},
	}, {
		name: "fields",
		text: `store:
  url: redis://h:1
  tls:
    ca_file: missing.pem
    cert_file: ` + cert + `
    key_file: ""
    insecure_skip_verify: "yes"
    verify: false
  min_replicas_ack: -1
  min_replicas_ack_timeout: 0
jobs: []
`,
		want: []string{
			`3:3: store.tls: is set, but store.url is redis://: write rediss:// to use TLS`,
			`4:14: store.tls.ca_file: "missing.pem": no such file`,
			`6:15: store.tls.key_file: must not be empty`,
			`7:27: store.tls.insecure_skip_verify: expected a boolean`,
			`8:5: store.tls.verify: unknown field "verify"`,
			`9:21: store.min_replicas_ack: must be 0 (off) or more, got -1`,
			`10:3: store.min_replicas_ack_timeout: is used only with min_replicas_ack above 0`,
			`10:29: store.min_replicas_ack_timeout: must be greater than 0`,
		},
	}, {
		name: "cert without key, a directory as CA",
		text: "store:\n  url: rediss://h:1\n  tls: {ca_file: testdata, cert_file: " + cert + "}\njobs: []\n",
		want: []string{
			`3:18: store.tls.ca_file: "testdata" is not a regular file`,
			`3:28: store.tls.key_file: is required with cert_file (a client certificate needs its key)`,
		},
	}, {
		name: "redlock",
		text: `store:
  mode: redlock
  redlock: {urls: ["redis://a:1", "redis://b:1", "redis://c:1"]}
  tls: {}
  min_replicas_ack: 1
jobs: []
`,
		want: []string{
			`4:3: store.tls: applies to the rediss:// URLs of redlock.urls, and none is rediss://`,
			`5:3: store.min_replicas_ack: is not used with mode: redlock`,
		},
	}, {
		name: "misplaced",
		text: "store:\n  url: rediss://h:1\n  ca_file: x\njobs: []\n",
		want: []string{`3:3: store.ca_file: unknown field "ca_file" (ca_file belongs under store.tls:)`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parse(t, tc.text)
			if f != nil {
				t.Errorf("Parse returned a File along with errors")
			}
			wantErrors(t, err, tc.want...)
		})
	}
}

func TestStoreDataDir(t *testing.T) {
	const jobs = "jobs:\n  - {name: a, schedule: \"@hourly\", command: [x]}\n"
	f, err := config.Parse("/etc/solocron/table.yaml", []byte("store: {data_dir: state}\n"+jobs))
	if err != nil {
		t.Fatal(err)
	}
	if f.Store.DataDir != "/etc/solocron/state" {
		t.Errorf("relative data_dir = %q, want it beside the table: /etc/solocron/state", f.Store.DataDir)
	}
	if f, err = config.Parse("t.yaml", []byte("store: {data_dir: /var/lib/x}\n"+jobs)); err != nil || f.Store.DataDir != "/var/lib/x" {
		t.Errorf("absolute data_dir = %q, %v", f.Store.DataDir, err)
	}
	_, err = config.Parse("t.yaml", []byte("store: {url: \"redis://h:6379\", data_dir: x}\n"+jobs))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:1:") || !strings.Contains(err.Error(), "store.data_dir: is used only by the embedded store") {
		t.Errorf("data_dir with a url: %v", err)
	}
}

// A table that says only "lease: 3s" is valid: kill_grace, not written,
// is then a third of the lease (at most 10s).
func TestKillGraceDefault(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte(`jobs:
  - {name: short, schedule: "@hourly", command: [x], lease: 3s}
  - {name: long, schedule: "@hourly", command: [x], lease: 5m}
  - {name: set, schedule: "@hourly", command: [x], lease: 3s, kill_grace: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{time.Second, 10 * time.Second, 200 * time.Millisecond} {
		if g := f.Jobs[i].Handler.(*jobs.Command).StopGrace(); g != want {
			t.Errorf("%s: kill_grace %s, want %s", f.Jobs[i].Name, g, want)
		}
	}
}
