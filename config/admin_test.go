package config_test

import (
	"strings"
	"testing"
)

func TestAdminReadOnly(t *testing.T) {
	f := mustParse(t, "admin:\n  listen: 127.0.0.1:9090\n  read_only: true\njobs:\n  - name: a\n    schedule: '@hourly'\n    command: [true]\n")
	if !f.Admin.ReadOnly {
		t.Error("read_only: true not read")
	}
	_, err := parse(t, "admin:\n  read_only: maybe\njobs:\n  - name: a\n    schedule: '@hourly'\n    command: [true]\n")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:2:14: admin.read_only") {
		t.Errorf("a bad read_only: %v", err)
	}
}
