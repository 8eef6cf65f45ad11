package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/internal/admin"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// GET /api/v1/replicas lists the registry; read-only refuses actions; the
// console answers the paths the API does not.
func TestReplicasReadOnlyAndConsole(t *testing.T) {
	srv := miniredis.RunT(t)
	s, err := scheduler.New(schedtest.RedisStore(t, redis.NewClient(&redis.Options{Addr: srv.Addr()})), table(),
		scheduler.WithReplicaID("r1"), scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond), scheduler.WithVersion("v9"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	f := &fixture{t: t, sched: s}
	f.h = admin.NewHandler(admin.Config{
		Jobs: s.Jobs, Control: s.Control(), ReplicaID: "r1", Logger: quiet, ReadOnly: true,
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }),
	})
	var list admin.ReplicaList
	testkit.WaitFor(t, 10*time.Second, "r1 registered", func() bool {
		a := f.do("GET", "/api/v1/replicas", "")
		a.decode(t, &list)
		return a.code == 200 && len(list.Replicas) == 1
	})
	if r := list.Replicas[0]; r.ID != "r1" || r.Version != "v9" || r.Jobs != 3 || r.Table != scheduler.TableFingerprint(s.Jobs()) || list.TablesDiffer {
		t.Errorf("replicas: %+v", list)
	}
	f.do("POST", "/api/v1/jobs/tick/trigger", "").wantError(t, http.StatusForbidden, "read-only")
	if a := f.do("GET", "/jobs/tick", ""); a.code != http.StatusTeapot {
		t.Errorf("console path: %d", a.code)
	}
	f.do("GET", "/api/v1/nope", "").wantError(t, http.StatusNotFound, "no such endpoint")
}
