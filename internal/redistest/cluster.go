package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// CLI returns the path of redis-cli, or skips (or fails, when Required) the
// test if there is none.
func CLI(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "redis-cli")
}

// Cluster is a Redis Cluster, each node a redis-server started by the test
// on free loopback ports (client port and cluster bus).
type Cluster struct {
	Masters []*Server
	// Replicas maps each master to its replicas (none with StartCluster).
	Replicas map[*Server][]*Server
	certs    *Certs
}

// StartCluster starts n masters with cluster mode on, joins them with
// redis-cli --cluster create (the slots split evenly among them) and waits
// until every node reports the cluster healthy. certs, when not nil, makes
// every node TLS-only, the cluster bus included. Everything is stopped in
// t.Cleanup.
func StartCluster(t testing.TB, n int, certs *Certs) *Cluster {
	t.Helper()
	return StartClusterReplicas(t, n, 0, certs)
}

// StartClusterReplicas is StartCluster with replicas replicas per master,
// in sync when it returns.
func StartClusterReplicas(t testing.TB, n, replicas int, certs *Certs) *Cluster {
	t.Helper()
	cli := CLI(t)
	c := &Cluster{certs: certs, Replicas: map[*Server][]*Server{}}
	var nodes []*Server
	for range n * (1 + replicas) {
		bus, err := FreePort()
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000", "--repl-diskless-sync-delay", "0"}
		if certs != nil {
			args = append(append(certs.ServerArgs(), "--tls-cluster", "yes"), args...)
		}
		nodes = append(nodes, startServer(t, certs, nil, args))
	}
	args := []string{"--cluster", "create"}
	for _, s := range nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	args = append(args, cliTLS(certs)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.roles(t, ctx, nodes, n*replicas)
	c.waitHealthy(t, 30*time.Second, len(nodes))
	for _, rs := range c.Replicas {
		for _, r := range rs {
			rc := r.Client(t, &redis.Options{MaxRetries: -1})
			waitFor(ctx, t, "cluster replica "+r.Addr()+" in sync", func() (bool, string) {
				info, err := rc.Info(ctx, "replication").Result()
				return err == nil && strings.Contains(info, "master_link_status:up"), info
			})
		}
	}
	return c
}

// roles sorts nodes into masters and their replicas, as redis-cli chose.
func (c *Cluster) roles(t testing.TB, ctx context.Context, nodes []*Server, replicas int) {
	t.Helper()
	cl := nodes[0].Client(t, &redis.Options{MaxRetries: -1})
	byPort := map[string]*Server{}
	for _, s := range nodes {
		byPort[strconv.Itoa(s.Port)] = s
	}
	// Each line of CLUSTER NODES: id addr:port@bus flags master-id ...
	var replicaOf [][2]string
	ids := map[string]*Server{}
	waitFor(ctx, t, "every node's role", func() (bool, string) {
		out, err := cl.ClusterNodes(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		replicaOf, ids = nil, map[string]*Server{}
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			addr := strings.SplitN(f[1], "@", 2)[0]
			s := byPort[addr[strings.LastIndexByte(addr, ':')+1:]]
			ids[f[0]] = s
			if strings.Contains(f[2], "slave") {
				replicaOf = append(replicaOf, [2]string{f[0], f[3]})
			}
		}
		return len(ids) == len(nodes) && len(replicaOf) == replicas, out
	})
	replica := map[*Server]bool{}
	for _, p := range replicaOf {
		r, m := ids[p[0]], ids[p[1]]
		c.Replicas[m] = append(c.Replicas[m], r)
		replica[r] = true
	}
	for _, s := range nodes {
		if !replica[s] {
			c.Masters = append(c.Masters, s)
		}
	}
}

func cliTLS(certs *Certs) []string {
	if certs == nil {
		return nil
	}
	return []string{"--tls", "--cacert", certs.CAFile, "--cert", certs.ClientCert, "--key", certs.ClientKey}
}

// Addrs lists the masters' host:port.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Masters))
	for i, s := range c.Masters {
		out[i] = s.Addr()
	}
	return out
}

// waitHealthy waits until every node says cluster_state:ok and knows every
// other node: only then do all of them agree on who serves which slot.
func (c *Cluster) waitHealthy(t testing.TB, limit time.Duration, nodes int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	all := slices.Clone(c.Masters)
	for _, rs := range c.Replicas {
		all = append(all, rs...)
	}
	for _, s := range all {
		cl := s.Client(t, &redis.Options{MaxRetries: -1})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := cl.ClusterInfo(ctx).Result()
			cancel()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_ok:16384") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(nodes)+"\r") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not healthy after %s: %v\n%s", s.Addr(), limit, err, info)
			}
			time.Sleep(50 * time.Millisecond) // polling processes we do not control
		}
	}
}

// Client returns a cluster client seeded with every master, closed in
// t.Cleanup. opt may be nil; its Addrs (and TLSConfig, for a TLS cluster,
// unless set) are filled in.
func (c *Cluster) Client(t testing.TB, opt *redis.ClusterOptions) *redis.ClusterClient {
	t.Helper()
	o := redis.ClusterOptions{}
	if opt != nil {
		o = *opt
	}
	o.Addrs = c.Addrs()
	if o.TLSConfig == nil && c.certs != nil {
		o.TLSConfig = c.certs.ClientConfig()
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	o.ContextTimeoutEnabled = true
	if o.MaintNotificationsConfig == nil {
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	}
	cl := redis.NewClusterClient(&o)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// StartMasters starts n independent redis-servers (no replication between
// them), as Redlock wants them; certs, when not nil, makes them TLS-only.
func StartMasters(t testing.TB, n int, certs *Certs) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		if certs != nil {
			out[i] = StartTLS(t, certs)
		} else {
			out[i] = Start(t)
		}
	}
	return out
}

// String describes the cluster for failure messages.
func (c *Cluster) String() string { return fmt.Sprintf("cluster %v", c.Addrs()) }
