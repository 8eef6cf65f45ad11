package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	quorum "github.com/solocron/solocron/internal/redlock"
	"github.com/solocron/solocron/lockprovider"
)

// redlock coordinates through N independent Redis masters (no replication
// between them), in the manner of the Redlock algorithm. Every operation runs
// the single-Redis script on every master at once, with the same owner
// token, and the answers are combined:
//
//   - A run starts only if a quorum (N/2+1) of masters answered "started"
//     within the lease's validity (lease − time the claim took − drift).
//     Its fencing token is the highest of theirs. Two quorums always share a
//     master, and a master holds at most one run of a job (concurrency 1)
//     and one record per run id, so no two replicas can both win.
//   - A claim that fell short is taken back (undo.lua drop) on every master
//     where it started or queued, and retried with a random delay until the
//     run's starting deadline, unless final decisions on enough masters make
//     a quorum impossible: then the run is what they decided.
//   - A renewal succeeds when a quorum renews; the lease is lost once so many
//     masters refuse that no quorum can be left.
//   - Records and history are written to every master; reads (Control) ask
//     every master and take, per run, the version most masters hold.
//   - Each master keeps its own epoch (data-loss detection): this replica
//     remembers one per master and per job.
type redlock struct {
	masters []*Redis
	quorum  int
	timeout time.Duration

	mu     sync.Mutex
	epochs map[string]*masterEpochs // per job
}

// masterEpochs is what this replica knows of one job's epoch on each
// master. gen counts the times one of them changed: a master lost the job's
// state. The engine sees "redlock-<gen>" as the job's epoch.
type masterEpochs struct {
	known []string
	gen   int
}

func NewRedlock(clients []redis.UniversalClient, cfg BackendConfig) (*redlock, error) {
	if len(clients) < 3 {
		return nil, fmt.Errorf("scheduler: Redlock needs at least 3 independent masters, got %d", len(clients))
	}
	if cfg.MinAck != 0 {
		return nil, errors.New("scheduler: WithMinReplicasAck is not for Redlock: its masters have no replicas; a quorum of masters is its acknowledgement")
	}
	rl := &redlock{quorum: quorum.Quorum(len(clients)), timeout: cfg.RedlockTimeout, epochs: map[string]*masterEpochs{}}
	if rl.timeout == 0 {
		rl.timeout = time.Second
	}
	for i, c := range clients {
		switch c.(type) {
		case nil:
			return nil, fmt.Errorf("scheduler: Redlock master %d: nil client", i)
		case *redis.ClusterClient:
			return nil, fmt.Errorf("scheduler: Redlock master %d: a Redlock master is one server, not a cluster", i)
		}
		st, err := NewRedis(c, cfg)
		if err != nil {
			return nil, err
		}
		st.fenceCheck = false // a token seen may come from another master
		rl.masters = append(rl.masters, st)
	}
	return rl, nil
}

func (rl *redlock) MetaKey(job string) string { return rl.masters[0].MetaKey(job) }

// PlacePools: the masters share one placement (a Redlock scheduler refuses
// pools; a Control may still be told of a table's).
func (rl *redlock) PlacePools(jobs []PoolJob) { rl.masters[0].PlacePools(jobs) }

