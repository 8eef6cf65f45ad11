// Command embedded measures the runs per second Solocron's embedded store
// sustains with its durability on: one replica on the daemon's embedded
// store with a data directory (every claim's answer waits until a snapshot
// holding it is fsynced), J jobs firing every second, for a few seconds per
// J. It prints, per J: runs per second, instants not run inside the
// window, dispatch delay p50/p99 (scheduled instant → job start),
// snapshots written per second and their size.
//
//	cd bench && go run ./embedded                      # J = 100, 400, 1600; 8 s each
//	go run ./embedded -jobs 50,200 -seconds 5 -dir /var/tmp/x   # another disk
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solocron/solocron/config"
	"github.com/solocron/solocron/internal/storeconn"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler"
)

func main() {
	jobsFlag := flag.String("jobs", "50,100,200,400", "comma-separated job counts")
	seconds := flag.Int("seconds", 8, "measured seconds per job count")
	dirFlag := flag.String("dir", "", "parent of the data directories (default: the system's temp dir)")
	flag.Parse()
	fmt.Println("| jobs | runs/s | not run in window | dispatch p50 | dispatch p99 | snapshots written/s | snapshot size |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range strings.Split(*jobsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("-jobs: bad count %q", f)
		}
		if err := measure(n, *seconds, *dirFlag); err != nil {
			log.Fatal(err)
		}
	}
}

func measure(n, seconds int, parent string) error {
	dir, err := os.MkdirTemp(parent, "solocron-embedded-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	conn, err := storeconn.Open(config.Store{KeyPrefix: "bench", MaxClockSkew: time.Second, DataDir: dir})
	if err != nil {
		return err
	}
	defer conn.Close()

	var mu sync.Mutex
	starts := map[string]time.Duration{} // run id -> dispatch delay
	tab := make([]scheduler.Job, n)
	for i := range tab {
		tab[i] = scheduler.Job{Name: fmt.Sprintf("j%05d", i), Schedule: "@every 1s", Handler: jobs.Func(func(ctx context.Context) error {
			d := time.Since(jobs.ScheduledAt(ctx))
			mu.Lock()
			starts[jobs.RunID(ctx)] = d
			mu.Unlock()
			return nil
		})}
	}
	s, err := conn.NewScheduler(tab, scheduler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	warmup := 2*time.Second + time.Duration(n/1000)*time.Second
	from := time.Now().Add(warmup).Truncate(time.Second).Add(time.Second)
	to := from.Add(time.Duration(seconds) * time.Second)
	time.Sleep(time.Until(from))
	before := conn.Embedded.Stats()
	time.Sleep(time.Until(to))
	after := conn.Embedded.Stats()
	time.Sleep(2 * time.Second) // the window's last runs start
	cancel()
	if err := <-done; err != nil {
		return err
	}

	mu.Lock()
	defer mu.Unlock()
	var delays []time.Duration
	for id, d := range starts {
		_, at, _ := strings.Cut(id, "@")
		t, err := time.Parse(time.RFC3339, at)
		if err != nil || t.Before(from) || !t.Before(to) {
			continue
		}
		delays = append(delays, d)
	}
	slices.Sort(delays)
	pct := func(p float64) time.Duration {
		if len(delays) == 0 {
			return 0
		}
		return delays[min(len(delays)-1, int(p*float64(len(delays))))].Round(100 * time.Microsecond)
	}
	want := n * seconds
	fmt.Printf("| %d | %.0f | %d of %d | %s | %s | %.0f | %d KB |\n", n, float64(len(delays))/float64(seconds), want-len(delays), want,
		pct(0.5), pct(0.99), float64(after.Written-before.Written)/float64(seconds), after.Bytes/1024)
	return nil
}
