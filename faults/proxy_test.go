//go:build faults

package faults_test

// The fault proxy sits between one replica and Redis: pass, black hole
// keeping sockets open, reset, latency, hold the next reply. It also reads
// the Redis protocol, so that it can hold the reply to one kind of command —
// the next claim, renewal or release — and log when each coordination
// command reached Redis and when its answer came back.

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/solocron/solocron/internal/luascript"
)

type proxyMode int

const (
	modePass proxyMode = iota
	// modeBlackHole forwards nothing either way and connects nothing
	// upstream, but keeps every socket open, like a network that drops
	// packets; what was sent meanwhile is delivered when the mode ends, as
	// TCP would after retransmission.
	modeBlackHole
	// modeReset resets every open connection and every new one at once.
	modeReset
	// modeMute forwards the replica's commands to Redis but none of the
	// answers back, keeping every socket open: a one-way partition, where
	// Redis runs what it is sent and the replica never hears of it.
	modeMute
)

// cmdEvent is one command a replica sent through the proxy.
type cmdEvent struct {
	Kind    string    // claim, renew, complete, sync, ... or the command name
	Args    []string  // ARGV of a script (KEYS dropped), or the command's arguments
	Read    time.Time // when the proxy read it from the replica
	Sent    time.Time // when the proxy wrote it to Redis
	Replied time.Time // when the proxy wrote the reply to the replica; zero if none
	Reply   string    // first string of the reply ("ok", "lost", "started", ...)
	Held    bool      // it, or its reply, was held back on purpose
}

type proxy struct {
	ln      net.Listener
	target  string
	scripts map[string]string // sha1 -> script name

	mu       sync.Mutex
	cond     *sync.Cond
	mode     proxyMode
	latency  time.Duration
	holdNext time.Duration            // the next reply of any kind
	holdKind map[string]time.Duration // the next reply to a command of this kind
	// drop is how many reply batches are still to be dropped: Redis ran
	// the commands, and the proxy resets the connection instead of
	// answering.
	drop int
	// again delays the forwarding of a repeated command: the second one of
	// kind carrying argument arg (a retry), by again.d.
	again struct {
		kind, arg string
		d         time.Duration
		seen      int
	}
	links  map[*link]struct{}
	events []*cmdEvent
	closed bool
}

type link struct {
	client, server net.Conn
	mu             sync.Mutex
	pending        []*cmdEvent // commands sent, replies not yet seen (Redis answers in order)
}

