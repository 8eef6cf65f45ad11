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

func TestAdminTraceURL(t *testing.T) {
	const jobs = "jobs:\n  - name: a\n    schedule: '@hourly'\n    command: [true]\n"
	f := mustParse(t, "admin:\n  trace_url: https://tempo.example/trace/{trace_id}?org=ops\n"+jobs)
	if f.Admin.TraceURL != "https://tempo.example/trace/{trace_id}?org=ops" {
		t.Errorf("trace_url read as %q", f.Admin.TraceURL)
	}
	for bad, want := range map[string]string{
		"javascript:alert(1)//{trace_id}":      "must be an http:// or https:// URL",
		"tempo.example/trace/{trace_id}":       "is not an absolute URL",
		"https://tempo.example/trace/":         "must contain {trace_id}",
		"'ftp://tempo.example/{trace_id}'":     "must be an http:// or https:// URL",
		"[a, b]":                               "",
		"https:///trace/{trace_id}":            "names no host",
		"'https://tempo.example/\t{trace_id}'": "",
	} {
		_, err := parse(t, "admin:\n  trace_url: "+bad+"\n"+jobs)
		if err == nil || !strings.Contains(err.Error(), "t.yaml:2:14: admin.trace_url") || !strings.Contains(err.Error(), want) {
			t.Errorf("trace_url %s: %v, want t.yaml:2:14: admin.trace_url ... %s", bad, err, want)
		}
	}
}
