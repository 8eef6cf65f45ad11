package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
)

// TestSecurity is the security review's attack against the daemon, as an attacker tried it with
// the documented defaults (loopback admin API) plus a token:
//   - a job's env printed the admin token and the store password, logged at
//     INFO and stored in the run record, which was served without a token;
//   - a DNS-rebinding page (Host and Origin its own) read and mutated;
//   - an HTTP job followed a 307 to another host with its headers;
//   - an HTTP job without a timeout hung on a server that never answers.
func TestSecurity(t *testing.T) {
	t.Parallel()
	tr := &transcript{}
	pw := "pw" + randomHex(t)
	token := "tok" + randomHex(t)
	srv := redistest.Start(t, "--requirepass", pw)

	// The other host: a redirect there must never be followed.
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		io.WriteString(w, "the other host's answer")
	}))
	t.Cleanup(other.Close)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select { // accepts, never answers
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		default:
			// 127.0.0.1 redirects to localhost: another host.
			w.Header().Set("Location", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/steal")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(origin.Close)

	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
store:
  url: redis://:${TEST_REDIS_PASSWORD}@%s/0
  key_prefix: sec
admin:
  token: ${TEST_ADMIN_TOKEN}
jobs:
  - name: envdump           # prints its whole environment
    schedule: "@every 1s"
    command: ["sh", "-c", "env; echo marker-line"]
  - name: named             # was given the token by name, and prints it
    schedule: "@every 1s"
    env: {GIVEN: "${TEST_ADMIN_TOKEN}"}
    command: ["sh", "-c", "echo given=$GIVEN"]
  - name: hook
    schedule: "@every 1s"
    http: {url: "%s/hook", headers: {X-Api-Key: key-secret}}
  - name: hang
    schedule: "@every 1s"
    timeout: 2s
    http: {url: "%s/hang"}
`, srv.Addr(), origin.URL, origin.URL))
	cenv := env("TEST_ADMIN_TOKEN="+token, "TEST_REDIS_PASSWORD="+pw, "SOLOCRON_ADMIN_TOKEN="+token, "REDIS_PASSWORD="+pw)
	p := startReplica(t, tr, cenv, table, "solo")
	addr, url := p.addr, p.url

	runs := func(job string) []map[string]any {
		code, body := httpDo(t, tr, "GET", url("/api/v1/jobs/"+job+"/runs"), token)
		for i := 0; code == http.StatusTooManyRequests && i < 10; i++ { // the default rate limit, 20/s
			time.Sleep(time.Second)
			code, body = httpDo(t, tr, "GET", url("/api/v1/jobs/"+job+"/runs"), token)
		}
		if code != 200 {
			t.Fatalf("runs of %s: %d %s", job, code, body)
		}
		var rl struct{ Runs []map[string]any }
		if err := json.Unmarshal([]byte(body), &rl); err != nil {
			t.Fatal(err)
		}
		// A fresh store records its first seconds' instants missed (the
		// data-loss floor): only runs that started, and ended,
		// say anything. On a loaded machine a run of "@every 1s" outlasts
		// a second: the next is skipped while it runs.
		return slices.DeleteFunc(rl.Runs, func(r map[string]any) bool {
			o := fmt.Sprint(r["outcome"])
			return o == "missed" || o == "running" || o == "waiting" || strings.HasPrefix(o, "skipped")
		})
	}
	testkit.WaitFor(t, 60*time.Second, "runs of every job", func() bool {
		if len(runs("envdump")) > 0 && len(runs("named")) > 0 && len(runs("hook")) > 0 {
			return true
		}
		// Paced under the admin rate limit (20/s): the subtests below
		// need its whole burst (rate_limit counts refusals, the others
		// expect 401 and 421, not 429).
		time.Sleep(250 * time.Millisecond)
		return false
	})

	t.Run("job_environment", func(t *testing.T) { // item 1
		out := fmt.Sprint(runs("envdump")[0]["output"])
		if !strings.Contains(out, "marker-line") || !strings.Contains(out, "PATH=") {
			t.Fatalf("envdump's output: %q", out)
		}
		// Nor what was set for the job's supervisor only (the race-built
		// binary's GORACE, the supervisor markers).
		for _, v := range []string{"SOLOCRON_ADMIN_TOKEN", "REDIS_PASSWORD", "TEST_ADMIN_TOKEN", "GORACE", "SOLOCRON_JOB_SUPERVISOR", "SOLOCRON_JOB_SUPERVISOR_GORACE"} {
			if strings.Contains(out, v+"=") {
				t.Errorf("the job inherited %s: %q", v, out)
			}
		}
		// Named in env:, the job gets it; what it prints is masked.
		if out := fmt.Sprint(runs("named")[0]["output"]); out != "given=[REDACTED]\n" {
			t.Errorf("named's output: %q, want the token masked", out)
		}
	})

	t.Run("reads_need_the_token", func(t *testing.T) { // item 2
		for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/envdump", "/api/v1/jobs/envdump/runs"} {
			if code, _ := httpDo(t, tr, "GET", url(path), ""); code != 401 {
				t.Errorf("GET %s without the token: %d, want 401", path, code)
			}
		}
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if code, _ := httpDo(t, tr, "GET", url(path), ""); code != 200 {
				t.Errorf("GET %s: %d, want 200 (open)", path, code)
			}
		}
		// Job output is not logged at INFO (the log level).
		if recs := p.findLogs("marker-line"); len(recs) > 0 {
			t.Errorf("job output logged at the INFO level: %v", recs[0])
		}
	})

	t.Run("dns_rebinding", func(t *testing.T) { // item 3
		for _, m := range []string{"GET", "POST"} {
			path := "/api/v1/jobs/envdump/runs"
			if m == "POST" {
				path = "/api/v1/jobs/envdump/pause"
			}
			req, _ := http.NewRequest(m, url(path), nil)
			req.Host = "rebind.evil.example:" + strings.Split(addr, ":")[1]
			req.Header.Set("Origin", "http://"+req.Host)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			req.Header.Set("Authorization", "Bearer "+token) // even a token does not help a foreign Host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			tr.addText(string(b))
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host %s: %d %s, want 421", m, path, req.Host, resp.StatusCode, b)
			}
		}
	})

	t.Run("http_jobs", func(t *testing.T) { // item 4
		r := runs("hook")[0]
		if e := fmt.Sprint(r["error"]); r["outcome"] != "failed" || !strings.Contains(e, "redirect refused (another host; follow_redirects: same_host)") {
			t.Errorf("hook's record: %v", r)
		}
		if n := stolen.Load(); n != 0 {
			t.Errorf("the other host got %d requests", n)
		}
		testkit.WaitFor(t, 30*time.Second, "a run of hang recorded timed_out", func() bool {
			for _, h := range runs("hang") {
				if h["outcome"] == "timed_out" {
					return true
				}
			}
			return false
		})
		code, body := httpDo(t, tr, "GET", url("/api/v1/jobs/hook"), token)
		if code != 200 || !strings.Contains(body, `"timeout":"1m0s"`) {
			t.Errorf("hook (no timeout in the table) does not show the 1m default: %d %s", code, body)
		}
	})

	t.Run("rate_limit", func(t *testing.T) { // item 5: 20/s, bursts of 40, by default
		time.Sleep(3 * time.Second) // the bucket fills again
		limited := 0
		start := time.Now()
		for range 60 {
			if code, _ := httpDo(t, tr, "GET", url("/api/v1/jobs/hook"), token); code == http.StatusTooManyRequests {
				limited++
			}
		}
		// The bucket refills at 20/s while the requests are sent: on a
		// loaded machine 60 requests can take seconds, so the fewest
		// refusals to expect follow from the time they took.
		refilled := int(20*time.Since(start).Seconds()) + 1
		if want := 60 - 40 - refilled; limited < min(want, 5) || limited > 30 {
			t.Errorf("%d of 60 requests in %v refused 429, want about %d (burst 40, 20/s)", limited, time.Since(start).Round(time.Millisecond), max(want, 0))
		}
	})

	t.Run("admin_client", func(t *testing.T) { // item 5: a client of its own
		list, err := srv.Client(t, &redis.Options{Password: pw}).ClientList(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(list, "name=solocron-admin ") {
			t.Errorf("no solocron-admin connection in CLIENT LIST:\n%s", list)
		}
	})

	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d", code)
	}
	// Item 1 over everything seen: logs, answers.
	all := tr.String()
	for name, s := range map[string]string{"admin token": token, "store password": pw, "header": "key-secret"} {
		if strings.Contains(all, s) {
			t.Errorf("the %s shows in the transcript", name)
		}
	}
}

// TestAdminTLS: admin.tls serves HTTPS and, with client_ca_file, answers
// only clients with a certificate from that CA; such a replica may listen
// beyond loopback without a token.
func TestAdminTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "solocron.yaml")
	writeFile(t, table, fmt.Sprintf(`
admin:
  tls: {cert_file: %q, key_file: %q, client_ca_file: %q}
jobs: []
`, certs.ServerCert, certs.ServerKey, certs.CAFile))
	port := strings.Split(freeAddr(t), ":")[1]
	p := start(t, nil, "replica", env(), "run", "--config", table, "--admin-listen", "0.0.0.0:"+port, "--log-format", "json")
	get := func(cfg *tls.Config) (int, error) {
		c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get("https://127.0.0.1:" + port + "/healthz")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	testkit.WaitFor(t, 60*time.Second, "an HTTPS answer with a client certificate", func() bool {
		code, _ := get(certs.ClientConfig())
		return code == 200
	})
	noCert := certs.ClientConfig().Clone()
	noCert.Certificates = nil
	if code, err := get(noCert); err == nil {
		t.Errorf("a client without a certificate got %d", code)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Errorf("exit %d", code)
	}
}
