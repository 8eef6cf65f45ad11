package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
)

// tableOf returns a job table of n jobs of the three kinds.
func tableOf(n int) []byte {
	var b strings.Builder
	b.WriteString("store: {url: \"redis://:${REDIS_PASSWORD}@redis:6379/0\"}\ndefaults:\n  timezone: Europe/Berlin\n  env: {LOG_LEVEL: info}\njobs:\n")
	for i := range n {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "  - name: job-%d\n    schedule: \"%d * * * *\"\n    command: [\"./run\", \"--shard\", \"%d\"]\n    env: {SHARD: \"%d\"}\n    timeout: 10m\n    retries: 2\n", i, i%60, i, i)
		case 1:
			fmt.Fprintf(&b, "  - name: job-%d\n    schedule: \"@every %ds\"\n    http:\n      method: POST\n      url: https://svc.internal/jobs/%d\n      headers: {Authorization: \"Bearer ${TOKEN}\"}\n    lease: 1m\n", i, 10+i%50, i)
		default:
			fmt.Fprintf(&b, "  - name: job-%d\n    schedule: \"0 %d * * * *\"\n    timezone: America/New_York\n    command: [sh, -c, 'echo $HOME']\n    overlap: wait\n    max_wait: 30s\n", i, i%60)
		}
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	data := tableOf(1000)
	opt := config.WithLookupEnv(lookup)
	if _, err := config.Parse("bench.yaml", data, opt); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse("bench.yaml", data, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseJitter is a table of 10,000 jobs that all inherit a
// jitter, each with a schedule of its own (every hour, at its own second,
// in a zone with daylight saving time): each schedule is walked to check
// the jitter fits its shortest interval.
func BenchmarkParseJitter(b *testing.B) {
	var t strings.Builder
	t.WriteString("defaults:\n  jitter: 5m\n  timezone: Europe/Berlin\n  command: [./run]\njobs:\n")
	for i := range 10000 {
		fmt.Fprintf(&t, "  - name: job-%d\n    schedule: \"%d %d * * * *\"\n", i, i%60, i/60%60)
	}
	data := []byte(t.String())
	if _, err := config.Parse("bench.yaml", data); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse("bench.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
