// Package embedstore is the daemon's embedded store: a Redis (miniredis)
// that lives inside the scheduler's process, reached over in-process pipes
// only — no TCP listener, no port, nothing another process can connect to —
// and, given a data directory, kept there durably.
//
// # Durability
//
// Every command runs in the process's memory; a command that may write
// marks the store dirty. Its answer is held back until a snapshot taken
// after it is on disk: the whole data set, written to a new file, fsynced,
// renamed over the older of two snapshot slots, and the directory fsynced.
// So a claim's "started" reaches the scheduler — and the job starts — only
// once the start would survive a kill -9 or a power loss. Commands that
// arrive while a snapshot is being written share the next one (group
// commit); a snapshot identical to the last one written is not written
// again.
//
// # Loss detection
//
// Each snapshot carries a sequence number and a CRC-32C checksum, and the
// two slots hold the last two sequence numbers. At open, a slot that fails
// its checksum (a torn or damaged file), or two slots that are not
// consecutive (one removed, or an older copy restored), mean the newest
// state may be gone: the best snapshot left is loaded and Lost says why.
// The scheduler must then treat the store as one that lost data (no
// WithEphemeralStore), and MarkLost has already cleared every job's epoch,
// so that each job's next claim places the data-loss floor: runs scheduled
// before it are not started again, and fencing tokens keep rising (they
// are anchored to the clock and to the last token the snapshot kept).
//
// # One daemon per directory
//
// The directory is locked (flock on its lock file) for as long as the store
// is open: a second daemon on the same directory refuses to start.
package embedstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Options configure Open.
type Options struct {
	// Dir is the data directory; "" keeps the store in memory only (it
	// begins empty and is lost with the process).
	Dir string
	// Logger receives persistence trouble; nil discards it.
	Logger *slog.Logger
}

// Store is an open embedded store.
type Store struct {
	m      *miniredis.Miniredis
	srv    *server.Server
	dir    string
	lock   *os.File
	log    *slog.Logger
	fresh  bool
	lost   string
	closed atomic.Bool

	// execMu: every command runs under its read side; a snapshot is taken
	// under its write side, so that it never holds half a command.
	execMu sync.RWMutex
	dirty  atomic.Uint64 // writing commands run so far

	ticker chan struct{} // closed to stop clock

	mu      sync.Mutex
	cond    *sync.Cond
	durable uint64 // dirty count the disk holds
	failed  error  // the last snapshot's error, nil once one succeeds
	stop    bool
	seq     uint64 // last snapshot's sequence number
	last    []byte // last snapshot's payload
	stats   Stats
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	persist sync.WaitGroup
}

// ErrClosed is returned by Dial after Close.
var ErrClosed = errors.New("embedstore: closed")

