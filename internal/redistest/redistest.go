// Package redistest starts Redis servers for tests: a real redis-server
// process on a free loopback port in a temporary directory, or an in-process
// miniredis. Servers are stopped in t.Cleanup.
//
// For the distributed store modes it also starts a Redis Cluster
// (StartCluster), a primary with replicas watched by Sentinels
// (StartSentinel), independent masters for Redlock (StartMasters), and
// TLS-only servers with certificates generated for the test (NewCerts,
// StartTLS, or certs passed to the others).
//
// Tests never use the machine's port 6379 or any fixed port. Without the
// redis-server binary (redis-cli for a cluster, TLS support for TLS), a test
// skips with a clear message, unless the environment says
// SOLOCRON_REQUIRE_REDIS=1 (as CI does): then it fails.
package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Required reports whether tests must fail rather than skip when
// redis-server is missing.
func Required() bool { return os.Getenv("SOLOCRON_REQUIRE_REDIS") == "1" }

// Binary returns the path of redis-server, or skips (or fails, when Required)
// the test if there is none.
func Binary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "redis-server")
}

func lookBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found in PATH: install it (Debian: apt-get install redis-server) to run this test", name)
	if Required() {
		t.Fatal(msg + " (SOLOCRON_REQUIRE_REDIS=1 forbids skipping)")
	}
	t.Skip(msg)
	return ""
}

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	bin  string
	args []string
	Dir  string
	Port int
	// TLS is the client side of a server that speaks only TLS (StartTLS,
	// or a harness started with certificates); nil for plain TCP.
	TLS *tls.Config
	// sentinel holds the monitor directives of a Sentinel; "" for a data node.
	sentinel string
	cmd      *exec.Cmd
	done     chan struct{}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Start starts a redis-server with persistence off, on a free loopback port,
// in a fresh temporary directory; extra arguments are appended to its command
// line (e.g. "--maxmemory-policy", "allkeys-lru"). It is killed in t.Cleanup.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startServer(t, nil, nil, extra)
}

// startServer starts a data node (sentinel nil) or a Sentinel whose
// configuration file sentinel writes, given the port; certs makes it TLS-only.
func startServer(t testing.TB, certs *Certs, sentinel func(port int) string, extra []string) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), Dir: t.TempDir(), args: extra}
	if certs != nil {
		requireTLS(t, s.bin)
		s.TLS = certs.ClientConfig()
	}
	var lastErr error
	for range 5 { // a free port can be taken between probing and binding
		port, err := FreePort()
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		s.Port = port
		if sentinel != nil {
			s.sentinel = sentinel(port)
		}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("redistest: redis-server did not start: %v", lastErr)
	return nil
}

func (s *Server) start() error {
	port := []string{"--port", strconv.Itoa(s.Port)}
	if s.TLS != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.Port)}
	}
	var args []string
	if s.sentinel != "" {
		// A Sentinel rewrites its configuration file: a fresh one each start.
		conf := filepath.Join(s.Dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(s.sentinel), 0o600); err != nil {
			return err
		}
		args = append([]string{conf, "--sentinel"}, port...)
		args = append(args, "--bind", "127.0.0.1", "--dir", s.Dir, "--daemonize", "no",
			"--logfile", filepath.Join(s.Dir, "redis.log"))
	} else {
		args = append(port,
			"--bind", "127.0.0.1",
			"--dir", s.Dir,
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--logfile", filepath.Join(s.Dir, "redis.log"))
	}
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = DieWithParent()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	if err := s.waitReady(10 * time.Second); err != nil {
		s.Kill()
		log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
		return fmt.Errorf("%w; redis.log:\n%s", err, log)
	}
	return nil
}

func (s *Server) waitReady(limit time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second, TLSConfig: s.TLS,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer c.Close()
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.done:
			return errors.New("redis-server exited during start")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil || isAuthErr(err) { // an answer, if only "who are you?"
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %v", limit, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a process we do not control
	}
}

// Kill stops the server with SIGKILL and waits for it. Data is lost.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process must not linger
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart kills the server and starts a new one on the same port and
// directory. With persistence off, the new server starts empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	for range 50 { // the port may linger briefly after the kill
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart: %v", err)
}

