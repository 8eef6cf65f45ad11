package main

// The command's tests run the real binary, built once in TestMain (with
// -race when the tests are), against real redis-server processes started by
// internal/redistest on free ports.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/testkit"
)

// testVersion, testCommit and testDate are stamped with -ldflags when the
// binary is built, as the release tooling does.
const (
	testVersion = "v0.0.0-e2e"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-11-26T10:00:00Z"
)

var bin string

// parallelDaemons is how many of the package's t.Parallel tests run at
// once unless -parallel says otherwise: they start daemons and
// redis-servers and wait on them (replicas polling, leases running out), so
// more than GOMAXPROCS of them share two cores well.
const parallelDaemons = 8

func TestMain(m *testing.M) {
	flag.Parse()
	testkit.RaiseParallel(parallelDaemons)
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "solocron-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "scheduler")
	args := []string{"build", "-o", bin, "-ldflags", "-X main.version=" + testVersion + " -X main.commit=" + testCommit + " -X main.date=" + testDate}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the scheduler binary:", err)
		return 1
	}
	return m.Run()
}

// transcript gathers everything a test saw (process output, HTTP answers)
// so that it can be searched for secrets at the end.
type transcript struct {
	mu    sync.Mutex
	parts []func() string
}

func (tr *transcript) add(f func() string) {
	if tr == nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.parts = append(tr.parts, f)
}

func (tr *transcript) addText(s string) { tr.add(func() string { return s }) }

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	for _, f := range tr.parts {
		b.WriteString(f())
		b.WriteByte('\n')
	}
	return b.String()
}

// env is the environment for the processes a test starts: the test's own,
// without what would change the scheduler's behaviour, plus extra.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "SOLOCRON_") || strings.HasPrefix(kv, "GORACE=") {
			continue
		}
		out = append(out, kv)
	}
	// A race-enabled binary sleeps 1s at exit by default; every command
	// job's supervisor is one, and would last a second longer than its job.
	// A race is still reported, and the process still exits 66.
	out = append(out, "GORACE=atexit_sleep_ms=0")
	return append(out, extra...)
}

// proc is a scheduler process running in the background.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout testkit.SyncBuffer
	stderr testkit.SyncBuffer
	done   chan struct{}
	code   int
}

// start starts the binary with args; it is killed in t.Cleanup if the test
// left it running.
func start(t *testing.T, tr *transcript, name string, environ []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = environ
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// If the test binary dies, so does the replica (and, through its
	// supervisor, its jobs).
	p.cmd.SysProcAttr = redistest.DieWithParent()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tr.add(p.output)
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, p.output())
		}
	})
	return p
}

func (p *proc) output() string { return p.stdout.String() + p.stderr.String() }

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v", p.name, sig, err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("%s did not exit within %s", p.name, timeout)
		return -1
	}
}

// records parses the JSON log lines of the process's stderr.
func (p *proc) records() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// findLogs returns the log records whose message contains msg.
func (p *proc) findLogs(msg string) []map[string]any {
	var out []map[string]any
	for _, r := range p.records() {
		if m, _ := r["msg"].(string); strings.Contains(m, msg) {
			out = append(out, r)
		}
	}
	return out
}

// waitLog waits for n log records whose message contains msg.
func (p *proc) waitLog(timeout time.Duration, msg string, n int) []map[string]any {
	p.t.Helper()
	var got []map[string]any
	testkit.WaitFor(p.t, timeout, fmt.Sprintf("%s to log %q %d times", p.name, msg, n), func() bool {
		got = p.findLogs(msg)
		return len(got) >= n
	})
	return got
}

type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the binary to completion.
func runCLI(t *testing.T, tr *transcript, environ []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if err != nil && r.code < 0 {
		t.Fatalf("scheduler %v: %v", args, err)
	}
	tr.addText(r.stdout + r.stderr)
	return r
}

func (r result) want(t *testing.T, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("scheduler %v exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
}

// httpDo sends a request and returns the status and body.
func httpDo(t *testing.T, tr *transcript, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	tr.addText(string(b))
	return resp.StatusCode, string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ledgerCommand is a command job that appends "<run id> <replica> <token>"
// to path; lines this short are appended atomically (O_APPEND).
func ledgerCommand(path string, extra string) string {
	return fmt.Sprintf(`["sh", "-c", "echo \"$SOLOCRON_RUN_ID $SOLOCRON_REPLICA_ID $SOLOCRON_FENCING_TOKEN\" >> %s%s"]`, path, extra)
}

type ledgerLine struct {
	runID, replica string
	token          int64
}

func readLedger(t *testing.T, path string) []ledgerLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []ledgerLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("bad ledger line %q", line)
		}
		tok, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad token in ledger line %q", line)
		}
		out = append(out, ledgerLine{f[0], f[1], tok})
	}
	return out
}

// scheduledAt parses the instant of a scheduled run id "<job>@<RFC 3339>".
func scheduledAt(runID string) (time.Time, bool) {
	_, s, ok := strings.Cut(runID, "@")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// sample is one sample of Prometheus text.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseMetrics(t *testing.T, text string) []sample {
	t.Helper()
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad metric line %q", line)
		}
		m := sample{name: line[:i], labels: map[string]string{}, value: v}
		if j := strings.IndexByte(line[:i], '{'); j >= 0 {
			m.name = line[:j]
			for _, kv := range labelRE.FindAllStringSubmatch(line[j:i], -1) {
				m.labels[kv[1]] = kv[2]
			}
		}
		out = append(out, m)
	}
	return out
}

// sum adds the samples named name whose labels include want.
func sum(ms []sample, name string, want map[string]string) (total float64, found bool) {
next:
	for _, m := range ms {
		if m.name != name {
			continue
		}
		for k, v := range want {
			if m.labels[k] != v {
				continue next
			}
		}
		total += m.value
		found = true
	}
	return total, found
}