// each calls fn on every master in parallel and returns their answers. A
// master that has not answered within the Redlock timeout counts as failed
// (whether or not its client honours the context). It waits for every
// master (up to that timeout) rather than returning at a quorum: a claim
// still in flight when its loser takes it back would land afterwards and
// hold a slot there for a whole lease. The error is a QuorumError naming
// op when fewer than a quorum of masters answered; the answers of those
// that did come with it (a caller may have to take them back).
func each[T any](ctx context.Context, rl *redlock, op string, fn func(ctx context.Context, i int, m *Redis) (T, error)) ([]T, []error, error) {
	n := len(rl.masters)
	vals, errs := make([]T, n), make([]error, n)
	type answer struct {
		i   int
		v   T
		err error
	}
	ch := make(chan answer, n)
	cctx, cancel := context.WithTimeout(ctx, rl.timeout)
	defer cancel()
	for i, m := range rl.masters {
		go func() {
			v, err := fn(cctx, i, m)
			ch <- answer{i, v, err}
		}()
	}
	for i := range errs {
		errs[i] = fmt.Errorf("redlock master %d: no answer within %s", i, rl.timeout)
	}
	timer := time.NewTimer(rl.timeout + rl.timeout/10)
	defer timer.Stop()
	for range n {
		select {
		case a := <-ch:
			vals[a.i], errs[a.i] = a.v, a.err
			if a.err != nil {
				errs[a.i] = fmt.Errorf("redlock master %d: %w", a.i, a.err)
			}
		case <-timer.C:
			return vals, errs, rl.quorumCheck(op, errs)
		}
	}
	return vals, errs, rl.quorumCheck(op, errs)
}

func answered(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}

// quorumCheck returns the QuorumError of op when fewer than a quorum of
// masters answered, nil otherwise.
func (rl *redlock) quorumCheck(op string, errs []error) error {
	if ok := answered(errs); ok < rl.quorum {
		return rl.quorumErr(op, ok, errs)
	}
	return nil
}

func (rl *redlock) quorumErr(op string, ok int, errs []error) error {
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return &lockprovider.QuorumError{Op: op, Acquired: ok, Quorum: rl.quorum, Masters: len(rl.masters), Errs: failed}
}

// learn records job's epoch on master i and returns the epoch the engine sees.
func (rl *redlock) learn(job string, i int, epoch string) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	e := rl.epochsOf(job)
	if epoch == "" {
		return
	}
	if e.known[i] != "" && e.known[i] != epoch {
		e.gen++
	}
	e.known[i] = epoch
}

func (rl *redlock) epochsOf(job string) *masterEpochs {
	e := rl.epochs[job]
	if e == nil {
		e = &masterEpochs{known: make([]string, len(rl.masters))}
		rl.epochs[job] = e
	}
	return e
}

func (rl *redlock) epoch(job string) string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return "redlock-" + strconv.Itoa(rl.epochsOf(job).gen)
}

func (rl *redlock) known(job string, i int) string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.epochsOf(job).known[i]
}

func (rl *redlock) Preload(ctx context.Context) error {
	_, _, err := each(ctx, rl, "preload", func(ctx context.Context, _ int, m *Redis) (struct{}, error) {
		return struct{}{}, m.Preload(ctx)
	})
	return err
}

// queueTicket orders a run that must wait for the job's slot the same way on
// every master: by scheduled instant (a manual run's: its request), then by
// a hash of its id. Arrival order would differ from master to master, and
// waiters first in line on different masters could each hold a minority for
// ever.
func queueTicket(r StoreClaim) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(r.ID))
	return strconv.FormatInt(r.Sched.UnixMilli()*1000+int64(h.Sum32()%1000), 10)
}

func (rl *redlock) Claim(ctx context.Context, replica string, skew, waiterTTL time.Duration, reqs []StoreClaim) ([]ClaimRes, error) {
	for i := range reqs {
		reqs[i].ticket = queueTicket(reqs[i])
	}
	sent := time.Now()
	per, errs, qerr := each(ctx, rl, "claim", func(ctx context.Context, i int, m *Redis) ([]ClaimRes, error) {
		mine := slices.Clone(reqs)
		for k := range mine {
			mine[k].Known = rl.known(mine[k].Job.Name, i)
		}
		return m.Claim(ctx, replica, skew, waiterTTL, mine)
	})
	elapsed := time.Since(sent)
	for i, res := range per {
		if errs[i] == nil {
			for k, r := range res {
				rl.learn(reqs[k].Job.Name, i, r.Epoch)
			}
		}
	}
	undo := make([][]UndoReq, len(rl.masters))
	if qerr != nil {
		for i, res := range per {
			for k, r := range res {
				if errs[i] == nil && (r.Status == AnswerStarted || r.Status == AnswerWaiting) {
					undo[i] = append(undo[i], UndoReq{Job: reqs[k].Job, ID: reqs[k].ID, Owner: reqs[k].Owner, Mode: UndoDrop})
				}
			}
		}
		rl.undo(ctx, waiterTTL, undo)
		return nil, qerr
	}
	out := make([]ClaimRes, len(reqs))
	for k := range reqs {
		out[k] = rl.combineClaim(reqs[k], k, per, errs, elapsed, undo)
	}
	rl.undo(ctx, waiterTTL, undo)
	return out, nil
}

