package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/luascript"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// Where a script's time goes, split by INFO commandstats: the script call's
// own time (EVALSHA) holds the commands the script runs (each counted on
// its own line too), so EVALSHA's time minus theirs is what the script
// spends outside Redis commands: its top-level chunk (run on every call:
// each local function a closure made again), its Lua, and each
// redis.call's conversion of arguments and reply. BenchmarkScriptTime
// reports per run (or per call) lua-us: that remainder; cmd-us: the
// commands' own time; and the least lua-us of a batch seen (-min), the
// nearest to the script's own cost on a shared machine.

// cmdStat is one line of INFO commandstats.
type cmdStat struct{ calls, usec float64 }

func commandStats(tb testing.TB, c *redis.Client) map[string]cmdStat {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]cmdStat{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s cmdStat
		for f := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return out
}

// notInner are the commands that are not run by scripts: the script calls
// themselves and what the harness and the client send.
var notInner = []string{"evalsha", "eval", "info", "config|resetstat", "script|load", "hello", "client|setinfo", "ping"}

// scriptSplit returns, between two readings, the script calls' time, the
// time and the number of the commands they ran.
func scriptSplit(before, after map[string]cmdStat) (script, inner, calls float64) {
	for name, a := range after {
		d := a.usec - before[name].usec
		n := a.calls - before[name].calls
		switch {
		case name == "evalsha" || name == "eval":
			script += d
		case !slices.Contains(notInner, name):
			inner += d
			calls += n
		}
	}
	return script, inner, calls
}

// splitTimer accumulates scriptSplit over a benchmark's batches.
type splitTimer struct {
	c                     *redis.Client
	lua, cmd, calls, runs float64
	least                 float64
}

func (s *splitTimer) batch(b *testing.B, runs int, f func()) {
	b.Helper()
	before := commandStats(b, s.c)
	f()
	script, inner, calls := scriptSplit(before, commandStats(b, s.c))
	s.lua += script - inner
	s.cmd += inner
	s.calls += calls
	s.runs += float64(runs)
	if per := (script - inner) / float64(runs); s.runs == float64(runs) || per < s.least {
		s.least = per
	}
}

func (s *splitTimer) report(b *testing.B) {
	b.ReportMetric(s.lua/s.runs, "lua-us/run")
	b.ReportMetric(s.least, "lua-us/run-min")
	b.ReportMetric(s.cmd/s.runs, "cmd-us/run")
	b.ReportMetric(s.calls/s.runs, "cmds/run")
}

// assembled returns a store script as Redis runs it: lua/<name>.lua after
// the parts it uses.
func assembled(name string) string {
	return luascript.LoadParts(store.LuaFiles, "lua/parts").Script(store.LuaFiles, "lua", name)
}

