package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/schedtest"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/notify"
	"github.com/solocron/solocron/scheduler"
)

// A pause with a reason keeps it, with who asked, on one line: in Status,
// in Overview (the console's read) and in the paused notification. A plain
// pause keeps none; resume clears it.
func TestPauseWithReason(t *testing.T) {
	_, rdb := redistest.Mini(t)
	rcv := newReceiver(t)
	f := newFleet(t)
	table := []scheduler.Job{{Name: "held", Schedule: "@every 1h", Handler: flaky(0), Notify: []string{"ops"}}}
	s, err := scheduler.New(schedtest.RedisStore(t, rdb), table, scheduler.WithLogger(quiet), scheduler.WithSyncInterval(100*time.Millisecond),
		scheduler.WithNotifications(rcv.target(notify.Paused)))
	if err != nil {
		t.Fatal(err)
	}
	f.run(s)
	ctx := context.Background()
	testkit.WaitFor(t, 10*time.Second, "the subscription", func() bool {
		return rdb.Exists(ctx, "solocron:{held}:notify:on").Val() == 1
	})
	ctl := s.Control()
	const want = "DB migration INC-42 (paused by cli alice@ops1)"
	if err := ctl.PauseWithReason(ctx, "held", "  DB migration\nINC-42 ", "cli alice@ops1"); err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Status(ctx, "held", 1)
	if err != nil || !st.Paused || st.PausedWhy != want {
		t.Fatalf("status: %v paused %v why %q", err, st.Paused, st.PausedWhy)
	}
	ov, err := ctl.Overview(ctx, []string{"held"}, 1)
	if err != nil || !ov[0].Paused || ov[0].PausedWhy != want {
		t.Fatalf("overview: %v %+v", err, ov)
	}
	testkit.WaitFor(t, 20*time.Second, "the paused notification", func() bool { return len(rcv.posts()) >= 1 })
	if p := rcv.posts()[0]; p.event != "paused" || p.body.Reason != want {
		t.Errorf("paused notification: %s reason %q, want %q", p.event, p.body.Reason, want)
	}
	if err := ctl.Resume(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Pause(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if st, _ := ctl.Status(ctx, "held", 1); !st.Paused || st.PausedWhy != "" {
		t.Errorf("a plain pause after resume: paused %v why %q", st.Paused, st.PausedWhy)
	}
	if err := ctl.PauseWithReason(ctx, "held", "", "console from 10.1.2.3"); err != nil {
		t.Fatal(err)
	}
	if st, _ := ctl.Status(ctx, "held", 1); st.PausedWhy != "paused by console from 10.1.2.3" {
		t.Errorf("a pause without a reason: why %q", st.PausedWhy)
	}
	// Bidirectional controls would show what follows them reversed: the
	// "(paused by ...)" that says who asked, in a terminal or the console.
	if err := ctl.PauseWithReason(ctx, "held", "deploy\u202e)4.3.2.1 morf ipa yb desuap(", "cli bob\u2066@ops2"); err != nil {
		t.Fatal(err)
	}
	if st, _ := ctl.Status(ctx, "held", 1); st.PausedWhy != "deploy )4.3.2.1 morf ipa yb desuap( (paused by cli bob @ops2)" {
		t.Errorf("a reason with bidirectional controls: why %q", st.PausedWhy)
	}
	long := strings.Repeat("x", 2000)
	if err := ctl.PauseWithReason(ctx, "held", long, ""); err != nil {
		t.Fatal(err)
	}
	if st, _ := ctl.Status(ctx, "held", 1); len(st.PausedWhy) > 512 {
		t.Errorf("a long reason is kept whole: %d bytes", len(st.PausedWhy))
	}
}