// combineClaim turns the masters' answers about run k into one, and lists
// in undo what must be taken back where.
func (rl *redlock) combineClaim(r StoreClaim, k int, per [][]ClaimRes, errs []error, elapsed time.Duration, undo [][]UndoReq) ClaimRes {
	var started, waiting, early, later, refused, ours, others []int
	var fence int64
	for i := range per {
		if errs[i] != nil {
			continue
		}
		a := per[i][k]
		fence = max(fence, a.Fence)
		switch {
		case a.Status == AnswerStarted:
			started = append(started, i)
		case a.Status == AnswerWaiting:
			waiting = append(waiting, i)
		case a.Status == AnswerEarly:
			early = append(early, i)
		case a.Status == AnswerLater:
			later = append(later, i)
		case a.Status == AnswerRefused:
			refused = append(refused, i)
		case a.Status == AnswerDecided:
			others = append(others, i)
		case a.Status.decidedByUs():
			ours = append(ours, i)
		}
	}
	res := ClaimRes{Epoch: rl.epoch(r.Job.Name), Fence: fence}
	take := func(mode undoMode, masters ...[]int) {
		for _, ms := range masters {
			for _, i := range ms {
				undo[i] = append(undo[i], UndoReq{Job: r.Job, ID: r.ID, Owner: r.Owner, Mode: mode, maxWait: r.MaxWait})
			}
		}
	}
	switch {
	case len(started) >= rl.quorum && quorum.Validity(r.Job.Lease, elapsed) > 0:
		take(UndoDrop, waiting) // it runs; no need to queue anywhere
		res.Status = AnswerStarted
		for _, i := range started {
			res.Fence = max(res.Fence, per[i][k].Fence)
			if per[i][k].Server.After(res.Server) {
				res.Server = per[i][k].Server
			}
		}
		return res
	case len(waiting) > 0 && len(started)+len(waiting) >= rl.quorum:
		// A quorum has it running or queued: it waits, on every master.
		take(undoRequeue, started)
		res.Status = AnswerWaiting
		for _, i := range waiting {
			res.Place = max(res.Place, per[i][k].Place)
		}
		return res
	}
	take(UndoDrop, started, waiting)
	// Another replica won if one decision of its holds a quorum. Its
	// records on fewer masters may be a minority it is about to take back,
	// like ours: those are not final unless the run is closed there.
	winner, wins := -1, 0
	if len(others) > 0 {
		winner = mostCommonAt(others, func(i int) string { return per[i][k].Outcome + "\x00" + per[i][k].Replica })
		for _, i := range others {
			if per[i][k].Outcome == per[winner][k].Outcome && per[i][k].Replica == per[winner][k].Replica {
				wins++
			}
		}
	}
	final := len(refused) + len(ours)
	for _, i := range others {
		if o := per[i][k].Outcome; o != string(Running) && o != string(Waiting) {
			final++
		}
	}
	// Once more masters gave a final answer than a quorum can spare, no
	// retry can win.
	impossible := quorum.Hopeless(len(rl.masters), final)
	switch {
	case len(started) >= rl.quorum:
		res.Status, res.Reason = AnswerRetry, fmt.Sprintf("a quorum of masters granted it only after %s, past its lease's validity", elapsed.Round(time.Millisecond))
	case len(ours) >= rl.quorum:
		res.Status = Answer(mostCommon(ours, func(i int) string { return string(per[i][k].Status) }))
	case wins >= rl.quorum || impossible && winner >= 0:
		res.Status, res.Outcome, res.Replica = AnswerDecided, per[winner][k].Outcome, per[winner][k].Replica
	case len(refused) >= rl.quorum || impossible && len(ours) == 0:
		res.Status, res.Reason = AnswerRefused, per[refused[0]][k].Reason
	case impossible:
		res.Status = Answer(mostCommon(ours, func(i int) string { return string(per[i][k].Status) }))
	case len(early) > 0 || len(later) > 0:
		res.Status = AnswerEarly
		ask := early
		if len(early) == 0 {
			res.Status, ask = AnswerLater, later
		}
		res.Server = per[ask[0]][k].Server
		for _, i := range ask {
			if per[i][k].Server.Before(res.Server) {
				res.Server = per[i][k].Server
			}
		}
	case r.Kind == RunMiss || r.Kind == RunOutage:
		// Recording a miss never starts anything: a split here is other
		// replicas' claims in flight. Ask again later.
		res.Status, res.Reason = AnswerRetry, "no quorum agrees yet on how the run was decided"
	default:
		res.Status, res.Reason = AnswerRetry, fmt.Sprintf("no quorum: started on %d and queued on %d of %d masters, %d needed (other replicas hold the others, or they did not answer)",
			len(started), len(waiting), len(rl.masters), rl.quorum)
	}
	return res
}

