package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
)

// listeningPorts lists the TCP ports process pid listens on: its sockets
// (/proc/PID/fd) that /proc/net/tcp and tcp6 show in state LISTEN.
func listeningPorts(t *testing.T, pid int) []int {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot read the process's sockets: %v", err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports = append(ports, int(p))
			}
		}
		f.Close()
	}
	return ports
}

// The README's first command, restarted: a daemon on the embedded store
// keeps its history and a paused job stays paused, through SIGTERM and
// kill -9; the CLI reaches it through its admin API; a second daemon on
// the same data directory is refused; nothing but the admin listener
// accepts connections.
func TestEmbeddedDaemonKeepsItsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "tick.ledger")
	table := filepath.Join(dir, "solocron.yaml")
	addr := freeAddr(t)
	token := randomHex(t)
	writeFile(t, table, fmt.Sprintf(`
admin:
  listen: %s
  token: %s
jobs:
  - name: tick
    schedule: "@every 1s"
    command: %s
  - name: nightly
    schedule: "@daily"
    command: ["true"]
  - name: broken
    schedule: "@yearly"
    command: ["false"]
`, addr, token, ledgerCommand(ledger, "")))
	cli := func(code int, args ...string) result {
		t.Helper()
		r := runCLI(t, nil, env(), append(args, "--config", table)...)
		r.want(t, code, args...)
		return r
	}
	up := func(name string) *proc {
		t.Helper()
		p := start(t, nil, name, env(), "run", "--config", table, "--log-format", "json")
		testkit.WaitFor(t, 60*time.Second, name+" ready", func() bool { return testkit.HTTPStatus("http://"+addr+"/readyz") == 200 })
		return p
	}

	p := up("first")
	first := p
	testkit.WaitFor(t, 30*time.Second, "two tick runs", func() bool { return len(readLedger(t, ledger)) >= 2 })
	if ports := listeningPorts(t, p.cmd.Process.Pid); len(ports) != 1 || strconv.Itoa(ports[0]) != addr[strings.LastIndex(addr, ":")+1:] {
		t.Errorf("the daemon listens on TCP ports %v, want only the admin API's %s", ports, addr)
	}
	// The CLI reaches the daemon through its admin API.
	cli(0, "pause", "nightly")
	cli(0, "trigger", "tick", "--wait", "30s")
	if r := cli(1, "trigger", "broken", "--wait", "30s"); !strings.Contains(r.stdout, "failed") {
		t.Errorf("trigger of a failing job: %q", r.stdout)
	}
	from := time.Now().Add(-time.Hour).Truncate(time.Minute)
	if r := cli(0, "backfill", "tick", "--from", from.Format(time.RFC3339), "--to", from.Add(4*time.Second).Format(time.RFC3339)); !strings.Contains(r.stdout, "5 of 5 instants ran") {
		t.Errorf("backfill through the admin API:\n%s", r.stdout)
	}
	if r := cli(0, "status"); !strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, "yes") {
		t.Errorf("status through the admin API:\n%s", r.stdout)
	}
	// A second daemon on the same data directory is refused, clearly.
	second := runCLI(t, nil, env(), "run", "--config", table, "--admin-listen", freeAddr(t), "--log-format", "json")
	second.want(t, 1, "run (second daemon)")
	if !strings.Contains(second.stderr, "locked by scheduler pid "+strconv.Itoa(p.cmd.Process.Pid)) || !strings.Contains(second.stderr, "solocron.data") {
		t.Errorf("second daemon's error: %s", second.stderr)
	}

	history := func() []string {
		t.Helper()
		var runs []struct{ ID string }
		r := cli(0, "history", "tick", "--json", "--limit", "100")
		if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
			t.Fatalf("history --json: %v\n%s", err, r.stdout)
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		return ids
	}
	before := history()

	for i, stop := range []func(*proc){
		func(p *proc) { p.signal(syscall.SIGKILL); p.wait(30 * time.Second) },
		func(p *proc) {
			p.signal(syscall.SIGTERM)
			if code := p.wait(60 * time.Second); code != 0 {
				t.Errorf("exit %d after SIGTERM", code)
			}
		},
	} {
		stop(p)
		p = up(fmt.Sprintf("restart-%d", i+1))
		var st struct{ Paused bool }
		if err := json.Unmarshal([]byte(cli(0, "status", "nightly", "--json").stdout), &st); err != nil || !st.Paused {
			t.Errorf("after restart %d: nightly paused %v (%v), want still paused", i+1, st.Paused, err)
		}
		after := strings.Join(history(), " ")
		for _, id := range before {
			if !strings.Contains(after, id) {
				t.Errorf("after restart %d: run %s is gone from the history", i+1, id)
			}
		}
	}
	p.signal(syscall.SIGTERM)
	p.wait(60 * time.Second)
	ended := 0
	for _, rec := range first.findLogs("run ended") {
		if rec["outcome"] == "succeeded" {
			ended++
			if _, ok := rec["err"]; ok {
				t.Errorf("a succeeded run's line carries err: %v", rec)
			}
		}
	}
	if ended == 0 {
		t.Error("no succeeded run logged \"run ended\"")
	}
	seen := map[string]bool{}
	for _, l := range readLedger(t, ledger) {
		if seen[l.runID] {
			t.Errorf("run %s started twice", l.runID)
		}
		seen[l.runID] = true
	}
}