// Open opens the store, loading the data directory's state and locking the
// directory (created 0700 if missing) when o.Dir is set.
func Open(o Options) (*Store, error) {
	s := &Store{m: miniredis.NewMiniRedis(), dir: o.Dir, log: o.Logger, conns: map[net.Conn]struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.cond = sync.NewCond(&s.mu)
	// Keys expire on the real clock, as in Redis: a goroutine moves every
	// TTL on every tick. (Not miniredis' ClockTTL: it moves them at every
	// access, sorting every key each time, so that one claim script costs
	// O(keys log keys) per call it makes.) A key lives at most a tick
	// longer than its TTL, never shorter. A snapshot keeps each TTL as an
	// absolute time, so it goes on running while the daemon is down.
	s.ticker = make(chan struct{})
	c, err := s.m.Dial() // starts the server without a listener
	if err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	_ = c.Close()
	s.srv = s.m.Server()
	if s.dir == "" {
		s.fresh = true
		s.wg.Add(1)
		go s.clock()
		return s, nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.m.Close()
		return nil, fmt.Errorf("embedded store: data directory: %w", err)
	}
	guardDir(s.dir, s.log)
	if s.lock, err = lockDir(s.dir); err != nil {
		s.m.Close()
		return nil, err
	}
	if err := s.load(); err != nil {
		s.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.clock()
	s.persist.Add(1)
	go s.persister()
	return s, nil
}

// Stats counts the store's snapshots.
type Stats struct {
	// Snapshots taken, and of those Written to disk (fsynced): a snapshot
	// equal to the last one written is not written again.
	Snapshots, Written int
	// Bytes is the size of the last snapshot written.
	Bytes int
}

// Stats returns the store's snapshot counts so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// tick is how often TTLs move.
const tick = 50 * time.Millisecond

// clock moves the keys' TTLs with the real (monotonic) clock.
func (s *Store) clock() {
	defer s.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.ticker:
			return
		case now := <-t.C:
			s.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Fresh reports whether the store began empty with this process: no data
// directory, or one that held no state. A job without state in it is new.
func (s *Store) Fresh() bool { return s.fresh }

// Lost says why the state loaded may be older than the last one written
// (see the package documentation); "" when it is intact or fresh.
func (s *Store) Lost() string { return s.lost }

// Dir is the data directory; "" when the store is in memory only.
func (s *Store) Dir() string { return s.dir }

// Miniredis is the server, for tests that inspect or move its clock.
func (s *Store) Miniredis() *miniredis.Miniredis { return s.m }

// Dial returns a new in-process connection to the store: the Dialer of a
// go-redis client.
func (s *Store) Dial() (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop || s.closed.Load() {
		return nil, ErrClosed
	}
	client, srv := net.Pipe()
	s.conns[srv] = struct{}{}
	s.wg.Add(1)
	go s.serve(srv)
	return client, nil
}

// DialContext is Dial with go-redis's Dialer signature.
func (s *Store) DialContext(context.Context, string, string) (net.Conn, error) { return s.Dial() }

// Close closes every connection, writes what is not on disk yet, and
// unlocks the directory.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	close(s.ticker)
	s.wg.Wait()
	s.mu.Lock()
	s.stop = true
	s.cond.Broadcast()
	s.mu.Unlock()
	s.persist.Wait()
	var err error
	if s.dir != "" && s.lock != nil && s.dirty.Load() > s.durableCount() {
		err = s.snapshot() // a last try: nothing waits for it
	}
	s.m.Close()
	if s.lock != nil {
		_ = s.lock.Close() // releases the flock
	}
	return err
}

func (s *Store) durableCount() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.durable
}

// noWrite lists commands that change no data although miniredis does not
// mark them read-only: their answers need not wait for the disk.
var noWrite = map[string]bool{
	"PING": true, "HELLO": true, "CLIENT": true, "SELECT": true, "ECHO": true, "TIME": true,
	"INFO": true, "AUTH": true, "QUIT": true, "COMMAND": true, "SCRIPT": true, "EVALSHA_RO": true,
	"EVAL_RO": true, "DBSIZE": true, "MULTI": true, "DISCARD": true, "WATCH": true, "UNWATCH": true,
	"CONFIG": true,
}

// batch is answers to send once the disk holds need writes.
type batch struct {
	out  []byte
	need uint64
}

// serve runs one connection: commands as they arrive, their answers held
// until the disk has what they wrote. Answers go out on a goroutine of
// their own, queued without bound, so that a client writing a long
// pipeline before it reads is never blocked by its own answers.
func (s *Store) serve(c net.Conn) {
	defer s.wg.Done()
	q := &answers{wake: make(chan struct{}, 1)}
	var wdone sync.WaitGroup
	wdone.Add(1)
	go func() {
		defer wdone.Done()
		s.answer(c, q)
	}()
	defer func() {
		q.close()
		wdone.Wait()
		_ = c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 4<<10)
	peer := server.NewPeer(w)
	var need uint64
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		if len(args) == 0 {
			continue
		}
		cmd := strings.ToUpper(args[0])
		write := !noWrite[cmd] && !s.srv.IsReadOnlyCommand(cmd)
		s.execMu.RLock()
		if write && s.dir != "" {
			// Counted before it runs: a snapshot (which excludes every
			// command) that counts it holds it.
			need = s.dirty.Add(1)
		}
		s.srv.Dispatch(peer, args)
		if !write && s.dir != "" {
			// A read may have seen any write counted by now: its answer
			// waits for them too, so that nothing not yet on disk is
			// ever shown.
			need = max(need, s.dirty.Load())
		}
		s.execMu.RUnlock()
		if write && s.dir != "" {
			s.mu.Lock()
			s.cond.Broadcast() // wake the persister
			s.mu.Unlock()
		}
		peer.Flush()
		if r.Buffered() > 0 && buf.Len() < 1<<20 {
			continue // more of a pipeline: one wait for all of it
		}
		q.push(batch{out: bytes.Clone(buf.Bytes()), need: need})
		buf.Reset()
		if peer.Closed() {
			return
		}
	}
}