// mostCommonAt returns the index in idx whose key is the most common (the
// first such on ties).
func mostCommonAt(idx []int, key func(int) string) int {
	n := map[string]int{}
	best := idx[0]
	for _, i := range idx {
		n[key(i)]++
		if n[key(i)] > n[key(best)] {
			best = i
		}
	}
	return best
}

func mostCommon(idx []int, key func(int) string) string { return key(mostCommonAt(idx, key)) }

// undo takes back, on each master, what undo lists for it; best effort: a
// master that does not answer keeps a minority record whose slot expires
// with its lease.
func (rl *redlock) undo(ctx context.Context, waiterTTL time.Duration, undo [][]UndoReq) {
	if !slices.ContainsFunc(undo, func(u []UndoReq) bool { return len(u) > 0 }) {
		return
	}
	_, _, _ = each(ctx, rl, "undo", func(ctx context.Context, i int, m *Redis) (struct{}, error) {
		if len(undo[i]) == 0 {
			return struct{}{}, nil
		}
		_, err := m.Undo(ctx, waiterTTL, undo[i])
		return struct{}{}, err
	})
}

type admitted struct {
	status Answer
	n      int64
}

// Admit polls each run on every master (a quorum's admission per run).
func (rl *redlock) Admit(ctx context.Context, rs []*StoreClaim, waiterTTL time.Duration, fenceFloor int64) ([]AdmitRes, error) {
	out := make([]AdmitRes, len(rs))
	for i, r := range rs {
		st, n, err := rl.admitOne(ctx, r, waiterTTL, fenceFloor)
		if err != nil {
			return nil, err
		}
		out[i] = AdmitRes{st, n}
	}
	return out, nil
}

