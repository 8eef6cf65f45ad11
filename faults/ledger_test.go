//go:build faults

package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
)

// write is one write a run offered the sink.
type write struct {
	At       time.Time
	Accepted bool
}

// runRec is one job process (one attempt of one run) as the ledger saw it.
type runRec struct {
	RunID     string
	Replica   string
	Token     int64
	Slot      int // the concurrency slot it held (SOLOCRON_SLOT); 1 without one
	Attempt   int
	PID       int
	Start     time.Time // the start report (also its first write)
	End       time.Time // its connection closed: the process is gone; zero while alive
	EndReason string    // "ok", "term" (cancelled), or "" (died without a word)
	Ops       int64     // Redis commands a flooding job got answered
	Writes    []write
}

// Scheduled is the run's scheduled instant (zero for a manual run).
func (r runRec) Scheduled() time.Time { return instantOf(r.RunID) }

func instantOf(runID string) time.Time {
	_, s, ok := strings.Cut(runID, "@")
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// childRec is a process a run left in its process group (faultjob -child),
// as the ledger saw it.
type childRec struct {
	RunID string
	PID   int
	Start time.Time
	End   time.Time // its connection closed: the process is gone; zero while alive
}

// sink is a downstream store that fences writes by token.
type sink interface {
	// write offers a write of r's; it reports whether it is accepted.
	write(r *runRec) bool
	// gone tells the sink that r's process ended.
	gone(r *runRec)
	// maxEffective is the most holders whose writes it would accept at once.
	maxEffective() int
}

// mutexSink accepts a write whose token is at least the highest it has
// accepted: the classic fencing check for one holder at a time.
type mutexSink struct{ high int64 }

func (s *mutexSink) write(r *runRec) bool {
	if r.Token < s.high {
		return false
	}
	s.high = r.Token
	return true
}
func (s *mutexSink) gone(*runRec)      {}
func (s *mutexSink) maxEffective() int { return 1 }

// slotSink fences per slot, for a job with a concurrency limit: it keeps
// the highest token it accepted for each slot (SOLOCRON_SLOT) and refuses a
// write whose token is below its slot's. The scheduler's tokens rise per
// job, so per slot too: a run that lost its slot is refused once the slot's
// next holder has written. A holder is effective while it is alive and holds
// its slot's highest token, so there are at most as many effective holders
// as slots the scheduler hands out.
type slotSink struct {
	high   map[int]int64   // slot -> highest token accepted
	holder map[int]*runRec // slot -> its highest token's run, while alive
	most   int
}

func newSlotSink() *slotSink {
	return &slotSink{high: map[int]int64{}, holder: map[int]*runRec{}}
}

func (s *slotSink) write(r *runRec) bool {
	if r.Token < s.high[r.Slot] {
		return false
	}
	s.high[r.Slot] = r.Token
	s.holder[r.Slot] = r
	s.most = max(s.most, len(s.holder))
	return true
}

func (s *slotSink) gone(r *runRec) {
	if s.holder[r.Slot] == r {
		delete(s.holder, r.Slot)
	}
}
func (s *slotSink) maxEffective() int { return s.most }

// ledger records every job process: the faultjob command reports over TCP,
// in-process replicas through inProcessJob. It owns the sink.
type ledger struct {
	ln       net.Listener
	mu       sync.Mutex
	runs     []*runRec
	children []*childRec
	sink     sink
}

func newLedger(t *testing.T, s sink) *ledger {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger{ln: ln, sink: s}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.serve(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return l
}

func (l *ledger) Addr() string { return l.ln.Addr().String() }

func (l *ledger) serve(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return
	}
	f := strings.Fields(line)
	if len(f) == 3 && f[0] == "child" {
		l.child(f[1], f[2], rd)
		return
	}
	if len(f) != 7 || f[0] != "start" {
		return
	}
	tok, _ := strconv.ParseInt(f[3], 10, 64)
	att, _ := strconv.Atoi(f[4])
	pid, _ := strconv.Atoi(f[5])
	slot, _ := strconv.Atoi(f[6]) // "-": none
	r, ok := l.begin(f[1], f[2], tok, slot, att, pid)
	if !ok {
		return
	}
	reply := func(ok bool) bool {
		s := "0\n"
		if ok {
			s = "1\n"
		}
		_, err := c.Write([]byte(s))
		return err == nil
	}
	reply(r.Writes[0].Accepted)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			l.finish(r, "", 0)
			return
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "write":
			reply(l.offer(r))
		case len(f) >= 2 && f[0] == "end":
			var ops int64
			if len(f) == 3 {
				ops, _ = strconv.ParseInt(strings.TrimPrefix(f[2], "ops="), 10, 64)
			}
			l.note(r, f[1], ops)
		}
	}
}