func BenchmarkScriptTime(b *testing.B) {
	s, c := benchStore(b)
	ctx := context.Background()
	const batch = 64
	js := benchJobs(b, s, batch)

	// A script call alone, and each hot script's top-level chunk (a call
	// with no runs): what every call pays before its first run.
	calls := []struct {
		name, src string
		argv      []any
	}{
		{"call/return-1", "return 1", nil},
		{"call/claim-chunk", assembled("claim"), []any{"me", 2000, 3000, "e", 1000, 1, 0}},
		{"call/complete-chunk", assembled("complete"), nil},
		{"call/renew-chunk", assembled("renew"), nil},
		{"call/sync-chunk", assembled("sync"), []any{2000, "e", 3600000, 1000, 0}},
	}
	for _, k := range calls {
		b.Run(k.name, func(b *testing.B) {
			sc := redis.NewScript(k.src)
			if err := sc.Load(ctx, c).Err(); err != nil {
				b.Fatal(err)
			}
			t := &splitTimer{c: c}
			for b.Loop() {
				t.batch(b, batch, func() {
					for range batch {
						if err := sc.EvalSha(ctx, c, nil, k.argv...).Err(); err != nil && err != redis.Nil {
							b.Fatal(err)
						}
					}
				})
			}
			t.report(b)
		})
	}

	// A redis.call's cost besides its command: 64 of them in one call.
	if err := c.HSet(ctx, "probe", "a", "1", "b", "2", "c", "3").Err(); err != nil {
		b.Fatal(err)
	}
	probes := map[string]string{
		"redis.call/HMGET-4":  "redis.call('HMGET', KEYS[1], 'a', 'b', 'c', 'd')",
		"redis.call/HSET-12":  "redis.call('HSET', KEYS[1], 'a', '1', 'b', '2', 'c', '3', 'd', '4', 'e', '5', 'f', '6')",
		"redis.call/PEXPIRE":  "redis.call('PEXPIRE', KEYS[1], 60000)",
		"lua/string.match-22": "string.match(ARGV[1], T)",
		"lua/cjson.encode":    "cjson.encode({id = 'bench-0001@2026-11-27T04:00:00Z', job = 'bench-0001', kind = 's', sched = '1764216000000', decision = 'missed', outcome = 'missed', replica = 'replica-1', finished = '1764216001000', error = 'not claimed before its starting deadline'})",
		"lua/concat-entry":    "local e = ARGV[2] .. ',\"decision\":\"' .. 'started' .. '\",\"fence\":\"' .. '1764216000000123' .. '\",\"started\":\"' .. '1764216000000' .. '\",\"finished\":\"' .. '1764216001000' .. '\"' .. '' .. '}'",
		"lua/format-int":      "string.format('%.0f', 1764216000000123)",
		"lua/tonumber-12":     "local x = tonumber('1') + tonumber('2') + tonumber('3') + tonumber('4') + tonumber('5') + tonumber('6') + tonumber('7') + tonumber('8') + tonumber('9') + tonumber('10') + tonumber('11') + tonumber('12')",
	}
	terms := "s|1764216000000|1764216000000|30000|1|skip|0|10000|120000|10|0|abcdef0123456789|0|0|0||0|0|0|0||"
	entry := `{"id":"bench-0001@2026-11-27T04:00:00Z","job":"bench-0001","kind":"s","sched":"1764216000000","outcome":"succeeded","replica":"replica-1","attempts":"1","error":"","output":"output"`
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range probes {
			if !yield(k) {
				return
			}
		}
	}) {
		b.Run(name, func(b *testing.B) {
			src := "local T = '^' .. string.rep('([^|]*)|', 21) .. '([^|]*)$'\nfor i = 1, 64 do\n" + probes[name] + "\nend\nreturn 1"
			sc := redis.NewScript(src)
			t := &splitTimer{c: c}
			for b.Loop() {
				t.batch(b, batch, func() {
					if err := sc.Run(ctx, c, []string{"probe"}, terms, entry).Err(); err != nil {
						b.Fatal(err)
					}
				})
			}
			t.report(b)
		})
	}

	// The hot paths, batched as the scheduler sends them, and one run a call.
	for _, path := range []string{"won", "lost"} {
		b.Run(fmt.Sprintf("claim/%s/batch=%d", path, batch), func(b *testing.B) {
			t := &splitTimer{c: c}
			for b.Loop() {
				at := nextInstant()
				reqs := benchClaims(js, at)
				won := reqs
				if path == "lost" {
					if _, err := s.Claim(ctx, "other", 2*time.Second, 3*time.Second, storeClaims(reqs...)); err != nil {
						b.Fatal(err)
					}
					reqs = slices.Clone(reqs)
					for i := range reqs {
						reqs[i].Owner = store.NewEpoch()
					}
				}
				t.batch(b, batch, func() {
					if _, err := s.Claim(ctx, "me", 2*time.Second, 3*time.Second, storeClaims(reqs...)); err != nil {
						b.Fatal(err)
					}
				})
				// Free the slots so the next instant can start again.
				if _, err := s.Complete(ctx, closeAll(won)); err != nil {
					b.Fatal(err)
				}
			}
			t.report(b)
		})
	}
	for _, per := range []int{1, batch} {
		b.Run(fmt.Sprintf("close/runs-per-call=%d", per), func(b *testing.B) {
			t := &splitTimer{c: c}
			for b.Loop() {
				all := closeAll(claimedRuns(b, s, js))
				t.batch(b, batch, func() {
					for k := 0; k < len(all); k += per {
						if res, err := s.Complete(ctx, all[k:k+per]); err != nil || res[0] != "ok" {
							b.Fatalf("complete = %v, %v", res, err)
						}
					}
				})
			}
			t.report(b)
		})
	}
	renewals := renewalsOf(claimedRuns(b, s, js))
	for _, per := range []int{1, batch} {
		b.Run(fmt.Sprintf("renew/runs-per-call=%d", per), func(b *testing.B) {
			t := &splitTimer{c: c}
			for b.Loop() {
				t.batch(b, batch, func() {
					for k := 0; k < batch; k += per {
						if res, err := s.Renew(ctx, renewals[k:k+per]); err != nil || res[0] != "ok" {
							b.Fatalf("renew = %v, %v", res, err)
						}
					}
				})
			}
			t.report(b)
		})
	}
	// The heartbeat's statistics changes (changed.lua): each of three
	// replicas publishes a third of 1,000 changes and reads all of them.
	b.Run("changed/1000-entries", func(b *testing.B) {
		t := &splitTimer{c: c}
		cursor := make([]string, 3)
		for i := range cursor {
			cursor[i] = "0"
		}
		for b.Loop() {
			t.batch(b, 1000, func() {
				for r := range 3 {
					args := []any{cursor[r], 10000, 60000}
					for k := range 333 {
						args = append(args, fmt.Sprintf("job-%04d|%d|1764216000000|0|succeeded=1764216000000", 3*k+r, r))
					}
					v, err := store.ChangedScript.Run(ctx, c, []string{s.ChangedKey()}, args...).StringSlice()
					if err != nil {
						b.Fatal(err)
					}
					cursor[r] = v[0]
				}
			})
		}
		t.report(b)
	})
	sync := make([]store.SyncReq, batch)
	for i, j := range js {
		known, fence := j.memo.snapshot()
		sync[i] = store.SyncReq{Job: j.spec, Known: known, Fence: fence, StatsOnly: true}
	}
	b.Run(fmt.Sprintf("sync-stats/batch=%d", batch), func(b *testing.B) {
		t := &splitTimer{c: c}
		for b.Loop() {
			t.batch(b, batch, func() {
				if _, err := s.Sync(ctx, "me", 2*time.Second, time.Hour, sync); err != nil {
					b.Fatal(err)
				}
			})
		}
		t.report(b)
	})
}

