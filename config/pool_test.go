package config_test

import (
	"strings"
	"testing"

	"github.com/solocron/solocron/config"
)

// pools: sizes the pools; a job's pool: names one, and carries its size.
func TestPoolsLoad(t *testing.T) {
	text := `pools: {exports: 3, "mail.out": 1}
defaults:
  pool: exports
jobs:
  - {name: a, schedule: "@hourly", command: [x]}
  - {name: b, schedule: "@hourly", command: [x], pool: mail.out}
`
	f, err := config.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if f.Pools["exports"] != 3 || f.Pools["mail.out"] != 1 || len(f.Pools) != 2 {
		t.Errorf("pools %v", f.Pools)
	}
	if j := f.Jobs[0]; j.Pool != "exports" || j.PoolSize != 3 {
		t.Errorf("job a: pool %q size %d", j.Pool, j.PoolSize)
	}
	if j := f.Jobs[1]; j.Pool != "mail.out" || j.PoolSize != 1 {
		t.Errorf("job b: pool %q size %d", j.Pool, j.PoolSize)
	}
}

// Every mistake with pools is reported at its line and field.
func TestPoolErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"pools: {exports: 3}\njobs:\n  - {name: a, schedule: \"@hourly\", command: [x], pool: exprots}\n",
			`t.yaml:3:50: jobs[0].pool: unknown pool "exprots" (did you mean "exports"?)`},
		{"jobs:\n  - {name: a, schedule: \"@hourly\", command: [x], pool: exports}\n",
			`t.yaml:2:50: jobs[0].pool: unknown pool "exports"; declare it at the top of the table: pools: {exports: 3}`},
		{"pools: {exports: 0}\njobs: []\n", `t.yaml:1:18: pools.exports: a pool needs at least 1 slot (got 0)`},
		{"pools: {exports: -2}\njobs: []\n", `t.yaml:1:18: pools.exports: a pool needs at least 1 slot (got -2)`},
		{"pools: {exports: many}\njobs: []\n", `t.yaml:1:18: pools.exports:`},
		{"pools: {\"a b\": 2}\njobs: []\n", `t.yaml:1:9: pools["a b"]: "a b" is not a valid pool name`},
		{"pools: {\"p{x}\": 2}\njobs: []\n", `is not a valid pool name`},
		{"pools: [exports]\njobs: []\n", `t.yaml:1:8: pools: expected a mapping of pool names to sizes`},
		{"pools: {exports: 10001}\njobs: []\n", `t.yaml:1:18: pools.exports: a pool has at most 10000 slots (got 10001)`},
		{"jobs:\n  - name: wide\n    schedule: \"@hourly\"\n    command: [x]\n    concurrency: 2000000\n",
			`t.yaml:5:5: jobs[0].concurrency: must be at most 10000 (got 2000000)`},
		{"store:\n  mode: redlock\n  redlock: {urls: [\"redis://a:1\", \"redis://b:1\", \"redis://c:1\"]}\npools: {exports: 3}\njobs: []\n",
			`t.yaml:4:1: pools: need one Redis deployment: in redlock mode`},
	} {
		_, err := config.Parse("t.yaml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.text, err, tc.want)
		}
	}
}
