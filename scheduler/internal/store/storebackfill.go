package store

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// backfill.lua's answers.
type backfillAnswer string

const (
	backfillStarted   backfillAnswer = "started"
	BackfillBusy      backfillAnswer = "busy"
	BackfillCancelled backfillAnswer = "cancelled"
	BackfillNone      backfillAnswer = "none"
)

// ErrBackfillUnsupported is scheduler.ErrBackfillUnsupported: the store cannot
// backfill (Redlock).
var ErrBackfillUnsupported = errors.New("scheduler: this store cannot backfill (Redlock coordinates mutexes only)")

// backfillArgs is the number of backfill.lua's ARGV fields (start's).
const backfillArgs = 9

// decodeBackfill reads backfill.lua's answer: the op's answer, then the
// state as field, value pairs (none: no backfill).
func decodeBackfill(job string, v any) (string, *Backfill) {
	f := strs(v)
	if len(f) == 0 {
		return "", nil
	}
	h := make(map[string]string, len(f)/2)
	for i := 1; i+1 < len(f); i += 2 {
		h[f[i]] = f[i+1]
	}
	return f[0], backfillFromHash(job, h)
}

// backfillFromHash reads a backfill's state from its hash; nil if empty.
func backfillFromHash(job string, h map[string]string) *Backfill {
	if h["id"] == "" {
		return nil
	}
	n := func(k string) int { v, _ := strconv.Atoi(h[k]); return v }
	b := &Backfill{ID: h["id"], Job: job, From: MsTime(h["from"]), To: MsTime(h["to"]), Parallel: n("parallel"),
		Total: n("total"), Decided: n("decided"), Started: n("started"), Skipped: n("skipped"), Already: n("already"),
		Succeeded: n("succeeded"), Failed: n("failed"), InFlight: n("inflight"), Cancelled: h["cancelled"] == "1",
		Error: h["error"], Created: MsTime(h["created"]), Finished: MsTime(h["finished"]), cursor: MsTime(h["cursor"]),
		last: MsTime(h["last"])}
	if r := h["redo"]; r != "" {
		for _, ms := range strings.Split(r, ",") {
			b.redo = append(b.redo, MsTime(ms))
		}
	}
	return b
}

// BackfillProgress is where a backfill's state has it: the latest instant
// taken (its cursor), the instants taken back to take again first (redo),
// and the range's last instant as the requester's table has it. Not part
// of Backfill's public API.
func BackfillProgress(b *Backfill) (cursor time.Time, redo []time.Time, last time.Time) {
	return b.cursor, b.redo, b.last
}

// BackfillHintKey is the store-wide set of jobs with a backfill (job ->
// request time, ms): replicas read it every beat instead of every job's
// state. Outside any job's hash tag; only backfill_forget.lua touches it
// in a script.
func (s *Redis) BackfillHintKey() string { return s.Prefix + ":backfills" }

// BackfillHint is one entry of the backfill hint key as a heartbeat read
// it: the score tells it from an entry a backfill started since wrote.
type BackfillHint struct {
	Job   string
	Score float64
}

func (s *Redis) Backfill(ctx context.Context, job string, args []any) (string, *Backfill, error) {
	c := call{keys: []string{s.MetaKey(job)}, Args: args}
	var v any
	var err error
	if args[0] == "start" {
		// The hint's score is the request time, with a random fraction: it
		// tells this backfill's entry from the one of a backfill started
		// in the same millisecond (BackfillForget).
		var r [2]byte
		_, _ = rand.Read(r[:])
		// 12 bits: a double holds today's milliseconds and 12 bits more
		// exactly.
		score := float64(time.Now().UnixMilli()) + float64((int(r[0])<<8|int(r[1]))&4095)/4096
		out := make([]any, 1)
		err = evalPipelined(ctx, s.c, backfillScript, []call{c}, []int{0}, out, func(p redis.Pipeliner) func([]int) {
			p.ZAdd(ctx, s.BackfillHintKey(), redis.Z{Score: score, Member: job})
			return nil
		})
		v = out[0]
	} else {
		var out []any
		out, err = s.exec(ctx, backfillScript, []call{c})
		if err == nil {
			v = out[0]
		}
	}
	if err != nil {
		return "", nil, err
	}
	ans, st := decodeBackfill(job, v)
	return ans, st, nil
}

// BackfillJobs answers the jobs with a backfill as the last heartbeat read
// them (ManualHints): no round trip of its own.
func (s *Redis) BackfillJobs(context.Context) ([]BackfillHint, error) {
	if p := s.backfillSeen.Load(); p != nil {
		return *p, nil
	}
	return nil, nil
}

// BackfillForget drops h's job from the hint key only if its entry is
// still h (one atomic check-and-delete): a replica that read a finished
// backfill must not drop the hint of one started since, which would then
// never run and refuse every other (busy) until cancelled.
func (s *Redis) BackfillForget(ctx context.Context, h BackfillHint) error {
	score := strconv.FormatFloat(h.Score, 'g', -1, 64)
	_, err := s.exec(ctx, forgetScript, []call{{keys: []string{s.BackfillHintKey()}, Args: []any{h.Job, score}}})
	return err
}

func (rl *redlock) Backfill(context.Context, string, []any) (string, *Backfill, error) {
	return "", nil, ErrBackfillUnsupported
}

func (rl *redlock) BackfillJobs(context.Context) ([]BackfillHint, error) { return nil, nil }

func (rl *redlock) BackfillForget(context.Context, BackfillHint) error { return nil }

// backfillStatus reads a job's backfill in a status pipeline.
func (s *Redis) backfillStatus(ctx context.Context, p redis.Pipeliner, job string) func() *Backfill {
	h := p.HGetAll(ctx, s.Key(job, "backfill"))
	n := p.SCard(ctx, s.Key(job, "bfruns"))
	return func() *Backfill {
		m := h.Val()
		if len(m) == 0 {
			return nil
		}
		m["inflight"] = strconv.FormatInt(n.Val(), 10)
		return backfillFromHash(job, m)
	}
}
