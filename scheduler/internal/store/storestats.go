package store

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// StatOutcomes are the outcomes whose last time the store keeps per job
// (lua/parts/stats.lua's OUTCOMES, in the same order). ParseStats reads them by
// name, so an outcome listed here that the store does not report is
// absent from the gauge, never wrong.
var StatOutcomes = [...]Outcome{Succeeded, Failed, TimedOut, LeaseLost, Interrupted, Replaced, Missed, SkippedOverlap, SkippedPaused, SkippedBlackout, Cancelled}

// JobStats is what the store keeps about a job's runs for the metrics,
// as the heartbeat last read it. Every replica reads the same values.
type JobStats struct {
	LastSuccess time.Time
	Fails       int64
	LastRun     [len(StatOutcomes)]time.Time // by StatOutcomes
}

// Latest is the time of the job's last run of any outcome.
func (st JobStats) Latest() time.Time {
	var t time.Time
	for _, r := range st.LastRun {
		if r.After(t) {
			t = r
		}
	}
	return t
}

// ParseStats reads lua/parts/stats.lua's stats: "ok|fails|outcome=ms,outcome=ms".
// What it cannot read it leaves zero: a metric is then absent, never wrong.
// It allocates nothing: the closer reads one for every run it closes.
func ParseStats(s string) JobStats {
	var st JobStats
	ok, rest, found := strings.Cut(s, "|")
	if !found {
		return st
	}
	fails, rest, found := strings.Cut(rest, "|")
	if !found {
		return st
	}
	st.LastSuccess = msTimeOrZero(ok)
	st.Fails = intOrZero(fails)
	for more := true; more; {
		var kv string
		kv, rest, more = strings.Cut(rest, ",")
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

// MergeStats combines the statistics of the Redlock masters that answered:
// the latest of each time (a run's close reached every master it could),
// and the median failure streak (a master that missed a close, or a
// claim, counts differently; the majority's count wins). Every replica
// that heard from the same masters computes the same.
func MergeStats(per []JobStats) JobStats {
	var out JobStats
	fails := make([]int64, 0, len(per))
	for _, st := range per {
		if st.LastSuccess.After(out.LastSuccess) {
			out.LastSuccess = st.LastSuccess
		}
		for i, t := range st.LastRun {
			if t.After(out.LastRun[i]) {
				out.LastRun[i] = t
			}
		}
		fails = append(fails, st.Fails)
	}
	if len(fails) > 0 {
		slices.Sort(fails)
		out.Fails = fails[len(fails)/2]
	}
	return out
}

func msTimeOrZero(s string) time.Time {
	if s == "" { // most of a heartbeat's: ParseInt's error would be an allocation
		return time.Time{}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
