// Package faultnet is a loopback TCP proxy for fault-injection tests: every
// directed link between two nodes of a test cluster gets its own proxy
// listener, and the test cuts, stalls or slows links while the cluster runs.
//
// A node is told to dial a peer's advertised address through the proxy of the
// link from itself to that peer (raftstore.Config.DialVia, lockd's hidden
// -dial-via flag). Since every peer connection is opened by exactly one node,
// cutting the links a→b and b→a separates a and b completely, in both
// directions, for Raft traffic and forwarded requests alike.
//
// It is test machinery: it listens on 127.0.0.1 only and keeps every byte it
// has not delivered yet in memory.
package faultnet

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// ErrClosed is returned by Net's methods once Close has been called.
var ErrClosed = errors.New("faultnet: closed")

// Mode is what a blocked link does with its traffic.
type Mode uint8

const (
	// Open delivers everything (after the link's delay).
	Open Mode = iota
	// Drop is a silent partition: open connections stop delivering (the bytes
	// are held and delivered if the link opens again before either side gives
	// up, as TCP would retransmit them), and new connections are accepted but
	// deliver nothing. Peers notice only by their own timeouts.
	Drop
	// Reset is a loud partition: open connections are closed at once and new
	// ones are closed as soon as they are accepted.
	Reset
)

func (m Mode) String() string {
	switch m {
	case Open:
		return "open"
	case Drop:
		return "drop"
	case Reset:
		return "reset"
	}
	return "mode?"
}

// Link is one directed link: connections opened by node From to node To.
type Link struct{ From, To string }

// Net is a set of proxied links. Its methods are safe for concurrent use.
type Net struct {
	mu     sync.Mutex
	links  map[Link]*link
	closed bool
	wg     sync.WaitGroup
}

// New returns an empty Net.
func New() *Net { return &Net{links: map[Link]*link{}} }

type link struct {
	key    Link
	target string
	ln     net.Listener
	mode   Mode
	delay  time.Duration
	change chan struct{} // closed and replaced whenever mode or delay changes
	conns  map[*pipe]struct{}
}

// Add starts a proxy for the link l that forwards to target (the address node
// To listens on) and returns the proxy's address, on 127.0.0.1 with a free port.
func (n *Net) Add(l Link, target string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		ln.Close()
		return "", ErrClosed
	}
	if old := n.links[l]; old != nil {
		ln.Close()
		return "", errors.New("faultnet: link " + l.From + "->" + l.To + " exists")
	}
	lk := &link{key: l, target: target, ln: ln, change: make(chan struct{}), conns: map[*pipe]struct{}{}}
	n.links[l] = lk
	n.wg.Add(1)
	go n.accept(lk)
	return ln.Addr().String(), nil
}

// Set changes the mode and added one-way delay of the links ls (both
// directions of a connection are delayed). Unknown links are ignored.
func (n *Net) Set(mode Mode, delay time.Duration, ls ...Link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range ls {
		lk := n.links[l]
		if lk == nil {
			continue
		}
		lk.mode, lk.delay = mode, delay
		close(lk.change)
		lk.change = make(chan struct{})
		if mode == Reset {
			for p := range lk.conns {
				p.close()
				delete(lk.conns, p)
			}
		}
	}
}

// Heal opens every link and removes every delay.
func (n *Net) Heal() {
	n.mu.Lock()
	var all []Link
	for l := range n.links {
		all = append(all, l)
	}
	n.mu.Unlock()
	n.Set(Open, 0, all...)
}

// Links returns every link, in no particular order.
func (n *Net) Links() []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Link, 0, len(n.links))
	for l := range n.links {
		out = append(out, l)
	}
	return out
}

// State returns a link's mode and delay.
func (n *Net) State(l Link) (Mode, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if lk := n.links[l]; lk != nil {
		return lk.mode, lk.delay
	}
	return Open, 0
}

// Close stops every proxy and closes every proxied connection.
func (n *Net) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	for _, lk := range n.links {
		lk.ln.Close()
		for p := range lk.conns {
			p.close()
		}
		close(lk.change)
		lk.change = make(chan struct{})
	}
	n.mu.Unlock()
	n.wg.Wait()
	return nil
}

// state returns the link's mode, delay, and a channel closed at its next change.
func (n *Net) state(lk *link) (Mode, time.Duration, <-chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return lk.mode, lk.delay, lk.change, n.closed
}

func (n *Net) accept(lk *link) {
	defer n.wg.Done()
	for {
		c, err := lk.ln.Accept()
		if err != nil {
			return
		}
		n.mu.Lock()
		if n.closed || lk.mode == Reset {
			n.mu.Unlock()
			c.Close()
			continue
		}
		p := &pipe{client: c, done: make(chan struct{})}
		lk.conns[p] = struct{}{}
		n.mu.Unlock()
		n.wg.Add(1)
		go n.serve(lk, p)
	}
}

// pipe is one proxied connection.
type pipe struct {
	client, server net.Conn
	mu             sync.Mutex
	once           sync.Once
	done           chan struct{}
}

func (p *pipe) close() {
	p.once.Do(func() {
		close(p.done)
		p.client.Close()
		p.mu.Lock()
		if p.server != nil {
			p.server.Close()
		}
		p.mu.Unlock()
	})
}

func (n *Net) serve(lk *link, p *pipe) {
	defer n.wg.Done()
	defer func() {
		p.close()
		n.mu.Lock()
		delete(lk.conns, p)
		n.mu.Unlock()
	}()
	// The dial itself waits while the link drops traffic: a connection opened
	// during a silent partition reaches the target only if it heals in time.
	if !n.await(lk, p, time.Time{}) {
		return
	}
	s, err := net.DialTimeout("tcp", lk.target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.server = s
	p.mu.Unlock()
	select {
	case <-p.done: // closed while dialing
		s.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.pump(lk, p, p.client, s) }()
	go func() { defer wg.Done(); n.pump(lk, p, s, p.client) }()
	wg.Wait()
}

// await blocks until the link delivers and a chunk read at readAt has waited
// out the link's delay. It reports false when the connection or Net closed.
func (n *Net) await(lk *link, p *pipe, readAt time.Time) bool {
	for {
		mode, delay, change, closed := n.state(lk)
		if closed {
			return false
		}
		var wait <-chan time.Time
		switch mode {
		case Reset:
			return false
		case Open:
			if readAt.IsZero() || delay <= 0 {
				return true
			}
			d := time.Until(readAt.Add(delay))
			if d <= 0 {
				return true
			}
			t := time.NewTimer(d)
			defer t.Stop()
			wait = t.C
		}
		select {
		case <-p.done:
			return false
		case <-change:
		case <-wait:
			return true
		}
	}
}

type chunk struct {
	b  []byte
	at time.Time
}

// pump copies src to dst: one goroutine reads (so that delayed bytes do not
// hold back the reading of later ones) and this one delivers each chunk once
// the link lets it.
func (n *Net) pump(lk *link, p *pipe, src, dst net.Conn) {
	defer p.close()
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			k, err := src.Read(b)
			if k > 0 {
				select {
				case q <- chunk{b[:k], time.Now()}:
				case <-p.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if !n.await(lk, p, c.at) {
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
	// src ended: pass the half-close on, the way TCP would.
	if tc, ok := dst.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	<-p.done
}

var _ io.Closer = (*Net)(nil)
