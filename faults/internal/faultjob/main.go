// Command faultjob is the job the fault-injection suite (package faults)
// has the scheduler daemon run. It reports to the test's ledger over one TCP
// connection that it keeps open for its whole life, so the test learns when
// the process really ends — however it ends (its own exit, SIGTERM, or the
// SIGKILL that takes a dead replica's jobs with it): the kernel closes the
// socket.
//
// Protocol, one line each way:
//
//	job:    start <run id> <replica> <fencing token> <attempt> <pid> <slot>
//	ledger: 1 | 0            (the start is also a write to the sink: accepted?)
//	job:    write            (every -write-every, with the run's token)
//	ledger: 1 | 0
//	job:    end <ok|term> [ops=N]
//
// The ledger's address comes from FAULT_LEDGER; the run from the
// SOLOCRON_* variables the scheduler sets.
//
// With -flood ADDR the job also floods that Redis with pipelined writes
// from -flood-conns connections while it runs: a job that loads the same
// Redis the scheduler coordinates through.
//
// With -manual-sleep D a manual run lasts D instead of -sleep.
//
// With -exit N a run that lasts its whole -sleep exits with status N (a
// failed run, whose event the scheduler notifies) instead of 0.
//
// With -ignore-term the job ignores SIGTERM (only SIGKILL stops it before
// -sleep). With -child it also starts a child in its own process group — a
// copy of itself that ignores SIGTERM too when the job does — which reports
// to the ledger on a connection of its own, so the test learns when the
// whole group is gone:
//
//	child:  child <run id> <pid>
//
// and nothing more until it dies.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	sleep := flag.Duration("sleep", time.Second, "how long the run lasts")
	manualSleep := flag.Duration("manual-sleep", 0, "how long a manual run lasts, if not -sleep")
	exitCode := flag.Int("exit", 0, "exit status of a run that lasts its whole -sleep")
	every := flag.Duration("write-every", 100*time.Millisecond, "period of the sink writes; 0 writes only at start")
	flood := flag.String("flood", "", "Redis host:port to flood with writes while the run lasts")
	floodConns := flag.Int("flood-conns", 8, "connections flooding Redis")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM (and SIGINT): only SIGKILL stops the run early")
	child := flag.Bool("child", false, "start a child in the job's process group that lives until it is killed")
	asChild := flag.Bool("as-child", false, "be that child (internal)")
	flag.Parse()

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	if *asChild {
		beChild() // SIGTERM kills it, unless ignored
		return
	}
	// SIGTERM is how the scheduler cancels a run; catch it at once so that
	// the end is reported.
	sigs := make(chan os.Signal, 1)
	if !*ignoreTerm {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}

	conn, err := net.Dial("tcp", os.Getenv("FAULT_LEDGER"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultjob: ledger:", err)
		os.Exit(3)
	}
	r := bufio.NewReader(conn)
	ask := func(line string) bool {
		if _, err := fmt.Fprintln(conn, line); err != nil {
			fmt.Fprintln(os.Stderr, "faultjob: ledger write:", err)
			os.Exit(3)
		}
		reply, err := r.ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultjob: ledger read:", err)
			os.Exit(3)
		}
		return strings.TrimSpace(reply) == "1"
	}
	env := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			v = "-"
		}
		return v
	}
	ask(fmt.Sprintf("start %s %s %s %s %d %s", env("SOLOCRON_RUN_ID"), env("SOLOCRON_REPLICA_ID"),
		env("SOLOCRON_FENCING_TOKEN"), env("SOLOCRON_ATTEMPT"), os.Getpid(), env("SOLOCRON_SLOT")))

	if *child {
		args := []string{"-as-child"}
		if *ignoreTerm {
			args = append(args, "-ignore-term")
		}
		// Same process group, same output pipes: a worker the job left
		// behind, as far as the scheduler can tell.
		c := exec.Command(os.Args[0], args...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "faultjob: child:", err)
			os.Exit(3)
		}
	}

	var ops atomic.Int64
	stopFlood := make(chan struct{})
	var flooders sync.WaitGroup
	if *flood != "" {
		for range *floodConns {
			flooders.Go(func() { floodRedis(*flood, stopFlood, &ops) })
		}
	}
	end := func(reason string) {
		close(stopFlood)
		flooders.Wait()
		extra := ""
		if *flood != "" {
			extra = " ops=" + strconv.FormatInt(ops.Load(), 10)
		}
		fmt.Fprintf(conn, "end %s%s\n", reason, extra)
		_ = conn.Close()
	}

	if *manualSleep > 0 && strings.Contains(os.Getenv("SOLOCRON_RUN_ID"), "@manual-") {
		*sleep = *manualSleep
	}
	done := time.NewTimer(*sleep)
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			ask("write")
		case <-done.C:
			end("ok")
			os.Exit(*exitCode)
		case <-sigs:
			end("term")
			os.Exit(1)
		}
	}
}

// beChild reports the child to the ledger and lives until it is killed
// (or, without -ignore-term, until SIGTERM): the ledger sees its connection
// close when the process is gone.
func beChild() {
	conn, err := net.Dial("tcp", os.Getenv("FAULT_LEDGER"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultjob child: ledger:", err)
		os.Exit(3)
	}
	if _, err := fmt.Fprintf(conn, "child %s %d\n", os.Getenv("SOLOCRON_RUN_ID"), os.Getpid()); err != nil {
		os.Exit(3)
	}
	_, _ = io.Copy(io.Discard, conn) // the ledger never writes; blocks until one side goes
	os.Exit(0)
}

// floodRedis writes pipelines of 64 SETs of 512 bytes on one connection
// until stop is closed, counting the commands answered.
func floodRedis(addr string, stop <-chan struct{}, ops *atomic.Int64) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	const batch = 64
	val := strings.Repeat("x", 512)
	var req strings.Builder
	for i := range batch {
		key := fmt.Sprintf("flood:%d:%d", os.Getpid(), i)
		fmt.Fprintf(&req, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(val), val)
	}
	payload := []byte(req.String())
	r := bufio.NewReader(c)
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := c.Write(payload); err != nil {
			return
		}
		for range batch {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
		ops.Add(batch)
	}
}
