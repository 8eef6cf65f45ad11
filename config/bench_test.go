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
