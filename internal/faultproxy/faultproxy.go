// Package faultproxy is a TCP proxy that sits between replicas and Redis and
// injects network faults on command: a black hole that keeps sockets open,
// connection resets, added latency, and holding back a reply past the
// client's read timeout. It is for tests; it listens on loopback only.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does to traffic.
type Mode int

const (
	// Pass forwards traffic as is.
	Pass Mode = iota
	// BlackHole forwards nothing in either direction and connects nothing
	// upstream, but keeps every socket open, like a network that silently
	// drops packets. Bytes sent meanwhile are delivered when the mode ends,
	// as TCP would after retransmission.
	BlackHole
	// Reset closes every connection with a TCP reset and resets new ones at
	// once.
	Reset
)

// Proxy forwards connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	cond     *sync.Cond
	mode     Mode
	latency  time.Duration
	hold     time.Duration // delay for the next server-to-client chunk
	conns    map[*link]struct{}
	closed   bool
	accepted int
}

type link struct {
	client, server net.Conn
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*link]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port; point clients at it.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts the connections accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// SetMode switches the proxy's mode; Reset also resets every open
// connection.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	var reset []*link
	if m == Reset {
		for l := range p.conns {
			reset = append(reset, l)
			delete(p.conns, l)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, l := range reset {
		l.reset()
	}
}

// SetLatency adds d to every chunk forwarded, in each direction.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// HoldNextReply delays the next chunk Redis sends back by d: a reply held
// past the client's read timeout.
func (p *Proxy) HoldNextReply(d time.Duration) {
	p.mu.Lock()
	p.hold = d
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[*link]struct{}{}
	p.cond.Broadcast()
	p.mu.Unlock()
	err := p.ln.Close()
	for l := range conns {
		l.close()
	}
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		p.mu.Unlock()
		go p.serve(c)
	}
}

// wait blocks while the proxy black-holes traffic; it reports the mode that
// ended the wait, or false if the proxy closed.
func (p *Proxy) wait() (Mode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == BlackHole && !p.closed {
		p.cond.Wait()
	}
	return p.mode, !p.closed
}

func (p *Proxy) serve(c net.Conn) {
	if m, ok := p.wait(); !ok || m == Reset {
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
	if p.closed || p.mode == Reset {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.conns[l] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pump(s, c, false); done <- struct{}{} }()
	go func() { p.pump(c, s, true); done <- struct{}{} }()
	<-done
	l.close()
	<-done
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// pump copies src to dst chunk by chunk, honouring the mode, the latency and
// (on the reply path) a held reply.
func (p *Proxy) pump(dst, src net.Conn, reply bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if m, ok := p.wait(); !ok || m == Reset {
				return
			}
			p.mu.Lock()
			delay := p.latency
			if reply && p.hold > 0 {
				delay += p.hold
				p.hold = 0
			}
			p.mu.Unlock()
			if delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			return
		}
	}
}

func (l *link) close() {
	_ = l.client.Close()
	_ = l.server.Close()
}

func (l *link) reset() {
	resetConn(l.client)
	resetConn(l.server)
}

// resetConn closes c with a TCP RST instead of a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
