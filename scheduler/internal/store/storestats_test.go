package store

import (
	"strconv"
	"strings"
	"testing"
)

// parseStatsSplit is ParseStats as it was written with strings.Split: the
// reference the allocation-free one must agree with.
func parseStatsSplit(s string) JobStats {
	var st JobStats
	f := strings.SplitN(s, "|", 3)
	if len(f) != 3 {
		return st
	}
	st.LastSuccess = msTimeOrZero(f[0])
	st.Fails, _ = strconv.ParseInt(f[1], 10, 64)
	for _, kv := range strings.Split(f[2], ",") {
		o, ms, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for i, so := range StatOutcomes {
			if string(so) == o {
				st.LastRun[i] = msTimeOrZero(ms)
			}
		}
	}
	return st
}

func TestParseStats(t *testing.T) {
	for _, s := range []string{
		"", "|", "||", "1|2", "1764000000000|0|", "1764000000000|3|succeeded=1764000000000",
		"1764000000000|3|succeeded=1764000000000,failed=1764000001000,missed=1764000002000",
		"0|x|failed=5,,=,succeeded,unknown=7,failed=9", "1|2|succeeded=3|4", "-5|-1|missed=-3,timed_out=12",
	} {
		if got, want := ParseStats(s), parseStatsSplit(s); got != want {
			t.Errorf("ParseStats(%q) = %+v, want %+v", s, got, want)
		}
	}
	// Nor for a job that never ran or never succeeded: its empty fields
	// are most of a heartbeat's (an error from ParseInt allocates).
	for _, s := range []string{"1764000000000|3|succeeded=1764000000000,failed=1764000001000,missed=1764000002000",
		"|0|", "||", "|0|failed=1764000001000,missed="} {
		if n := testing.AllocsPerRun(100, func() { _ = ParseStats(s) }); n != 0 {
			t.Errorf("ParseStats(%q) allocates %.0f times, want none", s, n)
		}
	}
}