func (rl *redlock) admitOne(ctx context.Context, r *StoreClaim, waiterTTL time.Duration, fenceFloor int64) (Answer, int64, error) {
	sent := time.Now()
	per, errs, qerr := each(ctx, rl, "admit", func(ctx context.Context, _ int, m *Redis) (admitted, error) {
		own := *r // each master's answer sets its slot: not on the shared request
		res, err := m.Admit(ctx, []*StoreClaim{&own}, waiterTTL, fenceFloor)
		if err != nil {
			return admitted{}, err
		}
		return admitted{res[0].Status, res[0].N}, nil
	})
	elapsed := time.Since(sent)
	var started, waiting, skipped, lost []int
	skipStatus := AnswerSkippedOverlap
	for i, a := range per {
		if errs[i] != nil {
			continue
		}
		switch a.status {
		case AnswerStarted:
			started = append(started, i)
		case AnswerWaiting:
			waiting = append(waiting, i)
		case AnswerSkippedOverlap, AnswerSkippedPaused:
			if a.status == AnswerSkippedPaused {
				skipStatus = a.status
			}
			skipped = append(skipped, i)
		default:
			lost = append(lost, i)
		}
	}
	undo := make([][]UndoReq, len(rl.masters))
	take := func(mode undoMode, masters ...[]int) {
		for _, ms := range masters {
			for _, i := range ms {
				undo[i] = append(undo[i], UndoReq{Job: r.Job, ID: r.ID, Owner: r.Owner, Mode: mode, maxWait: r.MaxWait})
			}
		}
	}
	if qerr != nil {
		take(undoRequeue, started)
		rl.undo(ctx, waiterTTL, undo)
		return "", 0, qerr
	}
	if len(started) >= rl.quorum && quorum.Validity(r.Job.Lease, elapsed) > 0 {
		take(UndoDrop, waiting)
		rl.undo(ctx, waiterTTL, undo)
		var fence int64
		for _, i := range started {
			fence = max(fence, per[i].n)
		}
		return AnswerStarted, fence, nil
	}
	if quorum.Hopeless(len(rl.masters), len(skipped)+len(lost)) {
		// No quorum can admit it any more: its wait is over.
		take(UndoDrop, started, waiting)
		rl.undo(ctx, waiterTTL, undo)
		if len(skipped) > 0 {
			return skipStatus, 0, nil
		}
		for _, i := range lost {
			if per[i].status == AnswerMissed {
				return AnswerMissed, 0, nil // it never started: recorded so
			}
		}
		return AnswerLost, 0, nil
	}
	take(undoRequeue, started)
	rl.undo(ctx, waiterTTL, undo)
	var place int64 = 1
	for _, i := range waiting {
		place = max(place, per[i].n)
	}
	return AnswerWaiting, place, nil
}

func (rl *redlock) HandBack(ctx context.Context, r *StoreClaim, waiterTTL time.Duration) (bool, error) {
	per, errs, err := each(ctx, rl, "hand back", func(ctx context.Context, _ int, m *Redis) (bool, error) {
		return m.HandBack(ctx, r, waiterTTL)
	})
	dropped := 0
	for i, ok := range per {
		if errs[i] == nil && ok {
			dropped++
		}
	}
	return dropped > 0, err
}

func (rl *redlock) Renew(ctx context.Context, reqs []RenewReq) ([]LeaseAnswer, error) {
	per, errs, err := each(ctx, rl, "renew", func(ctx context.Context, _ int, m *Redis) ([]LeaseAnswer, error) {
		return m.Renew(ctx, reqs)
	})
	if err != nil {
		return nil, err
	}
	out := make([]LeaseAnswer, len(reqs))
	for k := range reqs {
		var ok, replaced, cancelled, lost int
		for i, res := range per {
			if errs[i] != nil {
				continue
			}
			switch res[k] {
			case LeaseOK:
				ok++
			case LeaseReplaced:
				replaced++
			case LeaseCancelled:
				// Renewed on that master: it counts toward the lease.
				ok++
				cancelled++
			default:
				lost++
			}
		}
		switch {
		case ok >= rl.quorum && cancelled > 0:
			out[k] = LeaseCancelled
		case ok >= rl.quorum:
			out[k] = LeaseOK
		case quorum.Hopeless(len(rl.masters), replaced+lost) && replaced > 0:
			out[k] = LeaseReplaced
		case quorum.Hopeless(len(rl.masters), replaced+lost):
			out[k] = LeaseLostAnswer
		default:
			out[k] = LeaseUnacked
		}
	}
	return out, nil
}

func (rl *redlock) Attempt(ctx context.Context, j *JobSpec, id, owner string, n int, fenceFloor int64) (int64, error) {
	// Its own quorum rule: a run no longer held on enough masters is an
	// answer (0), not an error.
	per, errs, _ := each(ctx, rl, "attempt", func(ctx context.Context, _ int, m *Redis) (int64, error) {
		return m.Attempt(ctx, j, id, owner, n, fenceFloor)
	})
	var fence int64
	held, gone := 0, 0
	for i, f := range per {
		switch {
		case errs[i] != nil:
		case f > 0:
			held++
			fence = max(fence, f)
		default:
			gone++
		}
	}
	switch {
	case held >= rl.quorum:
		return fence, nil
	case quorum.Hopeless(len(rl.masters), gone):
		return 0, nil
	}
	return 0, rl.quorumErr("attempt", held, errs)
}

