package store

import (
	"context"
	"fmt"
	"strconv"
)

// statusScript reads many jobs' state at once (see Control.Statuses).
var statusScript = script("status")

func (s *Redis) Statuses(ctx context.Context, jobs []string, limit int) ([]*Status, error) {
	var calls []call
	if s.cluster {
		for _, j := range jobs {
			calls = append(calls, call{keys: []string{s.MetaKey(j)}, Args: []any{limit}})
		}
	} else {
		keys := make([]string, len(jobs))
		for i, j := range jobs {
			keys[i] = s.MetaKey(j)
		}
		calls = []call{{keys: keys, Args: []any{limit}}}
	}
	res, err := s.exec(ctx, statusScript, calls)
	if err != nil {
		return nil, err
	}
	var per []any
	for _, r := range res {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("scheduler: status script answered %T", r)
		}
		per = append(per, list...)
	}
	if len(per) != len(jobs) {
		return nil, fmt.Errorf("scheduler: status script answered %d jobs for %d", len(per), len(jobs))
	}
	out := make([]*Status, len(jobs))
	for i, j := range jobs {
		if out[i], err = decodeStatus(j, per[i]); err != nil {
			return nil, err
		}
	}
	held, err := s.poolHolders(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if ids, ok := held[s.pools.pool(j)]; ok {
			out[i].Pool = s.pools.use(j, ids)
		}
	}
	return out, nil
}

// decodeStatus reads one job's part of the status script's answer.
func decodeStatus(job string, v any) (*Status, error) {
	f, ok := v.([]any)
	if !ok || len(f) < 8 {
		return nil, fmt.Errorf("scheduler: bad status answer for %q", job)
	}
	str := func(x any) string { s, _ := x.(string); return s }
	num := func(x any) int { n, _ := x.(int64); return int(n) }
	st := &Status{Job: job, Paused: str(f[0]) == "1", LastScheduled: MsTime(str(f[1])),
		Waiting: num(f[2]), PendingManual: num(f[3]), Running: []Run{}}
	if st.Paused {
		st.PausedWhy = str(f[6])
	}
	st.ConsecutiveFailures, _ = strconv.Atoi(str(f[7]))
	hist, _ := f[4].([]any)
	raw := make([]string, len(hist))
	for i, h := range hist {
		raw[i] = str(h)
	}
	var err error
	if st.History, err = decodeHistory(raw); err != nil {
		return nil, err
	}
	running, _ := f[5].([]any)
	for _, r := range running {
		pair, _ := r.([]any)
		if len(pair) != 2 {
			continue
		}
		flat, _ := pair[1].([]any)
		h := make(map[string]string, len(flat)/2)
		for k := 0; k+1 < len(flat); k += 2 {
			h[str(flat[k])] = str(flat[k+1])
		}
		st.Running = append(st.Running, runFromHash(str(pair[0]), h))
	}
	return st, nil
}

func (rl *redlock) Statuses(ctx context.Context, jobs []string, limit int) ([]*Status, error) {
	per, err := read(ctx, rl, "status", func(ctx context.Context, m *Redis) ([]*Status, error) { return m.Statuses(ctx, jobs, limit) })
	if err != nil {
		return nil, err
	}
	out := make([]*Status, len(jobs))
	for i, j := range jobs {
		sts := make([]*Status, 0, len(per))
		for _, p := range per {
			sts = append(sts, p[i])
		}
		out[i] = rl.mergeStatus(j, sts, limit)
	}
	return out, nil
}
