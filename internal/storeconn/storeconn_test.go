package storeconn_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/redistest"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/scheduler"
)

// aclArgs is the ACL user docs/deployment.md recommends, with password pw,
// as ACL SETUSER arguments.
func aclArgs(t *testing.T, pw string) []any {
	t.Helper()
	doc, err := os.ReadFile("../../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(doc)) {
		if rule, ok := strings.CutPrefix(line, "ACL SETUSER "); ok {
			var args []any
			for _, f := range strings.Fields(rule) {
				if f == ">CHANGE-ME" {
					f = ">" + pw
				}
				args = append(args, f)
			}
			return args
		}
	}
	t.Fatal("docs/deployment.md has no ACL SETUSER line")
	return nil
}

// addUser creates the documented ACL user on each server and turns the
// default user off.
func addUser(t *testing.T, pw string, servers ...*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		c := s.Client(t, nil)
		if err := c.Do(t.Context(), append([]any{"acl", "setuser"}, aclArgs(t, pw)...)...).Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
		if err := c.Do(t.Context(), "acl", "setuser", "default", "off").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func store(s config.Store) config.Store {
	if s.KeyPrefix == "" {
		s.KeyPrefix = config.DefaultKeyPrefix
	}
	if s.MaxClockSkew == 0 {
		s.MaxClockSkew = 300 * time.Millisecond
	}
	return s
}

func open(t *testing.T, s config.Store) *storeconn.Conn {
	t.Helper()
	conn, err := storeconn.Open(store(s))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// exercise runs one replica on conn for a few seconds — a job every second
// and a manual run — and checks the runs started and the controls work.
func exercise(t *testing.T, conn *storeconn.Conn) {
	t.Helper()
	ledger := testkit.NewLedger()
	s, err := conn.NewScheduler([]scheduler.Job{
		{Name: "tick", Schedule: "* * * * * *", Handler: ledger.Job(nil)},
		{Name: "once", Schedule: "@yearly", Handler: ledger.Job(nil)},
	}, scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := conn.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	time.Sleep(500 * time.Millisecond)
	manual, err := ctl.Trigger(t.Context(), "once")
	if err != nil {
		t.Errorf("Trigger: %v", err)
	}
	time.Sleep(2500 * time.Millisecond)
	cancel()
	<-done
	if err := s.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
	starts := ledger.Starts()
	if len(ledger.Runs("tick")) < 2 || starts[manual] != 1 {
		t.Errorf("in 3s: %d runs of tick, manual run started %d times", len(ledger.Runs("tick")), starts[manual])
	}
	st, err := ctl.Status(t.Context(), "tick", 10)
	if err != nil || len(st.History) < 2 {
		t.Errorf("Status: %+v, %v", st, err)
	}
	if err := conn.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func tlsFiles(c *redistest.Certs) *config.TLS {
	return &config.TLS{CAFile: c.CAFile, CertFile: c.ClientCert, KeyFile: c.ClientKey}
}

// A TLS-only server that requires client certificates: the scheduler runs
// through rediss:// with the tls section; a wrong CA, a missing client
// certificate or a wrong server name fail.
func TestStandaloneTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs)
	u := "rediss://" + srv.Addr() + "/0"
	exercise(t, open(t, config.Store{URL: u, TLS: tlsFiles(certs)}))

	other := redistest.NewCerts(t)
	for name, tc := range map[string]*config.TLS{
		"wrong CA":          {CAFile: other.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey},
		"no client cert":    {CAFile: certs.CAFile},
		"wrong server name": {CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey, ServerName: "redis.example"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		err := open(t, config.Store{URL: u, TLS: tc}).Ping(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s: Ping succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := storeconn.Open(store(config.Store{URL: u, TLS: &config.TLS{CAFile: certs.ServerKey}})); err == nil || !strings.Contains(err.Error(), "store.tls.ca_file") {
		t.Errorf("a CA file without certificates: %v", err)
	}
}

// The scheduler and its controls work under the documented ACL user; wrong
// credentials fail with Redis' message and without the password.
func TestACLUser(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	addUser(t, "s3cret-pw", srv)
	conn := open(t, config.Store{URL: "redis://solocron:s3cret-pw@" + srv.Addr() + "/0"})
	if strings.Contains(conn.Where, "s3cret-pw") {
		t.Errorf("Where shows the password: %s", conn.Where)
	}
	exercise(t, conn)

	for _, u := range []string{
		"redis://solocron:wrong-pw-4711@" + srv.Addr(),
		"redis://nobody:wrong-pw-4711@" + srv.Addr(),
		"redis://" + srv.Addr(),
	} {
		c := open(t, config.Store{URL: u})
		err := c.Ping(t.Context())
		if err == nil {
			t.Errorf("%s: Ping succeeded", c.Where)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "wrong-pw-4711") || !(strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH")) {
			t.Errorf("%s: error %q: want Redis' WRONGPASS/NOAUTH, without the password", c.Where, msg)
		}
		// The engine reports the same error when it cannot claim.
		s, err := c.NewScheduler([]scheduler.Job{{Name: "tick", Schedule: "@yearly", Handler: testkit.NewLedger().Job(nil)}},
			scheduler.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		_ = s.Run(ctx)
		cancel()
		if err := s.Ready(); err == nil {
			t.Errorf("%s: Ready with wrong credentials", c.Where)
		}
	}
}

// Sentinel over TLS (sentinels and data nodes, replication too) with the
// documented ACL user on the data nodes and another on the sentinels.
func TestSentinelTLSAndACL(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	sn := redistest.StartSentinel(t, 1, 3, certs)
	// The sentinels keep using the default user of the data nodes: the ACL
	// user is the scheduler's.
	for _, n := range sn.Nodes {
		c := n.Client(t, nil)
		if err := c.Do(t.Context(), append([]any{"acl", "setuser"}, aclArgs(t, "pw-1")...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The sentinels have their own user.
	for _, s := range sn.Sentinels {
		c := s.Client(t, nil)
		for _, args := range [][]any{
			{"acl", "setuser", "watcher", "on", ">spw-9", "+@all", "&*"},
			{"acl", "setuser", "default", "off"},
		} {
			if err := c.Do(t.Context(), args...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	exercise(t, open(t, config.Store{
		Mode:     "sentinel",
		URL:      "rediss://solocron:pw-1@/0",
		Sentinel: config.Sentinel{Master: redistest.MasterName, Addrs: sn.SentinelAddrs(), Username: "watcher", Password: "spw-9"},
		TLS:      tlsFiles(certs),
	}))
	bad := open(t, config.Store{
		Mode:     "sentinel",
		URL:      "rediss://solocron:pw-1@/0",
		Sentinel: config.Sentinel{Master: redistest.MasterName, Addrs: sn.SentinelAddrs(), Username: "watcher", Password: "wrong-spw-77"},
		TLS:      tlsFiles(certs),
	})
	bctx, bcancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer bcancel()
	if err := bad.Ping(bctx); err == nil || strings.Contains(err.Error(), "wrong-spw-77") {
		t.Errorf("wrong sentinel password: %v", err)
	} else {
		t.Logf("wrong sentinel password: %v", err)
	}
	// Without the tls section and with a redis:// URL, nothing answers.
	c := open(t, config.Store{Mode: "sentinel", Sentinel: config.Sentinel{Master: redistest.MasterName, Addrs: sn.SentinelAddrs()}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err == nil {
		t.Error("plain TCP reached TLS-only sentinels")
	}
}

// Redis Cluster over TLS (the cluster bus too) with the ACL user on every
// node: the cluster client needs CLUSTER SLOTS, the rest is the scripts.
func TestClusterTLSAndACL(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	cl := redistest.StartCluster(t, 3, certs)
	addUser(t, "pw-2", cl.Masters...)
	exercise(t, open(t, config.Store{
		Mode:    "cluster",
		URL:     "rediss://solocron:pw-2@",
		Cluster: config.Cluster{Addrs: cl.Addrs()},
		TLS:     tlsFiles(certs),
	}))
}

// Redlock over three TLS masters, each URL with its own credentials.
func TestRedlockTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	masters := redistest.StartMasters(t, 3, certs)
	var urls []string
	for i, m := range masters {
		pw := fmt.Sprintf("pw-%d", i)
		addUser(t, pw, m)
		urls = append(urls, "rediss://solocron:"+url.PathEscape(pw)+"@"+m.Addr())
	}
	conn := open(t, config.Store{Mode: "redlock", Redlock: config.Redlock{URLs: urls}, TLS: tlsFiles(certs)})
	if conn.Client != nil || len(conn.Masters) != 3 || conn.Mode != "redlock" {
		t.Fatalf("redlock Conn: Client %v, %d masters, mode %s", conn.Client, len(conn.Masters), conn.Mode)
	}
	if strings.Contains(conn.Where, "pw-") {
		t.Errorf("Where shows a password: %s", conn.Where)
	}
	exercise(t, conn)
	masters[0].Kill()
	if err := conn.Ping(t.Context()); err != nil {
		t.Errorf("Ping with 2 of 3 masters: %v", err)
	}
	masters[1].Kill()
	if err := conn.Ping(t.Context()); err == nil {
		t.Error("Ping with 1 of 3 masters succeeded")
	}
}

// Options carries what the store section says to the scheduler.
func TestOptionsFromStore(t *testing.T) {
	srv := redistest.Start(t)
	conn := open(t, config.Store{URL: "redis://" + srv.Addr(), KeyPrefix: "app", MinReplicasAck: 1, MinReplicasAckTimeout: 50 * time.Millisecond})
	ctl, err := conn.NewControl()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Pause(t.Context(), "j"); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.Client(t, nil).Exists(t.Context(), "app:{j}:meta").Result(); n != 1 {
		t.Error("the key prefix did not reach the controls")
	}
	// min_replicas_ack reaches the scheduler: with no replica, nothing starts.
	ledger := testkit.NewLedger()
	s, err := conn.NewScheduler([]scheduler.Job{{Name: "tick", Schedule: "* * * * * *", Handler: ledger.Job(nil)}},
		scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
	defer cancel()
	_ = s.Run(ctx)
	if n := len(ledger.Entries()); n != 0 {
		t.Errorf("%d runs started without any replica to acknowledge them", n)
	}
}

// OpenAdmin is a separate client: its own small pool, named so CLIENT LIST
// tells it from the scheduler's.
func TestOpenAdmin(t *testing.T) {
	srv := redistest.Start(t)
	conn, err := storeconn.Open(config.Store{URL: "redis://" + srv.Addr() + "/0", Mode: "standalone"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	adm, err := conn.OpenAdmin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if adm.Client == conn.Client {
		t.Fatal("the admin client is the scheduler's")
	}
	ctx := t.Context()
	if err := adm.Client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	list, err := srv.Client(t, nil).ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "name="+storeconn.AdminClientName+" "); n != 1 {
		t.Errorf("CLIENT LIST shows %d admin connections, want 1:\n%s", n, list)
	}
	if o := adm.Client.(*redis.Client).Options(); o.PoolSize != 4 || o.ClientName != "solocron-admin" {
		t.Errorf("admin pool %d, name %q", o.PoolSize, o.ClientName)
	}
	if o := conn.Client.(*redis.Client).Options(); o.ClientName != "" {
		t.Errorf("the scheduler's client is named %q", o.ClientName)
	}
}

// The embedded store began empty with the process: a job without state in
// it is new, and its first instants run. (On a Redis that may have lost the
// job's state, the runs due in the first max_clock_skew + claim ahead are
// recorded missed instead, which on the embedded store read as a loss that
// never happened.)
func TestEmbeddedStoreRunsFirstInstants(t *testing.T) {
	conn := open(t, config.Store{})
	ledger := testkit.NewLedger()
	s, err := conn.NewScheduler([]scheduler.Job{{Name: "tick", Schedule: "* * * * * *", Handler: ledger.Job(nil)}},
		scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for len(ledger.Entries()) < 2 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // polls the ledger; the runs come on the real clock
	}
	cancel()
	<-done
	if len(ledger.Entries()) < 2 {
		t.Fatal("fewer than two runs in 10 s")
	}
	h, err := s.Control().History(t.Context(), "tick", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h {
		if r.Outcome == scheduler.Missed {
			t.Errorf("run %s recorded missed on a new embedded store: %s", r.ID, r.Error)
		}
	}
}