// answers is a connection's queue of answers, without bound: the reader
// never waits for the client to read (which may be writing a pipeline).
type answers struct {
	mu     sync.Mutex
	queue  []batch
	closed bool
	wake   chan struct{}
}

func (q *answers) push(b batch) {
	q.mu.Lock()
	q.queue = append(q.queue, b)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *answers) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the oldest batch; ok false once closed and empty.
func (q *answers) next() (batch, bool) {
	for {
		q.mu.Lock()
		if len(q.queue) > 0 {
			b := q.queue[0]
			q.queue = q.queue[1:]
			q.mu.Unlock()
			return b, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return batch{}, false
		}
		<-q.wake
	}
}

// answer sends each batch once the disk holds its writes.
func (s *Store) answer(c net.Conn, q *answers) {
	broken := false
	for {
		b, ok := q.next()
		if !ok {
			return
		}
		if broken {
			continue
		}
		if err := s.waitDurable(b.need); err != nil {
			// The writes are in memory but not on disk: no answer may say
			// they happened. The client sees the connection fail and
			// retries; the store answers again once the disk takes a
			// snapshot.
			broken = true
			_ = c.Close()
			continue
		}
		if _, err := c.Write(b.out); err != nil {
			broken = true
		}
	}
}

// waitDurable waits until the disk holds n writes.
func (s *Store) waitDurable(n uint64) error {
	if n == 0 || s.dir == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.durable < n {
		if s.failed != nil {
			return s.failed
		}
		if s.stop {
			return ErrClosed
		}
		s.cond.Wait()
	}
	return nil
}

// persister writes a snapshot whenever commands wrote since the last one.
func (s *Store) persister() {
	defer s.persist.Done()
	backoff := 50 * time.Millisecond
	for {
		s.mu.Lock()
		for !s.stop && s.dirty.Load() <= s.durable {
			s.cond.Wait()
		}
		if s.stop {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if err := s.snapshot(); err != nil {
			s.log.Error("embedded store: cannot write a snapshot; writes are refused until one succeeds", "dir", s.dir, "err", err)
			s.mu.Lock()
			s.failed = err
			s.cond.Broadcast()
			s.mu.Unlock()
			time.Sleep(backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// snapshot takes the state under execMu and writes it; the writes counted
// when it was taken are then durable.
func (s *Store) snapshot() error {
	s.execMu.Lock()
	n := s.dirty.Load()
	d, err := dump(s.m)
	s.execMu.Unlock()
	if err != nil {
		return err
	}
	payload, err := d.encode()
	if err != nil {
		return err
	}
	written := false
	if s.last == nil || !bytes.Equal(payload, s.last) {
		if err := writeSnapshot(s.dir, s.seq+1, payload); err != nil {
			return err
		}
		s.seq++
		s.last = payload
		written = true
	}
	s.mu.Lock()
	s.stats.Snapshots++
	if written {
		s.stats.Written++
		s.stats.Bytes = len(payload) + headerSize
	}
	s.durable = max(s.durable, n)
	s.failed = nil
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

// readCommand reads one command: a RESP array of bulk strings, or an
// inline command.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" || line[0] != '*' {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n > 1<<20 {
		return nil, fmt.Errorf("embedstore: bad array header %q", line)
	}
	args := make([]string, 0, max(n, 0))
	for range n {
		h, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if h == "" || h[0] != '$' {
			return nil, fmt.Errorf("embedstore: want a bulk string, got %q", h)
		}
		l, err := strconv.Atoi(h[1:])
		if err != nil || l < 0 || l > 512<<20 {
			return nil, fmt.Errorf("embedstore: bad bulk length %q", h)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args = append(args, string(b[:l]))
	}
	return args, nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// ErrLocked is returned by Open when another process has the data
// directory open.
var ErrLocked = errors.New("embedded store: data directory in use")