func (rl *redlock) Complete(ctx context.Context, reqs []CompleteReq) ([]CloseAnswer, error) {
	// complete is idempotent: the caller retries until a quorum has the end.
	per, errs, err := each(ctx, rl, "complete", func(ctx context.Context, _ int, m *Redis) ([]CloseAnswer, error) {
		return m.Complete(ctx, reqs)
	})
	if err != nil {
		return nil, err
	}
	out := make([]CloseAnswer, len(reqs))
	for k := range reqs {
		n := map[CloseAnswer]int{}
		for i, res := range per {
			if errs[i] == nil {
				n[res[k]]++
			}
		}
		best := CloseOK
		for _, s := range []CloseAnswer{CloseClosed, CloseLost} {
			if n[s] > n[best] {
				best = s
			}
		}
		out[k] = best
	}
	return out, nil
}

func (rl *redlock) Sync(ctx context.Context, replica string, skew, manualTTL time.Duration, reqs []SyncReq) ([]SyncRes, error) {
	per, errs, qerr := each(ctx, rl, "sync", func(ctx context.Context, i int, m *Redis) ([]SyncRes, error) {
		mine := slices.Clone(reqs)
		for k := range mine {
			mine[k].Known = rl.known(mine[k].Job.Name, i)
		}
		return m.Sync(ctx, replica, skew, manualTTL, mine)
	})
	for i, res := range per {
		if errs[i] == nil {
			for k, r := range res {
				rl.learn(reqs[k].Job.Name, i, r.Epoch)
			}
		}
	}
	if qerr != nil {
		return nil, qerr
	}
	ok := answered(errs)
	out := make([]SyncRes, len(reqs))
	for k := range reqs {
		r := SyncRes{Epoch: rl.epoch(reqs[k].Job.Name)}
		paused := 0
		var stats []JobStats
		manual := map[string]int{}
		at := map[string]string{}
		var order []string
		for i, res := range per {
			if errs[i] != nil {
				continue
			}
			a := res[k]
			if a.Paused {
				paused++
			}
			if a.Last.After(r.Last) {
				r.Last = a.Last
			}
			if a.Floor.After(r.Floor) {
				r.Floor = a.Floor
			}
			r.Fence = max(r.Fence, a.Fence)
			stats = append(stats, a.Stats)
			for m := 0; m+1 < len(a.Manual); m += 2 {
				id := a.Manual[m]
				if manual[id] == 0 {
					order = append(order, id)
					at[id] = a.Manual[m+1]
				}
				manual[id]++
			}
		}
		r.Paused = 2*paused > ok
		r.Stats = MergeStats(stats)
		// A manual run only a minority of masters has heard of cannot win a
		// quorum: it is not offered.
		for _, id := range order {
			if manual[id] >= rl.quorum {
				r.Manual = append(r.Manual, id, at[id])
			}
		}
		out[k] = r
	}
	return out, nil
}

// write runs a Control write on every master; it holds when a quorum took it.
func (rl *redlock) write(ctx context.Context, op string, fn func(ctx context.Context, m *Redis) error) error {
	_, _, err := each(ctx, rl, op, func(ctx context.Context, _ int, m *Redis) (struct{}, error) {
		return struct{}{}, fn(ctx, m)
	})
	return err
}

func (rl *redlock) SetPaused(ctx context.Context, job string, paused bool, why string) error {
	return rl.write(ctx, "pause", func(ctx context.Context, m *Redis) error { return m.SetPaused(ctx, job, paused, why) })
}

func (rl *redlock) Trigger(ctx context.Context, job, id string) error {
	return rl.write(ctx, "trigger", func(ctx context.Context, m *Redis) error { return m.Trigger(ctx, job, id) })
}

