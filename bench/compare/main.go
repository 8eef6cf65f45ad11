// Command compare measures Solocron against the alternatives a Go team
// would consider, against one real redis-server it starts itself:
//
//  1. lock primitives: acquire+release with lockprovider, bsm/redislock,
//     go-redsync/redsync (one node) and raw SET NX PX + compare-and-delete;
//  2. end to end: R replicas × J jobs every second for D seconds, Solocron
//     vs gocron/v2 with a distributed locker built on redsync that behaves
//     like go-co-op/gocron-redis-lock (lock key = job name, one try, unlock
//     when the task returns) — also with one replica's clock 200ms behind;
//  3. a scale sweep of J for the cost per run.
//
// Usage:
//
//	go run ./compare            # full run (several minutes)
//	go run ./compare -quick     # about a minute
//	go run ./compare -json      # the same results as JSON
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-co-op/gocron/v2"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/solocron/solocron/bench/internal/harness"
	"github.com/solocron/solocron/internal/testkit"
	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/lockprovider"
	"github.com/solocron/solocron/scheduler"
)

// Result is one system in one scenario. Fields that do not apply are zero.
type Result struct {
	Scenario string `json:"scenario"`
	System   string `json:"system"`

	// lock primitives
	Goroutines  int     `json:"goroutines,omitempty"`
	OpsPerSec   float64 `json:"ops_per_sec,omitempty"`
	AllocsPerOp float64 `json:"allocs_per_op,omitempty"`

	// end to end
	Replicas   int     `json:"replicas,omitempty"`
	Jobs       int     `json:"jobs,omitempty"`
	Seconds    int     `json:"seconds,omitempty"`
	Skew       string  `json:"skew,omitempty"`
	Runs       int     `json:"runs,omitempty"`
	Expected   int     `json:"expected_runs,omitempty"`
	Duplicates int     `json:"duplicates"`
	Missed     int     `json:"missed"`
	P50Ms      float64 `json:"dispatch_delay_p50_ms,omitempty"`
	P99Ms      float64 `json:"dispatch_delay_p99_ms,omitempty"`
	CPUPer1k   float64 `json:"client_cpu_s_per_1000_runs,omitempty"`
	AllocsRun  float64 `json:"client_allocs_per_run,omitempty"`
	RedisCPU1k float64 `json:"redis_cpu_s_per_1000_runs,omitempty"`

	// both
	CommandsPerOp float64 `json:"commands_sent_per_op"`
	RedisCalls    float64 `json:"redis_calls_per_op"`
}

func main() {
	quick := flag.Bool("quick", false, "a short run (about a minute)")
	asJSON := flag.Bool("json", false, "print JSON instead of Markdown")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the whole run to this file")
	flag.BoolVar(&redisStats, "redisstats", false, "print Redis' command statistics for each end-to-end scenario")
	sizes := flag.String("sweep", "", "job counts for the sweep, comma-separated (default 100,1000,10000; -quick: 100,1000)")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	if *memprofile != "" {
		defer func() {
			f, err := os.Create(*memprofile)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return
			}
			defer f.Close()
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
		}()
	}

	srv, err := harness.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer srv.Stop()

	lockOps, secs, sweep := 100_000, 20, []int{100, 1000, 10000}
	if *quick {
		lockOps, secs, sweep = 20_000, 5, []int{100, 1000}
	}
	if *sizes != "" {
		sweep = nil
		for _, f := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "-sweep: bad job count %q\n", f)
				os.Exit(2)
			}
			sweep = append(sweep, n)
		}
	}
	var results []Result
	add := func(name string, f func() []Result) {
		if *only != "" && !strings.Contains(name, *only) {
			return
		}
		fmt.Fprintf(os.Stderr, "running %s ...\n", name)
		results = append(results, f()...)
	}
	add("locks", func() []Result { return lockScenarios(srv, lockOps) })
	add("e2e", func() []Result {
		var out []Result
		for _, skew := range []time.Duration{0, -200 * time.Millisecond} {
			for _, sys := range []system{solocron{}, gocronRedsync{}} {
				out = append(out, endToEnd(srv, sys, 3, 100, secs, skew))
			}
		}
		return out
	})
	add("sweep", func() []Result {
		var out []Result
		for _, j := range sweep {
			out = append(out, endToEnd(srv, solocron{}, 3, j, secs, 0))
		}
		return out
	})

	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return
	}
	printMarkdown(results)
}