func startProxy(target string, scripts map[string]string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, scripts: scripts, holdKind: map[string]time.Duration{}, links: map[*link]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) SetMode(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	var reset []*link
	if m == modeReset {
		for l := range p.links {
			reset = append(reset, l)
			delete(p.links, l)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, l := range reset {
		resetConn(l.client)
		resetConn(l.server)
	}
}

func (p *proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// HoldNextReply delays the next reply Redis sends on any connection by d.
func (p *proxy) HoldNextReply(d time.Duration) {
	p.mu.Lock()
	p.holdNext = d
	p.mu.Unlock()
}

// DropReplies makes the proxy drop the next n reply batches, on whichever
// connections they come: the commands have reached Redis, and the replica
// sees its connection reset mid-call instead of the answer.
func (p *proxy) DropReplies(n int) {
	p.mu.Lock()
	p.drop = n
	p.mu.Unlock()
}

// HoldReplyTo delays the reply to the next command of kind (claim, renew,
// complete, ...) by d; the command itself reaches Redis at once.
func (p *proxy) HoldReplyTo(kind string, d time.Duration) {
	p.mu.Lock()
	p.holdKind[kind] = d
	p.mu.Unlock()
}

// DelayRetry delays by d the forwarding to Redis of the second command of
// kind that carries arg — a retry of the first, e.g. go-redis retrying a
// claim whose reply was held.
func (p *proxy) DelayRetry(kind, arg string, d time.Duration) {
	p.mu.Lock()
	p.again.kind, p.again.arg, p.again.d, p.again.seen = kind, arg, d, 0
	p.mu.Unlock()
}

// Armed reports whether a hold for kind is still waiting for its command.
func (p *proxy) Armed(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdKind[kind] > 0
}

// Events returns a copy of the commands seen so far, of the given kinds (all
// if none given).
func (p *proxy) Events(kinds ...string) []cmdEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []cmdEvent
	for _, e := range p.events {
		if len(kinds) == 0 || contains(kinds, e.Kind) {
			out = append(out, *e)
		}
	}
	return out
}

func (p *proxy) Close() {
	p.mu.Lock()
	p.closed = true
	links := p.links
	p.links = map[*link]struct{}{}
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	for l := range links {
		_ = l.client.Close()
		_ = l.server.Close()
	}
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// wait blocks while the proxy black-holes traffic; it returns the mode that
// ended the wait, or false once the proxy is closed.
func (p *proxy) wait() (proxyMode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == modeBlackHole && !p.closed {
		p.cond.Wait()
	}
	return p.mode, !p.closed
}

func (p *proxy) serve(c net.Conn) {
	if m, ok := p.wait(); !ok || m == modeReset {
		resetConn(c)
		return
	}
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(c)
		return
	}
	l := &link{client: c, server: s}
	p.mu.Lock()
	if p.closed || p.mode == modeReset {
		p.mu.Unlock()
		resetConn(c)
		resetConn(s)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.requests(l); done <- struct{}{} }()
	go func() { p.replies(l); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = s.Close()
	<-done
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// requests forwards the replica's commands to Redis, noting each one.
func (p *proxy) requests(l *link) {
	r := bufio.NewReaderSize(l.client, 64<<10)
	for {
		var raw []byte
		var batch []*cmdEvent
		// Everything already buffered goes together, as one chunk would.
		for {
			v, err := readValue(r, &raw)
			if err != nil {
				if errors.Is(err, io.EOF) {
					if tc, ok := l.server.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
				}
				return
			}
			e := p.classify(v.elems)
			e.Read = time.Now()
			batch = append(batch, e)
			if r.Buffered() == 0 {
				break
			}
		}
		if m, ok := p.wait(); !ok || m == modeReset {
			return
		}
		p.mu.Lock()
		delay := p.latency
		for _, e := range batch {
			if p.again.d > 0 && e.Kind == p.again.kind && contains(e.Args, p.again.arg) {
				if p.again.seen++; p.again.seen >= 2 {
					delay += p.again.d
					p.again.d = 0
					e.Held = true
				}
			}
		}
		p.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		l.mu.Lock()
		l.pending = append(l.pending, batch...)
		l.mu.Unlock()
		_, err := l.server.Write(raw)
		now := time.Now()
		p.mu.Lock()
		for _, e := range batch {
			e.Sent = now
			p.events = append(p.events, e)
		}
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// replies forwards Redis' answers, holding one back when asked to.
func (p *proxy) replies(l *link) {
	r := bufio.NewReaderSize(l.server, 64<<10)
	for {
		var raw []byte
		var batch []*cmdEvent
		var answers []string
		for {
			v, err := readValue(r, &raw)
			if err != nil {
				if errors.Is(err, io.EOF) {
					if tc, ok := l.client.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
				}
				return
			}
			if !v.push {
				l.mu.Lock()
				if len(l.pending) > 0 {
					batch = append(batch, l.pending[0])
					answers = append(answers, v.first)
					l.pending = l.pending[1:]
				}
				l.mu.Unlock()
			}
			if r.Buffered() == 0 {
				break
			}
		}
		if m, ok := p.wait(); !ok || m == modeReset {
			return
		}
		p.mu.Lock()
		for i, e := range batch {
			e.Reply = answers[i]
		}
		if p.mode == modeMute {
			p.mu.Unlock()
			continue
		}
		if p.drop > 0 {
			p.drop--
			p.mu.Unlock()
			resetConn(l.client)
			resetConn(l.server)
			return
		}
		delay := p.latency
		if p.holdNext > 0 {
			delay += p.holdNext
			p.holdNext = 0
		}
		for _, e := range batch {
			if d := p.holdKind[e.Kind]; d > 0 {
				delay += d
				delete(p.holdKind, e.Kind)
				e.Held = true
			}
		}
		p.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		_, err := l.client.Write(raw)
		now := time.Now()
		p.mu.Lock()
		for _, e := range batch {
			e.Replied = now
		}
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// classify names a command: a Solocron script by its SHA (or source), any
// other command by its name.
func (p *proxy) classify(args []string) *cmdEvent {
	e := &cmdEvent{Kind: "?"}
	if len(args) == 0 {
		return e
	}
	name := strings.ToLower(args[0])
	e.Kind, e.Args = name, args[1:]
	if (name == "evalsha" || name == "eval") && len(args) >= 3 {
		sha := args[1]
		if name == "eval" {
			sum := sha1.Sum([]byte(args[1]))
			sha = hex.EncodeToString(sum[:])
		}
		if s, ok := p.scripts[sha]; ok {
			e.Kind = s
		} else {
			e.Kind = name + ":" + sha[:min(8, len(sha))]
		}
		if n, err := strconv.Atoi(args[2]); err == nil && 3+n <= len(args) {
			e.Args = args[3+n:]
		}
	}
	return e
}

// loadScripts maps the SHA of each of the scheduler's scripts to its name,
// as the scheduler builds them: internal/luascript assembles
// lua/<name>.lua with the parts (lua/parts/) it uses.
func loadScripts() (map[string]string, error) {
	dir := filepath.Join("..", "scheduler", "internal", "store", "lua")
	names, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		return nil, err
	}
	fsys := os.DirFS(dir)
	parts := luascript.LoadParts(fsys, "parts")
	out := map[string]string{}
	for _, n := range names {
		base := strings.TrimSuffix(filepath.Base(n), ".lua")
		sum := sha1.Sum([]byte(parts.Script(fsys, ".", base)))
		out[hex.EncodeToString(sum[:])] = base
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scripts in %s", dir)
	}
	return out, nil
}

// respValue is what the proxy needs of one RESP2/RESP3 value.
type respValue struct {
	first string   // the value itself if simple, else its first element's
	elems []string // the elements of a top-level array (commands are arrays of bulk strings)
	push  bool     // an out-of-band push, not a reply
}

// readValue reads one RESP value from r, appending its bytes to raw.
func readValue(r *bufio.Reader, raw *[]byte) (respValue, error) {
	return readValueDepth(r, raw, 0)
}

func readValueDepth(r *bufio.Reader, raw *[]byte, depth int) (respValue, error) {
	var v respValue
	if depth > 64 {
		return v, errors.New("resp: nested too deep")
	}
	line, err := r.ReadString('\n')
	*raw = append(*raw, line...)
	if err != nil {
		return v, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return v, fmt.Errorf("resp: bad line %q", line)
	}
	typ, body := line[0], line[1:len(line)-2]
	switch typ {
	case '+', '-', ':', ',', '#', '_', '(':
		v.first = body
		return v, nil
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, fmt.Errorf("resp: bad length %q", body)
		}
		if n < 0 {
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return v, err
		}
		*raw = append(*raw, buf...)
		v.first = string(buf[:n])
		return v, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, fmt.Errorf("resp: bad count %q", body)
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			e, err := readValueDepth(r, raw, depth+1)
			if err != nil {
				return v, err
			}
			if i == 0 {
				v.first = e.first
			}
			if depth == 0 && typ == '*' {
				v.elems = append(v.elems, e.first)
			}
		}
		if typ == '|' { // attributes precede the reply they describe
			return readValueDepth(r, raw, depth)
		}
		v.push = typ == '>' && depth == 0
		return v, nil
	}
	return v, fmt.Errorf("resp: unknown type %q", typ)
}

// resetConn closes c with a TCP RST instead of a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// The proxy's reader splits a stream into whole values, keeps every byte,
// and tells pushes from replies.
func TestProxyReadsRESP(t *testing.T) {
	stream := "*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n" + // a command
		"%1\r\n+a\r\n:1\r\n$-1\r\n*-1\r\n" + // a map, then nulls
		"*2\r\n$2\r\nok\r\n$4\r\nlost\r\n" + // a renewal's answer
		">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n" + // a push
		"|1\r\n+ttl\r\n:3\r\n+OK\r\n" + // an attribute, then its reply
		",3.14\r\n#t\r\n_\r\n(123\r\n=7\r\ntxt:abc\r\n~1\r\n+s\r\n-ERR no\r\n"
	r := bufio.NewReader(strings.NewReader(stream))
	var raw []byte
	var firsts []string
	var pushes int
	for {
		v, err := readValue(r, &raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if v.push {
			pushes++
		}
		firsts = append(firsts, v.first)
	}
	want := []string{"EVALSHA", "a", "", "", "ok", "message", "OK", "3.14", "t", "", "123", "txt:abc", "s", "ERR no"}
	if strings.Join(firsts, "|") != strings.Join(want, "|") {
		t.Errorf("values %q, want %q", firsts, want)
	}
	if pushes != 1 {
		t.Errorf("%d pushes, want 1", pushes)
	}
	if string(raw) != stream {
		t.Errorf("bytes not kept:\n%q\n%q", raw, stream)
	}
	var cmdRaw []byte
	v, err := readValue(bufio.NewReader(strings.NewReader("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")), &cmdRaw)
	if err != nil || strings.Join(v.elems, " ") != "GET k" {
		t.Errorf("command %v, %v", v.elems, err)
	}
}
