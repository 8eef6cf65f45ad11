package main

import (
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// A trigger that gets no answer from the store (Redis stalled: SIGSTOP, a
// long fork, a network that drops packets) fails, and says the request may
// still have reached the store: a stalled Redis runs what it had read once
// it resumes, so the manual run may happen, and a second trigger sent in
// the belief that the first did nothing would be a second run.
func TestTriggerUnansweredSaysItMayHaveReachedTheStore(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Reads everything, answers nothing.
			go func() { _, _ = io.Copy(io.Discard, conn) }()
		}
	}()
	dir := t.TempDir()
	writeTable(t, dir, ln.Addr().String(), `
jobs:
  - {name: once, schedule: "@yearly", command: ["true"]}
`)
	r := runCLI(t, nil, env(), "trigger", "once", "--wait", "0", "--config", filepath.Join(dir, "solocron.yaml"))
	if r.code != exitFailure {
		t.Fatalf("trigger against a store that never answers exited %d, want %d\n%s", r.code, exitFailure, r.stderr)
	}
	if !strings.Contains(r.stderr, "may still have reached the store") || !strings.Contains(r.stderr, "scheduler status once") {
		t.Errorf("trigger against a store that never answers says:\n%s", r.stderr)
	}
}
