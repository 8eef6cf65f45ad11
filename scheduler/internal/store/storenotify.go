package store

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store's side of the notification queues (lua/parts/notify.lua queues the
// events as it closes runs): the subscriptions a table writes, taking what
// is due (notify_take.lua) and reporting a delivery (notify_done.lua).

// NotifySub is one job's subscription as notify:on holds it, "" for none.
type NotifySub struct{ Job, Sub string }

// NotifySubscribe writes the table's subscriptions, one pipeline: set (for
// ttl) for the jobs with notifications, deleted for the others, and the
// flag in each job's meta (lua/parts/notify.lua) that says which.
func (s *Redis) NotifySubscribe(ctx context.Context, subs []NotifySub, ttl time.Duration) error {
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, j := range subs {
			// The meta's flag tells the scripts that close runs whether
			// to look for a subscription: a job without one never reads
			// the notification keys.
			k, meta := s.Key(j.Job, "notify:on"), s.MetaKey(j.Job)
			if j.Sub != "" {
				p.Set(ctx, k, j.Sub, ttl)
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

// NotifyTakeReq asks for what is due of one job's queue (its meta key):
// at most share deliveries, each leased to the taker for lease.
type NotifyTakeReq struct {
	MetaKey string
	Lease   time.Duration
	Share   int
}

// notifyTaken is one job's take: its deliveries, and how many events its
// full queue dropped.
type notifyTaken struct {
	Items   []TakenItem
	Dropped int64
}

// NotifyTake takes, for owner, what is due of each request's queue: one
// notify_take.lua call per job, one round trip.
func (s *Redis) NotifyTake(ctx context.Context, owner string, reqs []NotifyTakeReq) ([]notifyTaken, error) {
	calls := make([]call, 0, len(reqs))
	for _, r := range reqs {
		calls = append(calls, call{keys: []string{r.MetaKey}, Args: []any{owner, r.Lease.Milliseconds(), r.Share}})
	}
	replies, err := s.exec(ctx, notifyTakeScript, calls)
	if err != nil {
		return nil, err
	}
	out := make([]notifyTaken, len(replies))
	for i, v := range replies {
		out[i].Items, out[i].Dropped = takeReply(v)
	}
	return out, nil
}

// NotifyDone reports owner's delivery key of the job (its meta key): due
// again in ms, or removed from the queue for ms < 0.
func (s *Redis) NotifyDone(ctx context.Context, metaKey, key, owner string, ms int64) error {
	return notifyDoneScript.Run(ctx, s.c, []string{metaKey}, key, owner, strconv.FormatInt(ms, 10)).Err()
}

type TakenItem struct {
	Key     string // "<target> <run id>:<event>"
	Body    string // the event as the script queued it
	Attempt int64
}

func takeReply(v any) ([]TakenItem, int64) {
	a, _ := v.([]any)
	if len(a) != 2 {
		return nil, 0
	}
	dropped, _ := a[1].(int64)
	list, _ := a[0].([]any)
	out := make([]TakenItem, 0, len(list))
	for _, e := range list {
		f, _ := e.([]any)
		if len(f) != 3 {
			continue
		}
		k, _ := f[0].(string)
		b, _ := f[1].(string)
		at, _ := f[2].(int64)
		out = append(out, TakenItem{Key: k, Body: b, Attempt: at})
	}
	return out, dropped
}

// QueuedEvent is an event as the scripts queue it.
type QueuedEvent struct {
	Event  string  `json:"event"`
	Run    WireRun `json:"run"`
	Queued string  `json:"queued"`
}