// Cancel asks every master: the run stops when a quorum's renewals say so,
// and any one master's answer that it is running is enough to ask.
func (rl *redlock) Cancel(ctx context.Context, job, id, who string) (cancelAnswer, Outcome, error) {
	type res struct {
		a cancelAnswer
		o Outcome
	}
	per, errs, err := each(ctx, rl, "cancel", func(ctx context.Context, _ int, m *Redis) (res, error) {
		a, o, err := m.Cancel(ctx, job, id, who)
		return res{a, o}, err
	})
	if err != nil {
		return "", "", err
	}
	out := res{a: CancelNone}
	for i, r := range per {
		switch {
		case errs[i] != nil:
		case r.a == CancelAsked:
			return CancelAsked, "", nil
		case r.a == CancelEnded:
			out = r
		}
	}
	return out.a, out.o, nil
}

// Retry queues the retry on every master, as trigger does; a master that
// lacks the run's record (it missed its close) follows the others.
func (rl *redlock) Retry(ctx context.Context, job, id, newID, who string, ended bool) (retryAnswer, error) {
	per, errs, err := each(ctx, rl, "retry", func(ctx context.Context, _ int, m *Redis) (retryAnswer, error) {
		return m.Retry(ctx, job, id, newID, who, ended)
	})
	if err != nil {
		return "", err
	}
	n := map[retryAnswer]int{}
	for i, a := range per {
		if errs[i] == nil {
			n[a]++
		}
	}
	for _, a := range []retryAnswer{RetryRunning, RetryFull, retryQueued} {
		if n[a] > 0 && (a != retryQueued || n[a] >= rl.quorum) {
			return a, nil
		}
	}
	return RetryNone, nil
}

