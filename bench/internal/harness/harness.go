// Package harness starts the redis-server the benchmarks measure against and
// reads its statistics.
package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Server is a redis-server process on a free loopback port, persistence off.
type Server struct {
	Addr string
	dir  string
	cmd  *exec.Cmd
}

// Start starts redis-server (from PATH) in a temporary directory.
func Start() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found in PATH (Debian: apt-get install redis-server): %w", err)
	}
	dir, err := os.MkdirTemp("", "solocron-bench-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd}
	c := s.Client(1)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server on %s did not start", s.Addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s, nil
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// Client returns a new client of the server with the given pool size.
func (s *Server) Client(pool int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: pool, ContextTimeoutEnabled: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	Commands int64   // calls of every command
	CPU      float64 // seconds of server CPU (user + system)
}

// Snapshot reads the server's command count and CPU time.
func (s *Server) Snapshot(ctx context.Context, c *redis.Client) (Stats, error) {
	var st Stats
	info, err := c.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "cmdstat_"):
			// cmdstat_get:calls=12,usec=...
			if i := strings.Index(line, "calls="); i >= 0 {
				rest := line[i+6:]
				if j := strings.IndexByte(rest, ','); j >= 0 {
					rest = rest[:j]
				}
				n, _ := strconv.ParseInt(rest, 10, 64)
				st.Commands += n
			}
		case strings.HasPrefix(line, "used_cpu_sys:"), strings.HasPrefix(line, "used_cpu_user:"):
			v, _ := strconv.ParseFloat(line[strings.IndexByte(line, ':')+1:], 64)
			st.CPU += v
		}
	}
	return st, nil
}

// ProcessCPU is this process's CPU time so far (user + system).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
