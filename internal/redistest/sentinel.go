package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// MasterName is the name the Sentinels of StartSentinel monitor.
const MasterName = "mymaster"

// Sentinel is a primary with replicas watched by Sentinels, every process a
// redis-server started by the test on a free loopback port.
type Sentinel struct {
	// Nodes are the data nodes; Nodes[0] is the first primary, the others
	// its replicas. Which one is the primary now, ask Primary.
	Nodes []*Server
	// Sentinels watch the nodes under MasterName, with a quorum of a majority.
	Sentinels []*Server
	certs     *Certs
}

// StartSentinel starts a primary, replicas replicating from it and
// sentinels Sentinels monitoring it (quorum: a majority), and waits until
// every replica is in sync and every Sentinel knows every replica — the
// state in which a failover can pick a replica. (Sentinels find each other
// over the next seconds; a forced failover does not need them to.) certs,
// when not nil, makes every process TLS-only (replication and Sentinel's
// connections included). Everything is stopped in t.Cleanup.
func StartSentinel(t testing.TB, replicas, sentinels int, certs *Certs) *Sentinel {
	t.Helper()
	s := &Sentinel{certs: certs}
	var tlsArgs []string
	if certs != nil {
		tlsArgs = certs.ServerArgs()
	}
	// A replica's first sync starts at once, not after the default 5s wait
	// for more replicas to share one transfer.
	nodeArgs := append([]string{"--repl-diskless-sync-delay", "0"}, tlsArgs...)
	primary := startServer(t, certs, nil, nodeArgs)
	s.Nodes = append(s.Nodes, primary)
	for range replicas {
		args := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}, nodeArgs...)
		s.Nodes = append(s.Nodes, startServer(t, certs, nil, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range s.Nodes[1:] {
		rc := r.Client(t, &redis.Options{MaxRetries: -1})
		waitFor(ctx, t, "replica "+r.Addr()+" in sync", func() (bool, string) {
			info, err := rc.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "master_link_status:up"), info
		})
	}
	conf := func(int) string {
		return fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d\n", MasterName, primary.Port, sentinels/2+1) +
			"sentinel down-after-milliseconds " + MasterName + " 2000\n" +
			"sentinel failover-timeout " + MasterName + " 10000\n" +
			"sentinel parallel-syncs " + MasterName + " 5\n"
	}
	for range sentinels {
		s.Sentinels = append(s.Sentinels, startServer(t, certs, conf, tlsArgs))
	}
	for _, sn := range s.Sentinels {
		sc := s.sentinelClient(t, sn)
		waitFor(ctx, t, "sentinel "+sn.Addr()+" knows every replica and sentinel", func() (bool, string) {
			reps, err := sc.Replicas(ctx, MasterName).Result()
			if err != nil {
				return false, err.Error()
			}
			ok := 0
			for _, r := range reps {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" {
					ok++
				}
			}
			return ok == replicas, fmt.Sprintf("replicas %v", reps)
		})
	}
	return s
}

// waitFor polls cond (processes we do not control) until it holds or ctx
// ends, then fails the test with what cond last said.
func waitFor(ctx context.Context, t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: timed out waiting for %s: %s", what, state)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Sentinel) sentinelClient(t testing.TB, sn *Server) *redis.SentinelClient {
	t.Helper()
	o := &redis.Options{Addr: sn.Addr(), MaxRetries: -1, DialTimeout: 2 * time.Second, TLSConfig: sn.TLS,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}}
	c := redis.NewSentinelClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// SentinelAddrs lists the Sentinels' host:port.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		out[i] = sn.Addr()
	}
	return out
}

// Primary returns the data node the first Sentinel names as the primary.
func (s *Sentinel) Primary(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := s.sentinelClient(t, s.Sentinels[0]).GetMasterAddrByName(ctx, MasterName).Result()
	if err != nil {
		t.Fatalf("redistest: sentinel get-master-addr-by-name: %v", err)
	}
	for _, n := range s.Nodes {
		if n.Addr() == net.JoinHostPort(addr[0], addr[1]) {
			return n
		}
	}
	t.Fatalf("redistest: sentinel names %v as primary, not one of the nodes", addr)
	return nil
}

// Failover asks a Sentinel for a graceful failover (SENTINEL FAILOVER: no
// agreement needed, the primary is up) and waits until every Sentinel names
// the new primary and the new primary says it is one. It returns the new
// primary. The old one is demoted later (see WaitDemoted).
func (s *Sentinel) Failover(t testing.TB) *Server {
	t.Helper()
	old := s.Primary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := s.sentinelClient(t, s.Sentinels[0])
	waitFor(ctx, t, "SENTINEL FAILOVER accepted", func() (bool, string) {
		err := sc.Failover(ctx, MasterName).Err()
		return err == nil, fmt.Sprint(err) // NOGOODSLAVE until a replica is eligible
	})
	var primary *Server
	for _, sn := range s.Sentinels {
		c := s.sentinelClient(t, sn)
		waitFor(ctx, t, "sentinel "+sn.Addr()+" names a new primary", func() (bool, string) {
			addr, err := c.GetMasterAddrByName(ctx, MasterName).Result()
			if err != nil {
				return false, err.Error()
			}
			a := net.JoinHostPort(addr[0], addr[1])
			for _, n := range s.Nodes {
				if n.Addr() == a && n != old {
					primary = n
				}
			}
			return a != old.Addr(), a
		})
	}
	pc := primary.Client(t, &redis.Options{MaxRetries: -1})
	waitFor(ctx, t, "the new primary to say so", func() (bool, string) {
		p, err := pc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(p, "role:master"), p
	})
	return primary
}

// WaitDemoted waits until old, a former primary, replicates the current
// one. Sentinel reconfigures a demoted primary only when it next polls it
// (every 10s); until then it still takes writes from clients that have not
// heard of the failover — writes that its resync from the new primary then
// discards.
func (s *Sentinel) WaitDemoted(t testing.TB, old *Server) {
	t.Helper()
	primary := s.Primary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	oc := old.Client(t, &redis.Options{MaxRetries: -1})
	waitFor(ctx, t, "the old primary to replicate the new one", func() (bool, string) {
		o, err := oc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(o, "role:slave") &&
			strings.Contains(o, "master_port:"+strconv.Itoa(primary.Port)) && strings.Contains(o, "master_link_status:up"), o
	})
}

// Client returns a Sentinel-aware client of the primary, closed in
// t.Cleanup. opt may be nil; its MasterName, SentinelAddrs (and TLSConfig,
// for a TLS deployment, unless set) are filled in.
func (s *Sentinel) Client(t testing.TB, opt *redis.FailoverOptions) *redis.Client {
	t.Helper()
	o := redis.FailoverOptions{}
	if opt != nil {
		o = *opt
	}
	o.MasterName, o.SentinelAddrs = MasterName, s.SentinelAddrs()
	if o.TLSConfig == nil && s.certs != nil {
		o.TLSConfig = s.certs.ClientConfig()
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	o.ContextTimeoutEnabled = true
	c := redis.NewFailoverClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