// scriptCut is a script cut short before the line that starts with at
// (after its leading spaces): every run answers "cut" there. The time of a
// run cut at one line minus that of the cut before it is what the lines
// between cost.
func scriptCut(b *testing.B, src, at string) *redis.Script {
	b.Helper()
	if at == "" {
		return redis.NewScript(src)
	}
	i := strings.Index(src, "\n"+at)
	if i < 0 {
		for _, pre := range []string{"  ", "    ", "      "} {
			if i = strings.Index(src, "\n"+pre+at); i >= 0 {
				break
			}
		}
	}
	if i < 0 {
		b.Fatalf("no line %q", at)
	}
	return redis.NewScript(src[:i+1] + "do return 'cut' end\n" + src[i+1:])
}

// BenchmarkScriptTimeCuts times a won claim and a close of a batch of 64
// runs cut short at successive lines (the sub-benchmark's name says which
// line; "all": not cut): where in the script a run's Lua time goes.
func BenchmarkScriptTimeCuts(b *testing.B) {
	s, c := benchStore(b)
	ctx := context.Background()
	const batch = 64
	js := benchJobs(b, s, batch)
	keys := make([]string, batch)
	for i, j := range js {
		keys[i] = s.MetaKey(j.Name)
	}
	claimCuts := []string{
		"if d[1] and not rerun then",
		"local sched, fire = tonumber(sched_s), tonumber(fire_s)",
		"-- The pool's key, when this script takes",
		"-- The run's record. id and job are not stored",
		"-- A replica may claim a scheduled run a little before",
		"-- Start: the record, the slot",
		"redis.call('HSET', rk, unpack(rf))",
		"",
	}
	src := assembled("claim")
	for n, cut := range claimCuts {
		b.Run(fmt.Sprintf("claim/%d:%s", n, cutName(cut)), func(b *testing.B) {
			sc := scriptCut(b, src, cut)
			t := &splitTimer{c: c}
			for b.Loop() {
				reqs := benchClaims(js, nextInstant())
				args := store.ClaimHeadArgs("me", 2*time.Second, 3*time.Second, s.ClaimAhead, true, false)
				ab := store.NewArgBuf(0, 0)
				for i := range reqs {
					args = store.AppendClaim(args, &reqs[i].StoreClaim, ab)
				}
				t.batch(b, batch, func() {
					if err := sc.Run(ctx, c, keys, args...).Err(); err != nil {
						b.Fatal(err)
					}
				})
				if cut == "" {
					if _, err := s.Complete(ctx, closeAll(reqs)); err != nil {
						b.Fatal(err)
					}
				}
			}
			t.report(b)
		})
	}
	closeCuts := []string{
		"if rec[1] ~= owner then",
		"if rec[2] == 'waiting' then",
		"local set = {'at:' .. outcome, fin}",
		"local entry = ARGV[a + 6]",
		"redis.call('HSET', meta, unpack(set))",
		"out[i] = 'ok|' .. fin_us",
		"",
	}
	src = assembled("complete")
	for n, cut := range closeCuts {
		b.Run(fmt.Sprintf("close/%d:%s", n, cutName(cut)), func(b *testing.B) {
			sc := scriptCut(b, src, cut)
			t := &splitTimer{c: c}
			for b.Loop() {
				all := closeAll(claimedRuns(b, s, js))
				var args []any
				for i := range all {
					args = store.AppendComplete(args, &all[i])
				}
				t.batch(b, batch, func() {
					if err := sc.Run(ctx, c, keys, args...).Err(); err != nil {
						b.Fatal(err)
					}
				})
				if _, err := s.Complete(ctx, all); err != nil {
					b.Fatal(err)
				}
			}
			t.report(b)
		})
	}
}

func cutName(line string) string {
	if line == "" {
		return "all"
	}
	f := strings.FieldsFunc(line, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') })
	return strings.Join(f[:min(3, len(f))], "_")
}
