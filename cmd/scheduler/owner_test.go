package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An admin API without a token listens on loopback, which every local user
// reaches: it answers only its own user (and root). Another user's CLI and
// browser get 403 and nothing happens; /healthz, /readyz and /metrics stay
// open. The other user is "nobody", so that part needs root.
func TestAdminAPIWithoutTokenIsItsUsersAlone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer users are told apart on Linux only")
	}
	t.Parallel()
	// Everything another user runs or reads must be reachable by it.
	dir, err := os.MkdirTemp("", "solocron-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	table := filepath.Join(dir, "t.yaml")
	writeFile(t, table, "admin: {listen: \""+addr+"\"}\njobs:\n  - name: lottery\n    schedule: \"@every 1h\"\n    command: [\"true\"]\n")
	if err := os.Chmod(table, 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "owner", env("STATE_DIRECTORY="+t.TempDir()), "run", "--config", table, "--log-format", "json")
	p.waitLog(60*time.Second, "admin API and console listening", 1)

	get := func(path string) int {
		t.Helper()
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/api/v1/jobs", "/", "/metrics"} {
		if code := get(path); code != http.StatusOK {
			t.Errorf("this user's GET %s: %d, want 200", path, code)
		}
	}

	if os.Getuid() != 0 {
		t.Skip("another user's requests are tried as nobody, which needs root")
	}
	other := filepath.Join(dir, "scheduler")
	if err := copyFile(bin, other, 0o755); err != nil {
		t.Fatal(err)
	}
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(other, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asNobody("trigger", "lottery", "--config", table, "--wait", "0s")
	if err == nil || !strings.Contains(out, "answers only its own user") {
		t.Errorf("nobody's trigger: %v\n%s\nwant it refused, saying why", err, out)
	}
	if out, err := asNobody("status", "--config", table); err == nil || !strings.Contains(out, "403") && !strings.Contains(out, "answers only its own user") {
		t.Errorf("nobody's status: %v\n%s\nwant it refused", err, out)
	}
	// The refusal changed nothing: no manual run was asked for.
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/api/v1/jobs/lottery/runs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "manual") {
		t.Errorf("a refused trigger left a manual run: %s", body)
	}
	if n := len(p.findLogs("refused a request from another local user")); n != 1 {
		t.Errorf("the refusals were logged %d times, want once (per user)", n)
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}