// Pause stops the server process (SIGSTOP): it keeps its sockets but answers
// nothing until Resume.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Client returns a client for the server, closed in t.Cleanup. opt may be nil;
// its Addr is overwritten.
func (s *Server) Client(t testing.TB, opt *redis.Options) *redis.Client {
	t.Helper()
	o := redis.Options{}
	if opt != nil {
		o = *opt
	}
	o.Addr = s.Addr()
	if o.TLSConfig == nil && s.TLS != nil {
		o.TLSConfig = s.TLS.Clone()
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	o.ContextTimeoutEnabled = true
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// isAuthErr tells a server that wants credentials (ACL) from one that is not up.
func isAuthErr(err error) bool {
	return redis.HasErrorPrefix(err, "NOAUTH") || redis.HasErrorPrefix(err, "WRONGPASS") || redis.HasErrorPrefix(err, "NOPERM")
}

// handedOut are the ports FreePort returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that it never returned before in this process: two servers a test starts
// one after the other, each on a port asked for before either listens, must
// not be given the same one (the kernel may hand a port out again as soon as
// the probe closes it; seen as a daemon's "address already in use").
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port not handed out before in 100 tries")
}

// Mini starts an in-process miniredis on a loopback port and returns it with
// a client; both are closed in t.Cleanup.
func Mini(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return m, c
}

// MiniPipe returns a miniredis reached over in-memory pipes, with no TCP
// listener, so that it can live inside a testing/synctest bubble. Its TTLs
// follow the (possibly fake) clock.
func MiniPipe(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	g := &pipeGuard{}
	pipeGuards.Store(m, g)
	t.Cleanup(func() {
		// A client's pool may still be dialling in the background (go-redis
		// opens connections on its own goroutines) when the test ends.
		g.mu.Lock()
		g.closed = true
		g.mu.Unlock()
		m.Close()
	})
	return m, PipeClient(t, m)
}

// pipeGuard keeps a MiniPipe server from being dialled while, or after, it
// closes: miniredis does not synchronise Dial with Close.
type pipeGuard struct {
	mu     sync.Mutex
	closed bool
}

var pipeGuards sync.Map // *miniredis.Miniredis -> *pipeGuard

// PipeClient returns another client of a MiniPipe server, with its own
// connection pool (as a separate replica would have), closed in t.Cleanup.
func PipeClient(t testing.TB, m *miniredis.Miniredis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  "miniredis:0",
		ContextTimeoutEnabled: true,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return bufferedDial(m)
		},
		// Its endpoint auto-detection would resolve "miniredis" in DNS:
		// real I/O, which a synctest bubble forbids.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// A pipe dial fails only once the server has closed, at the end of
		// a test; retrying it would sleep on a goroutine that outlives the
		// test's synctest bubble.
		DialerRetries: 1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// bufferedDial connects to m over in-memory pipes like m.Dial, with the
// replies buffered without bound. net.Pipe has no buffer at all: a client
// writing a large pipeline would wait for the server to read, while the
// server waits for the client to read its first reply. TCP's socket buffers
// avoid that; this gives the pipe the same slack.
func bufferedDial(m *miniredis.Miniredis) (net.Conn, error) {
	if v, ok := pipeGuards.Load(m); ok {
		g := v.(*pipeGuard)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.closed {
			return nil, errors.New("redistest: server closed")
		}
	}
	server, err := m.Dial()
	if err != nil {
		return nil, err
	}
	client, relay := net.Pipe()
	replies := make(chan []byte, 1<<12)
	go func() { // client -> server; may block while the server works
		_, _ = io.Copy(server, relay)
		_ = server.Close()
	}()
	go func() { // server -> queue; never blocks on the client
		defer close(replies)
		for {
			buf := make([]byte, 32<<10)
			n, err := server.Read(buf)
			if n > 0 {
				replies <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // queue -> client
		for b := range replies {
			if _, err := relay.Write(b); err != nil {
				break
			}
		}
		_ = relay.Close()
		for range replies {
		}
	}()
	return client, nil
}
