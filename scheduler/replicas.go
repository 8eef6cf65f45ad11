package scheduler

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/solocron/solocron/jobs"
	"github.com/solocron/solocron/scheduler/internal/store"
)

// The replica registry. Every replica writes a small record to the store
// once per heartbeat period (one script call, one round trip) with a time
// to live, and reads everyone else's in the same call: who is up, which
// version, how far its clock is from Redis', and a fingerprint of the job
// table it loaded. Replicas whose tables differ (a rolling deploy half done,
// a stale ConfigMap) schedule different things; each of them says so in its
// log, in a metric, and on the console.

// Replicas lists the live replicas, sorted by id, flagging those whose job
// table differs from most others'. One round trip.
func (c *Control) Replicas(ctx context.Context) ([]Replica, error) {
	if !c.store.Caps().Registry {
		return nil, errors.New("scheduler: this store keeps no replica registry")
	}
	return c.store.Registry(ctx, store.RegistryList, "", nil)
}

// TableFingerprint is a short hash of a job table: equal for tables that
// schedule and run the same things, whatever the order of their jobs. It
// covers every field of every job with defaults applied, and what each
// handler runs (a command's arguments and directory, an HTTP job's method,
// host and path) but no value that may hold a secret (environment values,
// headers, bodies, query strings).
func TableFingerprint(tab []Job) string {
	lines := make([]string, 0, len(tab))
	for _, j := range tab {
		lines = append(lines, jobLine(j))
	}
	return linesHash(lines)[:12]
}

// jobLine is what TableFingerprint hashes of one job.
func jobLine(j Job) string {
	j = j.withDefaults()
	h := j.Handler
	j.Handler = nil
	line := fmt.Sprintf("%+v|%T", j, h)
	switch h := h.(type) {
	case *jobs.Command:
		line += handlerShape(h.Args, h.Dir, h.Env, h.KillGrace)
	case *jobs.HTTP:
		u, _ := url.Parse(h.URL)
		if u != nil {
			line += fmt.Sprintf("|%s|%s|%s|%v", h.Method, u.Host, u.Path, h.ExpectStatus)
		}
	}
	return line
}

// linesHash is the hex SHA-256 of lines, whatever their order.
func linesHash(lines []string) string {
	slices.Sort(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// tableParts cuts a table's fingerprint in parts: the jobs are shared out
// by name among tablePartCount parts, and each part is fingerprinted on
// its own (8 hex digits; a part without jobs too). Two tables whose part
// of a job's name is the same have that job the same (or both lack it),
// whatever else differs: a heartbeat that finds instants nobody decided
// asks whether a replica with another table could have run them (heartbeat.go).
// A whole-table fingerprint said no for every job as soon as any one job
// differed, and an unchanged job's instants, missed by every replica, were
// left with no record.
func tableParts(tab []Job) string {
	var parts [tablePartCount][]string
	for _, j := range tab {
		k := tablePart(j.Name)
		parts[k] = append(parts[k], jobLine(j))
	}
	var b strings.Builder
	b.Grow(tablePartCount * 8)
	for _, lines := range parts {
		b.WriteString(linesHash(lines)[:8])
	}
	return b.String()
}

// tablePartCount is how many parts tableParts cuts a table in: 512 bytes
// more in each registry record, and a job differing between two tables
// makes another table of one part in 64.
const tablePartCount = 64

// tablePart is the part of the table the job named name falls in.
func tablePart(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % tablePartCount)
}

// samePart says whether the table parts a and b (tableParts) are the same
// where the job named name falls; false when either is missing.
func samePart(a, b, name string) bool {
	if len(a) != tablePartCount*8 || len(b) != len(a) {
		return false
	}
	i := 8 * tablePart(name)
	return a[i:i+8] == b[i:i+8]
}

func handlerShape(args []string, dir string, env map[string]string, grace time.Duration) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprintf("|%q|%q|%q|%s", args, dir, keys, grace)
}

// WithVersion names the version of the program this replica runs, as the
// replica registry shows it. Default: the main module's version from the
// build info, or "(devel)".
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

func defaultVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// registration is this replica's view of the registry.
type registration struct {
	mismatch atomic.Bool   // a live replica's table differs from ours (read by the gauge)
	warned   string        // the differing replicas last warned about
	warnedAt time.Time     // and when
	started  time.Time     // when Run began
	table    string        // fingerprint of the table in force
	parts    string        // and by parts (tableParts)
	gen      int           // table generation the fingerprint is of, +1
	version  string        // what the registry shows
	ttl      time.Duration // record lifetime
}

// register keeps this replica's record in the registry, once per sync
// interval, until ctx is done; then it removes it.
func (s *Scheduler) register(ctx context.Context) {
	if !s.store.Caps().Registry {
		return
	}
	reg := s.store
	r := &registration{started: s.now(), version: cmp.Or(s.cfg.version, defaultVersion()), ttl: replicaTTL(s.cfg.syncInterval)}
	if unreg := s.registryGauge(r); unreg != nil {
		defer unreg()
	}
	t := time.NewTicker(s.cfg.syncInterval)
	defer t.Stop()
	for {
		s.beat(ctx, reg, r)
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_, _ = reg.Registry(lctx, store.RegistryLeave, s.cfg.replicaID, nil)
			cancel()
			return
		case <-t.C:
		}
	}
}

// beat writes this replica's record and checks the others' tables.
func (s *Scheduler) beat(ctx context.Context, reg store.Registrar, r *registration) {
	tab, gen := s.table()
	if r.gen != gen+1 {
		jobs := make([]Job, len(tab))
		for i, j := range tab {
			jobs[i] = j.Job
		}
		r.table, r.parts, r.gen = TableFingerprint(jobs), tableParts(jobs), gen+1
	}
	mine := r.table
	running := int(s.running.Load())
	rec := &store.ReplicaRecord{
		Version: r.version, Started: r.started.UnixMilli(), TTL: r.ttl.Milliseconds(),
		Table: mine, Parts: r.parts, Jobs: len(tab), Running: running,
	}
	if off, ok := s.redisClock.offset(s.now()); ok {
		rec.Offset = off.Microseconds()
	}
	cctx, cancel := context.WithTimeout(ctx, max(s.cfg.syncInterval, time.Second))
	defer cancel()
	live, err := reg.Registry(cctx, store.RegistryBeat, s.cfg.replicaID, rec)
	if err != nil {
		return // the heartbeat reports the store's failures
	}
	var differ []string
	for _, o := range live {
		if o.Table != mine {
			differ = append(differ, o.ID+"="+o.Table)
		}
	}
	r.mismatch.Store(len(differ) > 0)
	key := fmt.Sprint(differ)
	switch {
	case len(differ) == 0:
		if r.warned != "" {
			s.log.Info("every live replica has this replica's job table again", "table", mine)
		}
		r.warned = ""
	case key != r.warned || time.Since(r.warnedAt) > 5*time.Minute:
		s.log.Warn("live replicas run a different job table than this one (a rolling deploy in progress, or a stale config?)",
			"table", mine, "differing", differ)
		r.warned, r.warnedAt = key, time.Now()
	}
}

// registryGauge exports solocron.replica.table_mismatch: 1 while a live
// replica's table differs from this one's. It returns the function that
// stops the export.
func (s *Scheduler) registryGauge(r *registration) func() {
	m := s.cfg.meter.Meter(ScopeName)
	g, err := m.Int64ObservableGauge("solocron.replica.table_mismatch",
		metric.WithDescription("1 while a live replica runs a job table different from this replica's, else 0."))
	if err == nil {
		var reg metric.Registration
		reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			var v int64
			if r.mismatch.Load() {
				v = 1
			}
			o.ObserveInt64(g, v)
			return nil
		}, g)
		if err == nil {
			return func() { _ = reg.Unregister() }
		}
	}
	s.log.Warn("cannot register the table mismatch metric", "err", err)
	return nil
}

// replicaTTL is how long a replica stays listed after its last heartbeat:
// a few missed beats (a slow Redis, a GC pause) must not drop it.
func replicaTTL(syncInterval time.Duration) time.Duration {
	return max(5*syncInterval, 10*time.Second)
}
