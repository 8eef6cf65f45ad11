//go:build linux

package jobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestParentDeath kills a replica with SIGKILL while it runs a command whose
// program has started a grandchild. With SupervisorMain called (as
// cmd/scheduler does), the program and its grandchild must die with the
// replica; without it, the program (the direct child) still must.
func TestParentDeath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"supervised", "direct"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The replica: this test binary running the "parent" helper,
			// which runs a Command of the "tree" helper.
			replica := exec.Command(exe, dir, mode)
			replica.Env = append(os.Environ(), helperEnv+"=parent", "GORACE="+goraceEnv())
			replica.Stderr = os.Stderr
			if err := replica.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = replica.Process.Kill(); _ = replica.Wait() })

			child := readPid(t, filepath.Join(dir, "child"))
			grandchild := readPid(t, filepath.Join(dir, "grandchild"))
			var supervisor proc
			if mode == "supervised" {
				supervisor = proc{pid: child.ppid}
				supervisor.start, _ = procStat(supervisor.pid)
				if supervisor.pid == replica.Process.Pid {
					t.Fatal("the program's parent is the replica, not a supervisor")
				}
			} else if child.ppid != replica.Process.Pid {
				t.Fatalf("the program's parent is %d, not the replica %d", child.ppid, replica.Process.Pid)
			}

			if err := replica.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = replica.Wait()

			waitDead(t, child)
			if mode == "supervised" {
				waitDead(t, supervisor, grandchild)
			} else if grandchild.alive() {
				// The documented limit without a supervisor; readPid's
				// cleanup kills it.
				t.Logf("without a supervisor the grandchild %d outlives the replica, as documented", grandchild.pid)
			}
		})
	}
}
