package jobs

import (
	"cmp"
	"sync"
)

// defaultTailLimit is the size of a Tail made with a limit <= 0.
const defaultTailLimit = 4096

// Tail is an io.Writer that keeps only the last bytes written to it, in a
// fixed ring: however much a job prints, a Tail holds at most its limit. The
// scheduler stores a Tail's contents as the run record's output.
//
// A Tail is safe for concurrent use. The kept bytes are raw: the cut at the
// front may fall inside a multi-byte UTF-8 sequence.
type Tail struct {
	mu      sync.Mutex
	limit   int    // 0: defaultTailLimit
	buf     []byte // len(buf) == limit once allocated, at the first Write
	start   int    // index of the oldest kept byte
	n       int    // bytes kept
	dropped int64
}

// NewTail returns a Tail keeping the last limit bytes; limit <= 0 means 4096.
func NewTail(limit int) *Tail {
	if limit <= 0 {
		limit = defaultTailLimit
	}
	// Allocated at the first Write: most jobs print nothing.
	return &Tail{limit: limit}
}

// Write keeps the end of p, dropping the oldest bytes beyond the limit. It
// never fails and always reports len(p) written.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil {
		t.buf = make([]byte, cmp.Or(t.limit, defaultTailLimit))
	}
	written := len(p)
	limit := len(t.buf)
	if len(p) >= limit {
		// Only the last limit bytes of p survive; everything kept before
		// and the front of p are dropped.
		t.dropped += int64(t.n) + int64(len(p)-limit)
		copy(t.buf, p[len(p)-limit:])
		t.start, t.n = 0, limit
		return written, nil
	}
	if over := t.n + len(p) - limit; over > 0 {
		t.dropped += int64(over)
		t.start = (t.start + over) % limit
		t.n -= over
	}
	end := (t.start + t.n) % limit
	c := copy(t.buf[end:], p)
	copy(t.buf, p[c:])
	t.n += len(p)
	return written, nil
}

// String returns the kept bytes, oldest first.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return ""
	}
	out := make([]byte, 0, t.n)
	end := t.start + t.n
	if end <= len(t.buf) {
		out = append(out, t.buf[t.start:end]...)
	} else {
		out = append(out, t.buf[t.start:]...)
		out = append(out, t.buf[:end-len(t.buf)]...)
	}
	return string(out)
}

// Dropped returns how many bytes were written but are no longer kept.
func (t *Tail) Dropped() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}
