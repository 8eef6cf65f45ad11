package admin_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

// GET /api/v1/jobs carries each pooled job's pool use: size, slots held,
// and the runs holding them.
func TestJobListShowsPoolUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := redistest.MiniPipe(t)
		long := jobs.Func(func(ctx context.Context) error {
			select {
			case <-time.After(time.Minute):
			case <-ctx.Done():
			}
			return nil
		})
		tab := []scheduler.Job{
			{Name: "a", Schedule: "@every 1s", Handler: long, Pool: "exports", PoolSize: 1},
			{Name: "b", Schedule: "@every 1s", Handler: long, Pool: "exports", PoolSize: 1},
			{Name: "solo", Schedule: "@hourly", Handler: long},
		}
		s, err := scheduler.New(schedtest.RedisStore(t, c), tab, scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		time.Sleep(3 * time.Second)
		h := admin.NewHandler(admin.Config{Jobs: s.Jobs, Control: s.Control(), ReplicaID: "r1", Logger: quiet, Listen: "127.0.0.1:9090"})
		r := httptest.NewRequest("GET", "/api/v1/jobs", nil)
		r.Host = "127.0.0.1:9090"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var list admin.JobList
		answer{code: w.Code, hdr: w.Header(), body: w.Body.String()}.decode(t, &list)
		for _, j := range list.Jobs {
			switch p := j.Pool; {
			case j.Name == "solo" && p != nil:
				t.Errorf("solo shows a pool: %+v", p)
			case j.Name != "solo" && (p == nil || p.Name != "exports" || p.Size != 1 || p.Used != 1 || len(p.Holders) != 1):
				t.Errorf("job %s: pool %+v, want exports 1/1 held", j.Name, p)
			}
		}
		if !strings.Contains(w.Body.String(), `"pool":{"name":"exports","size":1,"used":1,"holders":["`) {
			t.Errorf("answer: %s", w.Body.String())
		}
	})
}