// Retries is the union of the masters' lists.
func (rl *redlock) Retries(ctx context.Context, job string) ([]RetryLink, error) {
	per, errs, err := each(ctx, rl, "retries", func(ctx context.Context, _ int, m *Redis) ([]RetryLink, error) {
		return m.Retries(ctx, job)
	})
	if err != nil {
		return nil, err
	}
	seen := map[RetryLink]bool{}
	var out []RetryLink
	for i, links := range per {
		for _, l := range links {
			if errs[i] == nil && !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// ManualHints is the union of the masters' hints (any one may have a
// request the others missed). Redis' clock is the median of the masters'
// that answered: one master with a wrong clock does not move it.
func (rl *redlock) ManualHints(ctx context.Context, h HintReq) (Hints, time.Time, error) {
	type answer struct {
		hints Hints
		at    time.Time
	}
	per, err := read(ctx, rl, "hints", func(ctx context.Context, m *Redis) (answer, error) {
		hs, at, err := m.ManualHints(ctx, h)
		return answer{hs, at}, err
	})
	if err != nil {
		return Hints{}, time.Time{}, err
	}
	var out Hints
	seen := map[string]bool{}
	union := func(to *[]string, kind string, js []string) {
		for _, j := range js {
			if !seen[kind+j] {
				seen[kind+j] = true
				*to = append(*to, j)
			}
		}
	}
	clocks := make([]time.Time, 0, len(per))
	for _, a := range per {
		clocks = append(clocks, a.at)
		union(&out.Manual, "m", a.hints.Manual)
		union(&out.Changed, "c", a.hints.Changed)
	}
	slices.SortFunc(clocks, time.Time.Compare)
	return out, clocks[len(clocks)/2], nil
}

// read asks every master and needs a quorum of answers.
func read[T any](ctx context.Context, rl *redlock, op string, fn func(ctx context.Context, m *Redis) (T, error)) ([]T, error) {
	per, errs, err := each(ctx, rl, op, func(ctx context.Context, _ int, m *Redis) (T, error) { return fn(ctx, m) })
	if err != nil {
		return nil, err
	}
	var out []T
	for i, v := range per {
		if errs[i] == nil {
			out = append(out, v)
		}
	}
	return out, nil
}

func (rl *redlock) History(ctx context.Context, job string, limit int) ([]Run, error) {
	lists, err := read(ctx, rl, "history", func(ctx context.Context, m *Redis) ([]Run, error) { return m.History(ctx, job, limit) })
	if err != nil {
		return nil, err
	}
	out, _ := mergeRuns(lists)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (rl *redlock) Get(ctx context.Context, job, suffix string) (*Run, error) {
	runs, err := read(ctx, rl, "get", func(ctx context.Context, m *Redis) ([]Run, error) {
		r, err := m.Get(ctx, job, suffix)
		if r == nil {
			return nil, err
		}
		return []Run{*r}, err
	})
	if err != nil {
		return nil, err
	}
	out, _ := mergeRuns(runs)
	if len(out) == 0 {
		return nil, nil
	}
	return &out[0], nil
}

func (rl *redlock) Status(ctx context.Context, job string, limit int) (*Status, error) {
	sts, err := read(ctx, rl, "status", func(ctx context.Context, m *Redis) (*Status, error) { return m.Status(ctx, job, limit) })
	if err != nil {
		return nil, err
	}
	return rl.mergeStatus(job, sts, limit), nil
}

// mergeStatus combines the masters' answers about one job.
func (rl *redlock) mergeStatus(job string, sts []*Status, limit int) *Status {
	st := &Status{Job: job, Running: []Run{}}
	paused := 0
	var running, hist [][]Run
	for _, s := range sts {
		if s.Paused {
			paused++
			st.PausedWhy = cmp.Or(st.PausedWhy, s.PausedWhy)
		}
		st.ConsecutiveFailures = max(st.ConsecutiveFailures, s.ConsecutiveFailures)
		st.Waiting = max(st.Waiting, s.Waiting)
		st.PendingManual = max(st.PendingManual, s.PendingManual)
		if s.LastScheduled.After(st.LastScheduled) {
			st.LastScheduled = s.LastScheduled
		}
		running = append(running, s.Running)
		hist = append(hist, s.History)
	}
	st.Paused = 2*paused > len(sts)
	if !st.Paused {
		st.PausedWhy = ""
	}
	// A run holds the job's mutex where a quorum of masters has it in a slot.
	runs, seen := mergeRuns(running)
	for _, r := range runs {
		if seen[r.ID] >= rl.quorum {
			st.Running = append(st.Running, r)
		}
	}
	if st.History, _ = mergeRuns(hist); len(st.History) > limit {
		st.History = st.History[:limit]
	}
	return st
}

// mergeRuns merges the masters' lists of run records: one record per run
// id, the version most masters agree on (decision, outcome, replica), with
// the highest fencing token among them (the one the job was given); newest
// first. It also returns on how many masters each run id was found.
func mergeRuns(lists [][]Run) ([]Run, map[string]int) {
	type version struct {
		r Run
		n int
	}
	byID := map[string][]*version{}
	seen := map[string]int{}
	for _, list := range lists {
		for _, r := range list {
			seen[r.ID]++
			vs := byID[r.ID]
			found := false
			for _, v := range vs {
				if v.r.Decision == r.Decision && v.r.Outcome == r.Outcome && v.r.Replica == r.Replica {
					v.n++
					if r.FencingToken > v.r.FencingToken {
						v.r = r
					}
					found = true
					break
				}
			}
			if !found {
				byID[r.ID] = append(vs, &version{r: r, n: 1})
			}
		}
	}
	out := make([]Run, 0, len(byID))
	for _, vs := range byID {
		best := slices.MaxFunc(vs, func(a, b *version) int {
			return cmp.Or(cmp.Compare(a.n, b.n),
				cmp.Compare(boolInt(a.r.Decision == Started), boolInt(b.r.Decision == Started)),
				a.r.FinishedAt.Compare(b.r.FinishedAt))
		})
		out = append(out, best.r)
	}
	slices.SortFunc(out, func(a, b Run) int {
		return cmp.Or(b.FinishedAt.Compare(a.FinishedAt), b.ScheduledAt.Compare(a.ScheduledAt), cmp.Compare(a.ID, b.ID))
	})
	return out, seen
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
