package main

import (
	"flag"
	"io"
	"log/slog"
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		pos   []string
		limit int
	}{
		{[]string{"job"}, []string{"job"}, 0},
		{[]string{"job", "--limit", "5"}, []string{"job"}, 5},
		{[]string{"--limit=5", "job"}, []string{"job"}, 5},
		{[]string{"a", "--limit", "2", "b"}, []string{"a", "b"}, 2},
		{[]string{"--limit", "3", "--", "--limit", "x"}, []string{"--limit", "x"}, 3},
		{nil, nil, 0},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		limit := fs.Int("limit", 0, "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *limit != tc.limit {
			t.Errorf("%q: positional %q, limit %d, err %v; want %q, %d", tc.args, pos, *limit, err, tc.pos, tc.limit)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"job", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument was accepted")
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9090": true, "127.1.2.3:9090": true, "[::1]:9090": true, "localhost:9090": true,
		":9090": false, "0.0.0.0:9090": false, "[::]:9090": false, "10.0.0.1:9090": false,
		"example.com:9090": false, "localhost.example.com:9090": false, "garbage": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestTracingWanted(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": " TRUE "}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false},
	} {
		if got := tracingWanted(func(k string) string { return tc.env[k] }, quiet); got != tc.want {
			t.Errorf("%v: tracing %v, want %v", tc.env, got, tc.want)
		}
	}
}