// child records a run's child until its connection closes.
func (l *ledger) child(runID, pid string, rd *bufio.Reader) {
	p, _ := strconv.Atoi(pid)
	ch := &childRec{RunID: runID, PID: p, Start: time.Now()}
	l.mu.Lock()
	l.children = append(l.children, ch)
	l.mu.Unlock()
	_, _ = io.Copy(io.Discard, rd)
	l.mu.Lock()
	ch.End = time.Now()
	l.mu.Unlock()
}

// Children returns a copy of every child record, in start order.
func (l *ledger) Children() []childRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]childRec, len(l.children))
	for i, c := range l.children {
		out[i] = *c
	}
	return out
}

// begin records a start, which is also the run's first write.
func (l *ledger) begin(runID, replica string, token int64, slot, attempt, pid int) (*runRec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &runRec{RunID: runID, Replica: replica, Token: token, Slot: max(slot, 1), Attempt: attempt, PID: pid, Start: time.Now()}
	r.Writes = append(r.Writes, write{At: r.Start, Accepted: l.sink.write(r)})
	l.runs = append(l.runs, r)
	return r, true
}

func (l *ledger) offer(r *runRec) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.sink.write(r)
	r.Writes = append(r.Writes, write{At: time.Now(), Accepted: ok})
	return ok
}

func (l *ledger) note(r *runRec, reason string, ops int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.EndReason, r.Ops = reason, ops
}

func (l *ledger) finish(r *runRec, reason string, ops int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.End.IsZero() {
		r.End = time.Now()
		if reason != "" {
			r.EndReason, r.Ops = reason, ops
		}
		l.sink.gone(r)
	}
}

// Runs returns a copy of every record, in start order.
func (l *ledger) Runs() []runRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]runRec, len(l.runs))
	for i, r := range l.runs {
		out[i] = *r
		out[i].Writes = append([]write(nil), r.Writes...)
	}
	return out
}

// Run returns the record of runID's first attempt.
func (l *ledger) Run(runID string) (runRec, bool) {
	for _, r := range l.Runs() {
		if r.RunID == runID && r.Attempt <= 1 {
			return r, true
		}
	}
	return runRec{}, false
}

// MaxEffective is the sink's most effective holders at once.
func (l *ledger) MaxEffective() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sink.maxEffective()
}

// inProcessJob is faultjob for in-process replicas: it reports its start,
// writes every `every`, and ends after sleep or when its context ends.
func (l *ledger) inProcessJob(sleep, every time.Duration) jobs.Func {
	return func(ctx context.Context) error {
		info, _ := jobs.FromContext(ctx)
		r, _ := l.begin(info.RunID, info.ReplicaID, info.FencingToken, info.Slot, info.Attempt, 0)
		done := time.NewTimer(sleep)
		defer done.Stop()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				l.offer(r)
			case <-done.C:
				l.finish(r, "ok", 0)
				return nil
			case <-ctx.Done():
				l.finish(r, "term", 0)
				return fmt.Errorf("cancelled: %w", context.Cause(ctx))
			}
		}
	}
}

// starts counts first attempts per run id.
func starts(runs []runRec) map[string]int {
	n := map[string]int{}
	for _, r := range runs {
		if r.Attempt <= 1 {
			n[r.RunID]++
		}
	}
	return n
}

// duplicates lists the run ids started more than once, with their replicas.
func duplicates(runs []runRec) []string {
	return testkit.DuplicateStarts(runs, func(r runRec) (string, string, int) { return r.RunID, r.Replica, r.Attempt })
}
