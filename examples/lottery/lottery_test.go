package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
)

// printed is one draw, as a replica printed it.
type printed struct {
	replica, runID string
	winners        []int
	token          int64
}

var drawLine = regexp.MustCompile(`^(\S+) drew \[([0-9 ]+)\] for (lottery@\S+) \(fencing token (\d+)\)$`)

// Three replicas of the built program share one Redis server for a few
// seconds, drawing every second: every run is drawn exactly once, by one
// replica, with a fencing token of its own.
func TestEachRunDrawnOnce(t *testing.T) {
	srv := redistest.Start(t)
	bin := build(t)
	const want = 4 // draws to wait for

	draws := make(chan printed, 100)
	var reps []*replica
	for i := 1; i <= 3; i++ {
		reps = append(reps, start(t, bin, draws, "--redis", "redis://"+srv.Addr()+"/0",
			"--replica-id", "replica-"+strconv.Itoa(i), "--schedule", "* * * * * *"))
	}
	var got []printed
	timeout := time.After(20 * time.Second)
	for len(got) < want {
		select {
		case d := <-draws:
			got = append(got, d)
		case <-timeout:
			t.Fatalf("only %d draws after 20s; want %d", len(got), want)
		}
	}
	for _, r := range reps {
		r.stop(t)
	}
	close(draws)
	for d := range draws { // drawn while the others were stopping
		got = append(got, d)
	}

	byRun := map[string][]string{}
	for _, d := range got {
		byRun[d.runID] = append(byRun[d.runID], d.replica)
	}
	for id, who := range byRun {
		if len(who) != 1 {
			t.Errorf("%s drawn %d times, by %v; want once", id, len(who), who)
		}
	}
	// Each start gets its own token. (They rise in the order runs are
	// claimed, which at start-up need not be the order of their instants.)
	tokens := map[int64]string{}
	for _, d := range got {
		if other, dup := tokens[d.token]; dup {
			t.Errorf("%s and %s have the same fencing token %d", other, d.runID, d.token)
		}
		tokens[d.token] = d.runID
	}
	t.Logf("%d draws of %d runs", len(got), len(byRun))
}

// With --no-solocron each replica schedules on its own, and every one of them
// draws the same run: the problem Solocron exists to solve.
func TestWithoutSolocronEveryReplicaDraws(t *testing.T) {
	bin := build(t)
	draws := make(chan printed, 100)
	var reps []*replica
	for i := 1; i <= 3; i++ {
		reps = append(reps, start(t, bin, draws, "--no-solocron",
			"--replica-id", "replica-"+strconv.Itoa(i), "--schedule", "* * * * * *"))
	}
	byRun := map[string]map[string]bool{}
	timeout := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case d := <-draws:
			if byRun[d.runID] == nil {
				byRun[d.runID] = map[string]bool{}
			}
			byRun[d.runID][d.replica] = true
			done = len(byRun[d.runID]) == 3
		case <-timeout:
			t.Fatalf("no run drawn by all three replicas within 20s: %v", byRun)
		}
	}
	for _, r := range reps {
		r.stop(t)
	}
}

// build compiles the lottery program into a temporary directory.
// build builds the program once for the package's tests (each link takes
// seconds); the binary is removed when the last test's cleanup runs.
func build(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "lottery-test-")
		if built.err == nil {
			built.bin = filepath.Join(built.dir, "lottery")
			built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		}
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

var built struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// replica is one running lottery process.
type replica struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	read   sync.WaitGroup // the stdout reader
}

// start runs the program with args; every draw it prints goes to draws.
func start(t *testing.T, bin string, draws chan<- printed, args ...string) *replica {
	t.Helper()
	r := &replica{cmd: exec.Command(bin, args...)}
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // if the test failed before stop
		_ = r.cmd.Process.Kill()
		r.read.Wait()
	})
	r.read.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d, err := parse(sc.Text())
			if err != nil {
				t.Error(err)
				continue
			}
			draws <- d
		}
	})
	return r
}

// stop sends SIGTERM, as a deployment would, and expects a clean exit.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	r.read.Wait() // StdoutPipe: read everything before Wait
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("%s: %v; stderr:\n%s", strings.Join(r.cmd.Args, " "), err, r.stderr.String())
	}
}

func parse(line string) (printed, error) {
	m := drawLine.FindStringSubmatch(line)
	if m == nil {
		return printed{}, &lineError{line}
	}
	d := printed{replica: m[1], runID: m[3]}
	d.token, _ = strconv.ParseInt(m[4], 10, 64)
	seen := map[int]bool{}
	for f := range strings.FieldsSeq(m[2]) {
		n, _ := strconv.Atoi(f)
		if seen[n] {
			return printed{}, &lineError{line}
		}
		seen[n] = true
		d.winners = append(d.winners, n)
	}
	if len(d.winners) != 10 || d.token <= 0 {
		return printed{}, &lineError{line}
	}
	return d, nil
}

type lineError struct{ line string }

func (e *lineError) Error() string { return "unexpected output line: " + strconv.Quote(e.line) }
