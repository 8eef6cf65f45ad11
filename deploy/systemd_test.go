package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const unitFile = "systemd/solocron.service"

// stopBudget is what the scheduler may take after SIGTERM beyond its
// --shutdown-grace: a cancelled command's kill_grace (10s at most by
// default), closing the records (5s), stopping the admin server (5s) and
// flushing telemetry (5s). Every stop timeout shipped here must exceed
// the grace plus this, or runs in flight are SIGKILLed before they drain.
const stopBudget = 25 * time.Second

// unitDirectives reads a unit file into section -> key -> values, in order.
func unitDirectives(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a directive: %q", path, n, line)
			}
			k = strings.TrimSpace(k)
			out[section][k] = append(out[section][k], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The unit is hardened, reloads on SIGHUP, keeps the embedded store's data in
// its state directory and gives runs in flight time to drain.
func TestSystemdUnitSettings(t *testing.T) {
	u := unitDirectives(t, unitFile)
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service] section")
	}
	one := func(key string) string {
		t.Helper()
		v := svc[key]
		if len(v) != 1 {
			t.Errorf("%s: want exactly one %s=, have %q", unitFile, key, v)
			return ""
		}
		return v[0]
	}
	for key, want := range map[string]string{
		"DynamicUser":     "yes",
		"StateDirectory":  "solocron",
		"ProtectSystem":   "strict",
		"NoNewPrivileges": "yes",
		"Restart":         "on-failure",
		"ExecReload":      "/bin/kill -HUP $MAINPID",
		// SIGTERM to the scheduler alone: with control-group, systemd
		// would stop every command job at once and nothing would drain.
		"KillMode": "mixed",
	} {
		if got := one(key); got != want {
			t.Errorf("%s: %s=%s, want %s", unitFile, key, got, want)
		}
	}

	start := strings.Fields(one("ExecStart"))
	if len(start) < 2 || start[0] != "/usr/local/bin/scheduler" || start[1] != "run" {
		t.Fatalf("%s: ExecStart=%q, want /usr/local/bin/scheduler run ...", unitFile, start)
	}
	grace := 30 * time.Second // run's default --shutdown-grace
	for i, a := range start {
		if v, ok := strings.CutPrefix(a, "--shutdown-grace="); ok {
			start = append(start[:i], "--shutdown-grace", v)
		}
	}
	for i := 0; i+1 < len(start); i++ {
		if start[i] == "--shutdown-grace" {
			d, err := time.ParseDuration(start[i+1])
			if err != nil {
				t.Fatalf("ExecStart --shutdown-grace %q: %v", start[i+1], err)
			}
			grace = d
		}
	}
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if stop <= grace+stopBudget {
		t.Errorf("%s: TimeoutStopSec=%s leaves runs in flight no time to drain: want more than --shutdown-grace %s + %s", unitFile, stop, grace, stopBudget)
	}
}

// systemd-analyze verify accepts the unit without a word. It exits 0 on
// unknown keys and bad values (it only warns), so any output fails.
func TestSystemdUnitVerifies(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("SOLOCRON_REQUIRE_SYSTEMD") == "1" {
			t.Fatalf("systemd-analyze not found and SOLOCRON_REQUIRE_SYSTEMD=1: %v", err)
		}
		t.Skip("systemd-analyze not found (apt-get install systemd); set SOLOCRON_REQUIRE_SYSTEMD=1 to make this a failure")
	}
	// verify checks that ExecStart's program exists and is executable:
	// point it at this test binary instead of /usr/local/bin/scheduler,
	// and change nothing else.
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(data), "/usr/local/bin/scheduler", self)
	path := filepath.Join(t.TempDir(), "solocron.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
	// The hardening, as systemd rates it: an exposure of at most 2.0 of 10
	// (it is 1.7; a unit without DynamicUser, ProtectSystem and an empty
	// capability set rates 4.0).
	out, err = exec.Command(tool, "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security --offline=true --threshold=20 %s: %v\n%s", unitFile, err, out)
	}
}
