package scheduler

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store's side of the notification queues (common.lua queues the
// events as it closes runs): the subscriptions a table writes, taking what
// is due (notify_take.lua) and reporting a delivery (notify_done.lua).

// notifySub is one job's subscription as notify:on holds it, "" for none.
type notifySub struct{ job, sub string }

// notifySubscribe writes the table's subscriptions, one pipeline: set (for
// ttl) for the jobs with notifications, deleted for the others, and the
// flag in each job's meta (common.lua's notify) that says which.
func (s *store) notifySubscribe(ctx context.Context, subs []notifySub, ttl time.Duration) error {
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, j := range subs {
			// The meta's flag tells the scripts that close runs whether
			// to look for a subscription: a job without one never reads
			// the notification keys.
			k, meta := s.key(j.job, "notify:on"), s.metaKey(j.job)
			if j.sub != "" {
				p.Set(ctx, k, j.sub, ttl)
				p.HSet(ctx, meta, "notify", "1")
			} else {
				p.Del(ctx, k)
				p.HDel(ctx, meta, "notify")
			}
		}
		return nil
	})
	return err
}

// notifyTakeReq asks for what is due of one job's queue (its meta key):
// at most share deliveries, each leased to the taker for lease.
type notifyTakeReq struct {
	metaKey string
	lease   time.Duration
	share   int
}

// notifyTaken is one job's take: its deliveries, and how many events its
// full queue dropped.
type notifyTaken struct {
	items   []takenItem
	dropped int64
}

// notifyTake takes, for owner, what is due of each request's queue: one
// notify_take.lua call per job, one round trip.
func (s *store) notifyTake(ctx context.Context, owner string, reqs []notifyTakeReq) ([]notifyTaken, error) {
	calls := make([]call, 0, len(reqs))
	for _, r := range reqs {
		calls = append(calls, call{keys: []string{r.metaKey}, args: []any{owner, r.lease.Milliseconds(), r.share}})
	}
	replies, err := s.exec(ctx, notifyTakeScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]notifyTaken, len(replies))
	for i, v := range replies {
		out[i].items, out[i].dropped = takeReply(v)
	}
	return out, nil
}

// notifyDone reports owner's delivery key of the job (its meta key): due
// again in ms, or removed from the queue for ms < 0.
func (s *store) notifyDone(ctx context.Context, metaKey, key, owner string, ms int64) error {
	return notifyDoneScript.Run(ctx, s.c, []string{metaKey}, key, owner, strconv.FormatInt(ms, 10)).Err()
}

type takenItem struct {
	key     string // "<target> <run id>:<event>"
	body    string // the event as the script queued it
	attempt int64
}

func takeReply(v any) ([]takenItem, int64) {
	a, _ := v.([]any)
	if len(a) != 2 {
		return nil, 0
	}
	dropped, _ := a[1].(int64)
	list, _ := a[0].([]any)
	out := make([]takenItem, 0, len(list))
	for _, e := range list {
		f, _ := e.([]any)
		if len(f) != 3 {
			continue
		}
		k, _ := f[0].(string)
		b, _ := f[1].(string)
		at, _ := f[2].(int64)
		out = append(out, takenItem{key: k, body: b, attempt: at})
	}
	return out, dropped
}

// queuedEvent is an event as the scripts queue it.
type queuedEvent struct {
	Event  string  `json:"event"`
	Run    wireRun `json:"run"`
	Queued string  `json:"queued"`
}
