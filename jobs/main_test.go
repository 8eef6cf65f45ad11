//go:build linux

package jobs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as every program the tests run (the helper-process
// pattern): with helperEnv set, TestMain runs the named helper instead of the
// tests. SupervisorMain comes first, exactly as in a real main, because
// Command.Run re-executes this binary as the job supervisor.
const helperEnv = "SOLOCRON_JOBS_TEST_HELPER"

func TestMain(m *testing.M) {
	SupervisorMain()
	if name := os.Getenv(helperEnv); name != "" {
		runHelper(name, os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper returns a Command that runs the named helper with args.
func helper(t testing.TB, name string, args ...string) *Command {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Command{Args: append([]string{exe}, args...), Env: map[string]string{helperEnv: name, "GORACE": goraceEnv()}}
}

// goraceEnv keeps GORACE but drops the race detector's one-second sleep at
// exit, which would otherwise add a second to every helper (two with a
// supervisor).
func goraceEnv() string { return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0") }

func runHelper(name string, args []string) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch name {
	case "exit": // exit with status args[0]
		code, _ := strconv.Atoi(arg(0))
		os.Exit(code)
	case "kill-self": // die by SIGKILL
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "env": // print the named variables and the working directory
		for _, k := range args {
			v, ok := os.LookupEnv(k)
			if ok {
				fmt.Printf("%s=%s\n", k, v)
			} else {
				fmt.Printf("%s unset\n", k)
			}
		}
		wd, _ := os.Getwd()
		fmt.Printf("cwd=%s\n", wd)
	case "spam": // write args[0] bytes in lines of args[1] bytes, then a marker
		total, _ := strconv.Atoi(arg(0))
		lineLen, _ := strconv.Atoi(arg(1))
		line := bytes.Repeat([]byte("x"), lineLen-1)
		line = append(line, '\n')
		block := bytes.Repeat(line, max(1, (64<<10)/lineLen)) // total should be a multiple of lineLen
		for written := 0; written < total; {
			n, err := os.Stdout.Write(block[:min(len(block), total-written)])
			if err != nil {
				os.Exit(1)
			}
			written += n
		}
		fmt.Print("END-MARKER\n")
	case "lines": // a few lines on both streams, one of 10000 bytes
		fmt.Fprint(os.Stdout, "out one\nout two\r\n")
		fmt.Fprint(os.Stderr, "err one\n")
		fmt.Fprint(os.Stdout, strings.Repeat("a", 4096)+strings.Repeat("b", 4096)+strings.Repeat("c", 1808)+"\n")
		fmt.Fprint(os.Stdout, "no newline at the end")
	case "trap": // report each SIGTERM and keep running
		term := make(chan os.Signal, 4)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("ready")
		for range term {
			fmt.Println("TERM")
		}
	case "sleeper": // write our pid to args[0], then sleep; args[1]="ignore-term" ignores SIGTERM
		if arg(1) == "ignore-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		writePid(arg(0))
		time.Sleep(time.Hour)
	case "tree": // start a sleeper grandchild, write our pid, sleep
		dir := arg(0)
		spawn(filepath.Join(dir, "grandchild"), nil, nil, "")
		writePid(filepath.Join(dir, "child"))
		time.Sleep(time.Hour)
	case "orphan": // start a grandchild holding our stdout (args[1]: "", "setsid" or "ignore-term"), then exit 0
		dir := arg(0)
		var sys *syscall.SysProcAttr
		sleeperArg := ""
		switch arg(1) {
		case "setsid":
			sys = &syscall.SysProcAttr{Setsid: true}
		case "ignore-term":
			sleeperArg = "ignore-term"
		}
		file := filepath.Join(dir, "grandchild")
		spawn(file, os.Stdout, sys, sleeperArg)
		for { // exit once the grandchild is set up
			if _, err := os.Stat(file); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		fmt.Println("leader done")
	case "parent": // run a tree Command in args[0], supervised if args[1] == "supervised"
		ctx := context.WithValue(context.Background(), superviseKey{}, arg(1) == "supervised")
		c := &Command{Args: []string{os.Args[0], arg(0)}, Env: map[string]string{helperEnv: "tree"}}
		err := c.Run(ctx)
		fmt.Fprintln(os.Stderr, "parent: command returned:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", name)
		os.Exit(2)
	}
}

// spawn starts a sleeper writing its pid to file. It is not waited for.
func spawn(file string, stdout *os.File, sys *syscall.SysProcAttr, sleeperArg string) {
	cmd := exec.Command(os.Args[0], file, sleeperArg)
	cmd.Env = append(os.Environ(), helperEnv+"=sleeper")
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = sys
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writePid writes "pid ppid" to file atomically.
func writePid(file string) {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d", os.Getpid(), os.Getppid()), 0o600); err != nil {
		os.Exit(1)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Exit(1)
	}
}

// proc identifies a process seen by a test: pid plus its start time, so a
// cleanup never kills a process that merely reuses the pid.
type proc struct {
	pid, ppid int
	start     string
}

// readPid waits for file written by writePid and returns the process.
func readPid(t *testing.T, file string) proc {
	t.Helper()
	var p proc
	waitFor(t, 30*time.Second, "pid file "+filepath.Base(file), func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		if _, err := fmt.Sscan(string(b), &p.pid, &p.ppid); err != nil {
			t.Fatalf("pid file %s: %q: %v", file, b, err)
		}
		return true
	})
	p.start, _ = procStat(p.pid)
	t.Cleanup(func() { // never leave a helper behind, whatever the test did
		if st, ok := procStat(p.pid); ok && st == p.start {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	return p
}

// procStat returns the process's state-independent identity (its start
// time) and whether it is alive: present and not a zombie. A zombie is dead
// for our purposes, and orphans may stay zombies when pid 1 does not reap.
func procStat(pid int) (start string, alive bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is the first, start time the 20th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return "", false
	}
	return f[19], f[0] != "Z" && f[0] != "X"
}

func (p proc) alive() bool {
	st, ok := procStat(p.pid)
	return ok && st == p.start
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a test to read while a run writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
