//go:build faults

package faults_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The binaries every scenario runs, built once.
var (
	schedulerBin string
	faultjobBin  string
	// scriptNames maps the SHA of each scheduler script to its name, so the
	// proxy can tell a claim from a renewal.
	scriptNames map[string]string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "solocron-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	schedulerBin = filepath.Join(dir, "scheduler")
	faultjobBin = filepath.Join(dir, "faultjob")
	for _, b := range []struct{ out, pkg string }{
		{schedulerBin, "github.com/solocron/solocron/cmd/scheduler"},
		{faultjobBin, "github.com/solocron/solocron/faults/internal/faultjob"},
	} {
		build := exec.Command("go", "build", "-o", b.out, b.pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", b.pkg, err)
			return 1
		}
	}
	if scriptNames, err = loadScripts(); err != nil {
		fmt.Fprintln(os.Stderr, "reading the scheduler's scripts:", err)
		return 1
	}
	code := m.Run()
	printTable()
	return code
}