// redisStats asks for Redis' INFO commandstats over each end-to-end window.
var redisStats bool

// --- lock primitives ---------------------------------------------------

type locker interface {
	name() string
	// cycle takes and releases the lock named key once.
	cycle(ctx context.Context, key string) error
}

type lpMutex struct{ p *lockprovider.Redis }

func (l lpMutex) name() string { return "solocron lockprovider" }
func (l lpMutex) cycle(ctx context.Context, key string) error {
	lease, err := l.p.Mutex(key).TryAcquire(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	return lease.Release(ctx)
}

type bsm struct{ c *redislock.Client }

func (l bsm) name() string { return "bsm/redislock" }
func (l bsm) cycle(ctx context.Context, key string) error {
	lock, err := l.c.Obtain(ctx, key, 10*time.Second, nil)
	if err != nil {
		return err
	}
	return lock.Release(ctx)
}

type rsync struct{ rs *redsync.Redsync }

func (l rsync) name() string { return "go-redsync/redsync (1 node)" }
func (l rsync) cycle(ctx context.Context, key string) error {
	m := l.rs.NewMutex(key, redsync.WithTries(1), redsync.WithExpiry(10*time.Second))
	if err := m.TryLockContext(ctx); err != nil {
		return err
	}
	_, err := m.UnlockContext(ctx)
	return err
}

// raw is SET NX PX and a compare-and-delete script: the floor any Redis
// lock builds on.
type raw struct{ c *redis.Client }

var unlock = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (l raw) name() string { return "raw SET NX PX + compare-and-delete" }
func (l raw) cycle(ctx context.Context, key string) error {
	tok := fmt.Sprint(time.Now().UnixNano())
	ok, err := l.c.SetNX(ctx, key, tok, 10*time.Second).Result()
	if err != nil || !ok {
		return fmt.Errorf("not acquired: %v", err)
	}
	return unlock.Run(ctx, l.c, []string{key}, tok).Err()
}

// lockRounds: each system's operations are split into rounds, taken in
// turn (A B C D A B C D ...), and its ops/s is the median of its rounds', so
// that a machine whose load changes during the run (CI, other processes)
// weighs on every system alike and a burst of it does not decide.
const lockRounds = 10

func lockScenarios(srv *harness.Server, ops int) []Result {
	var out []Result
	for _, g := range []int{1, 64} {
		c := srv.Client(g + 4)
		var counter testkit.CommandCounter
		c.AddHook(&counter)
		p, _ := lockprovider.NewRedis(c)
		lockers := []locker{lpMutex{p}, bsm{redislock.New(c)}, rsync{redsync.New(goredis.NewPool(c))}, raw{c}}
		type total struct {
			rates                  []float64 // ops/s of each round
			allocs, sent, commands uint64
			failed                 atomic.Int64
		}
		totals := make([]total, len(lockers))
		for _, l := range lockers {
			// Warm up (script loading, connections): g goroutines at once,
			// so that the pool holds its g connections before the clock
			// starts. One at a time left the first system measured to dial
			// them inside its own measurement.
			var warm sync.WaitGroup
			for i := range g {
				warm.Go(func() {
					for range 10 {
						_ = l.cycle(context.Background(), fmt.Sprintf("warm-%d", i))
					}
				})
			}
			warm.Wait()
		}
		per := max(ops/g/lockRounds, 1)
		ctx := context.Background()
		for range lockRounds {
			for k, l := range lockers {
				tot := &totals[k]
				before, _ := srv.Snapshot(ctx, c)
				sent := counter.Load()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				start := time.Now()
				var wg sync.WaitGroup
				for i := range g {
					key := fmt.Sprintf("bench-%s-%d", strings.Fields(l.name())[0], i)
					wg.Go(func() {
						for range per {
							if err := l.cycle(ctx, key); err != nil {
								tot.failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				tot.rates = append(tot.rates, float64(per*g)/time.Since(start).Seconds())
				runtime.ReadMemStats(&ms1)
				after, _ := srv.Snapshot(ctx, c)
				tot.allocs += ms1.Mallocs - ms0.Mallocs
				tot.sent += uint64(counter.Load() - sent)
				// INFO itself is one call per snapshot.
				tot.commands += uint64(after.Commands - before.Commands - 1)
			}
		}
		n := float64(per * g * lockRounds)
		for k, l := range lockers {
			tot := &totals[k]
			if tot.failed.Load() > 0 {
				fmt.Fprintf(os.Stderr, "%s: %d failed cycles\n", l.name(), tot.failed.Load())
			}
			out = append(out, Result{
				Scenario: "lock acquire+release", System: l.name(), Goroutines: g,
				OpsPerSec:     median(tot.rates),
				AllocsPerOp:   float64(tot.allocs) / n,
				CommandsPerOp: float64(tot.sent) / n,
				RedisCalls:    float64(tot.commands) / n,
			})
		}
		c.Close()
	}
	return out
}

// median returns the middle of xs (the mean of the two middle ones when
// their number is even). It sorts xs.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// --- end to end ------------------------------------------------------------

// ledger records each run a job performs: job, scheduled second, start time.
type ledger struct {
	mu     sync.Mutex
	runs   map[string]map[int64]int // job -> scheduled unix second -> starts
	delays []time.Duration
}

func newLedger() *ledger { return &ledger{runs: map[string]map[int64]int{}} }

func (l *ledger) record(job string, sched, start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.runs[job]
	if m == nil {
		m = map[int64]int{}
		l.runs[job] = m
	}
	m[sched.Unix()]++
	l.delays = append(l.delays, start.Sub(sched))
}

// system is one way to run J jobs every second on R replicas.
type system interface {
	name() string
	// start starts the replicas; replica 0's clock is off by skew. stop
	// stops them all.
	start(srv *harness.Server, counter *testkit.CommandCounter, replicas, jobs int, skew time.Duration, l *ledger) (stop func())
}

type solocron struct{}

func (solocron) name() string { return "solocron" }
func (solocron) start(srv *harness.Server, counter *testkit.CommandCounter, replicas, nj int, skew time.Duration, l *ledger) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var clients []*redis.Client
	quiet := slog.New(slog.DiscardHandler)
	for r := range replicas {
		c := srv.Client(32)
		c.AddHook(counter)
		clients = append(clients, c)
		table := make([]scheduler.Job, nj)
		for i := range table {
			name := fmt.Sprintf("job-%05d", i)
			table[i] = scheduler.Job{Name: name, Schedule: "* * * * * *", Handler: jobs.Func(func(ctx context.Context) error {
				l.record(name, jobs.ScheduledAt(ctx), time.Now())
				return nil
			})}
		}
		off := time.Duration(0)
		if r == 0 {
			off = skew
		}
		st, err := scheduler.NewRedisStore(c)
		if err != nil {
			panic(err)
		}
		s, err := scheduler.New(st, table, scheduler.WithReplicaID(fmt.Sprintf("r%d", r)), scheduler.WithLogger(quiet),
			scheduler.WithClock(scheduler.ClockFunc(func() time.Time { return time.Now().Add(off) })))
		if err != nil {
			panic(err)
		}
		wg.Go(func() { _ = s.Run(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
		for _, c := range clients {
			c.Close()
		}
	}
}

// gocronRedsync is gocron/v2 with a distributed locker like
// go-co-op/gocron-redis-lock: a redsync mutex named after the job, one try,
// released when the task returns.
type gocronRedsync struct{}

func (gocronRedsync) name() string { return "gocron/v2 + redsync locker" }

type redsyncLocker struct {
	rs    *redsync.Redsync
	delay time.Duration // a lagging replica's lock attempt comes late
}

type redsyncLock struct{ m *redsync.Mutex }

func (l *redsyncLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if l.delay > 0 {
		time.Sleep(l.delay)
	}
	m := l.rs.NewMutex(key, redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncLock{m}, nil
}

func (l redsyncLock) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

func (gocronRedsync) start(srv *harness.Server, counter *testkit.CommandCounter, replicas, nj int, skew time.Duration, l *ledger) func() {
	var scheds []gocron.Scheduler
	var clients []*redis.Client
	for r := range replicas {
		c := srv.Client(32)
		c.AddHook(counter)
		clients = append(clients, c)
		lk := &redsyncLocker{rs: redsync.New(goredis.NewPool(c))}
		if r == 0 && skew < 0 {
			lk.delay = -skew
		}
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(lk), gocron.WithLogger(gocron.NewLogger(gocron.LogLevelError)))
		if err != nil {
			panic(err)
		}
		for i := range nj {
			name := fmt.Sprintf("job-%05d", i)
			_, err := s.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() {
				now := time.Now()
				// gocron does not tell a task its scheduled instant; it is
				// the second the task started in (minus a lagging lock).
				l.record(name, now.Add(-lk.delay).Truncate(time.Second), now.Add(-lk.delay))
			}), gocron.WithName(name))
			if err != nil {
				panic(err)
			}
		}
		s.Start()
		scheds = append(scheds, s)
	}
	return func() {
		for _, s := range scheds {
			_ = s.Shutdown()
		}
		for _, c := range clients {
			c.Close()
		}
	}
}

func endToEnd(srv *harness.Server, sys system, replicas, nj, secs int, skew time.Duration) Result {
	ctx := context.Background()
	_ = srv.Client(1).FlushAll(ctx).Err()
	admin := srv.Client(1)
	defer admin.Close()
	var counter testkit.CommandCounter
	l := newLedger()
	began := time.Now()
	stop := sys.start(srv, &counter, replicas, nj, skew, l)
	// Measure whole seconds after a warm-up: 4 s, and a second more per
	// 2,000 jobs — replicas that start together with ten thousand jobs each
	// load and sync them all, and claim the instant they start in, before
	// they settle (startup is not what the sweep measures). A store that
	// holds nothing of a job places the data-loss floor (max_clock_skew +
	// claim ahead, 2.5 s by default, after the replica's first call):
	// Solocron runs no instant below it, and records none missed (it cannot
	// tell a new job from one whose state was lost). The window starts past
	// it. The ledger is cleared a little before the first measured instant:
	// runs start right at their instant.
	warmup := 4*time.Second + time.Duration(nj/2000)*time.Second
	from := time.Now().Truncate(time.Second).Add(warmup)
	time.Sleep(time.Until(from.Add(-200 * time.Millisecond)))
	l.mu.Lock()
	startup(sys.name(), replicas, nj, began, from, l)
	l.runs, l.delays = map[string]map[int64]int{}, nil
	l.mu.Unlock()
	time.Sleep(time.Until(from))
	if redisStats {
		_ = admin.ConfigResetStat(ctx).Err()
	}
	before, _ := srv.Snapshot(ctx, admin)
	sent := counter.Load()
	cpu0 := harness.ProcessCPU()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	time.Sleep(time.Duration(secs) * time.Second)
	to := from.Add(time.Duration(secs) * time.Second)
	time.Sleep(500 * time.Millisecond) // let the last second's runs start
	cpu1 := harness.ProcessCPU()
	runtime.ReadMemStats(&ms1)
	after, _ := srv.Snapshot(ctx, admin)
	sentN := counter.Load() - sent
	if redisStats {
		info, _ := admin.Info(ctx, "commandstats").Result()
		fmt.Fprintf(os.Stderr, "%s %d×%d, Redis commands over the window:\n%s\n", sys.name(), replicas, nj, info)
	}
	stop()

	res := Result{Scenario: "end to end, jobs every second", System: sys.name(), Replicas: replicas, Jobs: nj, Seconds: secs}
	if skew != 0 {
		res.Scenario = "end to end, one replica's clock 200ms behind"
		res.Skew = skew.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	missedAt := map[int64]int{}
	for i := range nj {
		m := l.runs[fmt.Sprintf("job-%05d", i)]
		for sec := from.Unix(); sec < to.Unix(); sec++ {
			res.Expected++
			switch n := m[sec]; {
			case n == 0:
				res.Missed++
				missedAt[sec-from.Unix()]++
			default:
				res.Runs++
				res.Duplicates += n - 1
			}
		}
	}
	if len(missedAt) > 0 {
		fmt.Fprintf(os.Stderr, "%s %d×%d: missed runs by second of the window: %v\n", sys.name(), replicas, nj, missedAt)
	}
	sort.Slice(l.delays, func(a, b int) bool { return l.delays[a] < l.delays[b] })
	pct := func(p float64) float64 {
		if len(l.delays) == 0 {
			return 0
		}
		return float64(l.delays[min(len(l.delays)-1, int(p*float64(len(l.delays))))].Microseconds()) / 1000
	}
	res.P50Ms, res.P99Ms = pct(0.50), pct(0.99)
	starts := res.Runs + res.Duplicates
	if starts > 0 {
		res.CommandsPerOp = float64(sentN) / float64(starts)
		res.RedisCalls = float64(after.Commands-before.Commands) / float64(starts)
		res.CPUPer1k = (cpu1 - cpu0).Seconds() / float64(starts) * 1000
		res.RedisCPU1k = (after.CPU - before.CPU) / float64(starts) * 1000
		// The replicas' and the harness' heap allocations (the ledger's
		// are a few a run): what garbage collection costs grows with.
		res.AllocsRun = float64(ms1.Mallocs-ms0.Mallocs) / float64(starts)
		fmt.Fprintf(os.Stderr, "%s %d×%d: %.1f client heap allocations a run over the window\n", sys.name(), replicas, nj, res.AllocsRun)
	}
	return res
}

// startup tells on stderr how long the replicas took to settle: the first
// instant every job ran (each replica is started at began; the warm-up ends
// at from). A store that holds nothing of a job runs no instant below the
// new-job floor (max_clock_skew + claim ahead after the first call: 2.5 s
// by default), so the first instant after it is as early as it gets.
// l.mu is held.
func startup(name string, replicas, nj int, began, from time.Time, l *ledger) {
	first := int64(0)
	for sec := began.Unix(); sec < from.Unix(); sec++ {
		n := 0
		for _, m := range l.runs {
			if m[sec] > 0 {
				n++
			}
		}
		if first == 0 && n > 0 {
			first = sec
		}
		if n == nj {
			fmt.Fprintf(os.Stderr, "%s %d×%d startup: first instant run by a job %.1f s after the start, by all %d jobs %.1f s\n",
				name, replicas, nj, time.Unix(first, 0).Sub(began).Seconds(), nj, time.Unix(sec, 0).Sub(began).Seconds())
			return
		}
	}
	fmt.Fprintf(os.Stderr, "%s %d×%d startup: no instant run by all %d jobs before the window (%.1f s after the start)\n",
		name, replicas, nj, nj, from.Sub(began).Seconds())
}

// --- output ------------------------------------------------------------------

func printMarkdown(results []Result) {
	fmt.Printf("Machine: %d CPUs, %s/%s, %s. Redis: one local redis-server. %s\n\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	var locks, e2e []Result
	for _, r := range results {
		if r.Goroutines > 0 {
			locks = append(locks, r)
		} else {
			e2e = append(e2e, r)
		}
	}
	if len(locks) > 0 {
		fmt.Println("| lock acquire+release | goroutines | ops/s | allocs/op | commands sent/op | Redis calls/op |")
		fmt.Println("|---|---:|---:|---:|---:|---:|")
		for _, r := range locks {
			fmt.Printf("| %s | %d | %.0f | %.1f | %.2f | %.2f |\n", r.System, r.Goroutines, r.OpsPerSec, r.AllocsPerOp, r.CommandsPerOp, r.RedisCalls)
		}
		fmt.Println()
	}
	if len(e2e) > 0 {
		fmt.Println("| scenario | system | replicas × jobs × s | runs | duplicates | missed | delay p50 | delay p99 | commands sent/run | Redis calls/run | client CPU s/1k runs | Redis CPU s/1k runs |")
		fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range e2e {
			fmt.Printf("| %s | %s | %d × %d × %d | %d | %d | %d | %.1f ms | %.1f ms | %.2f | %.1f | %.3f | %.3f |\n",
				r.Scenario, r.System, r.Replicas, r.Jobs, r.Seconds, r.Runs, r.Duplicates, r.Missed,
				r.P50Ms, r.P99Ms, r.CommandsPerOp, r.RedisCalls, r.CPUPer1k, r.RedisCPU1k)
		}
	}
}
