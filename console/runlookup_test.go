package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/console"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// A run page looks its run up in the job's history in two reads at most,
// whatever the job's history_limit: the latest 100 records, then the rest
// at once. It read 100 at a time: an unknown run id of a job keeping
// 10,000 records cost 100 reads before its 404 (here, 3000 records: 32
// round trips; now 3).
func TestRunLookupRoundTripsDoNotGrowWithHistory(t *testing.T) {
	t.Parallel()
	srv := miniredis.RunT(t)
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = cl.Close() })
	var rt testkit.RoundTripCounter
	cl.AddHook(&rt)
	ctl := schedtest.RedisStore(t, cl).Control()
	tab := []scheduler.Job{{Name: "big", Schedule: "@every 1m", HistoryLimit: 10000,
		Handler: jobs.Func(func(context.Context) error { return nil })}}
	// 3000 records, newest first, as the store files them.
	const kept = 3000
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	idAt := func(i int) string { // i: place in the history, 0 the newest
		return "big@" + start.Add(time.Duration(kept-i)*time.Minute).Format(time.RFC3339)
	}
	for i := range kept {
		at := start.Add(time.Duration(kept-i) * time.Minute).UnixMilli()
		if _, err := srv.RPush("solocron:{big}:history", fmt.Sprintf(
			`{"id":%q,"job":"big","kind":"scheduled","sched":"%d","decision":"started","outcome":"succeeded","replica":"r1","fence":"%d","started":"%d","finished":"%d","attempts":"1","error":"","output":"output of record %d","trace":""}`,
			idAt(i), at, i+1, at, at+1000, i)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := console.New(console.Config{Control: ctl, Jobs: func() []scheduler.Job { return tab }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// A warm-up opens the client's connections (HELLO, CLIENT).
	get(t, h, "/runs/"+url.PathEscape(idAt(0)))
	get(t, h, "/runs/"+url.PathEscape(idAt(0)))
	for _, c := range []struct {
		id        string
		code      int
		want      string
		most      int64
		whatItWas string
	}{
		{idAt(3), 200, "output of record 3", 2, "a recent run: its record, then the latest 100"},
		{idAt(2500), 200, "output of record 2500", 3, "an old run: its record, the latest 100, the rest"},
		{"big@2001-01-01T00:00:00Z", 404, "No record of run", 3, "an unknown run"},
		{"big@manual-t5z0k90123456789abc", 404, "No record of run", 3, "an unknown manual run"},
	} {
		before := rt.Load()
		w := get(t, h, "/runs/"+url.PathEscape(c.id))
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s (%s): %d, lacks %q", c.id, c.whatItWas, w.Code, c.want)
		}
		if n := rt.Load() - before; n > c.most {
			t.Errorf("%s (%s): %d round trips to the store, want at most %d", c.id, c.whatItWas, n, c.most)
		} else {
			t.Logf("%s (%s): %d round trips", c.id, c.whatItWas, n)
		}
	}
}
