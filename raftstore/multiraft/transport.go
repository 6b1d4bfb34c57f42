package multiraft

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is the part of the peer port a NetTransport runs on: inbound
// connections that carry its header, and dials that send it (mux.Layer).
type StreamLayer interface {
	net.Listener
	Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error)
}

// Transport limits.
const (
	// MaxFrame bounds a frame on the wire: a longer one closes the
	// connection before anything is allocated for it.
	MaxFrame = 256 << 20
	// maxQueued bounds the bytes waiting for one peer: a frame beyond it is
	// dropped (Raft sends again), so a dead peer costs bounded memory.
	maxQueued = 64 << 20
	// dialTimeout bounds one dial; redialAfter is how long a peer that
	// could not be reached is left alone before the next frame dials again.
	dialTimeout = 2 * time.Second
	redialAfter = 100 * time.Millisecond
)

// NetTransport is a Transport over TCP connections of a StreamLayer: one
// outbound connection per peer, written by a goroutine of its own, frames
// length-prefixed (4 bytes, big-endian). Send appends to the peer's queue
// and never blocks on the network: a frame that arrives while the last
// write is under way goes out with the next, in one write.
type NetTransport struct {
	layer   StreamLayer
	resolve func(id uint64) (string, bool)
	log     *slog.Logger
	hello   []byte             // Greet's: the first frame of every connection dialed
	greeted func(hello []byte) // Greet's: told each accepted connection's first frame

	mu     sync.Mutex
	peers  map[uint64]*peerConn
	conns  map[net.Conn]struct{} // inbound, to close on Close
	closed bool
	wg     sync.WaitGroup
}

// NewNetTransport returns a transport that dials peers at the addresses
// resolve gives for their ids (false: unknown, the frame is dropped).
func NewNetTransport(layer StreamLayer, resolve func(id uint64) (string, bool), log *slog.Logger) *NetTransport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &NetTransport{layer: layer, resolve: resolve, log: log,
		peers: map[uint64]*peerConn{}, conns: map[net.Conn]struct{}{}}
}

// Greet sets the hello this transport sends first on every connection it
// dials (at most 4 KiB; lockd: the node's name and peer address, so that a
// node that knows nothing of the dialer yet, one joining, can answer it),
// and what it tells of the hello of every connection it accepts. Call it
// before Send and Serve. Without it the hello is empty, and hellos received
// are dropped.
func (t *NetTransport) Greet(hello []byte, greeted func(hello []byte)) {
	t.hello, t.greeted = hello, greeted
}

type peerConn struct {
	t      *NetTransport
	id     uint64
	mu     sync.Mutex
	buf    []byte // length-prefixed frames waiting
	wake   chan struct{}
	stop   chan struct{}
	downAt time.Time // the last failed dial
}

// Send implements Transport.
func (t *NetTransport) Send(to uint64, frame []byte) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	p := t.peers[to]
	if p == nil {
		p = &peerConn{t: t, id: to, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		t.peers[to] = p
		t.wg.Add(1)
		go p.writer()
	}
	t.mu.Unlock()
	p.mu.Lock()
	if len(p.buf)+4+len(frame) > maxQueued || time.Since(p.downAt) < redialAfter {
		p.mu.Unlock()
		return // dropped: Raft resends what matters
	}
	p.buf = binary.BigEndian.AppendUint32(p.buf, uint32(len(frame)))
	p.buf = append(p.buf, frame...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// writer writes p's queued frames, dialing when it has no connection.
func (p *peerConn) writer() {
	defer p.t.wg.Done()
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var out []byte
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		runtime.Gosched() // the frames being sent this moment join this write (as in the driver)
		p.mu.Lock()
		out, p.buf = p.buf, out[:0]
		p.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		if conn == nil {
			addr, ok := p.t.resolve(p.id)
			var err error
			if ok {
				conn, err = p.t.layer.Dial(raft.ServerAddress(addr), dialTimeout)
			} else {
				err = errors.New("unknown peer")
			}
			if err != nil {
				p.t.log.Debug("multiraft: peer unreachable", "peer", p.id, "err", err)
				p.mu.Lock()
				p.downAt = time.Now()
				p.mu.Unlock()
				conn = nil
				continue
			}
			// The hello goes first, in the same write.
			first := binary.BigEndian.AppendUint32(nil, uint32(len(p.t.hello)))
			out = append(append(first, p.t.hello...), out...)
		}
		if _, err := conn.Write(out); err != nil {
			p.t.log.Debug("multiraft: write to peer failed", "peer", p.id, "err", err)
			conn.Close()
			conn = nil
		}
	}
}

// Serve accepts the layer's inbound connections and hands every frame they
// carry to n, until the layer is closed. A connection that sends a frame
// over MaxFrame, or one that does not parse, is closed.
func (t *NetTransport) Serve(n *Node) error {
	for {
		c, err := t.layer.Accept()
		if err != nil {
			return err
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return net.ErrClosed
		}
		t.conns[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.read(c, n)
	}
}

func (t *NetTransport) read(c net.Conn, n *Node) {
	defer t.wg.Done()
	defer func() {
		c.Close()
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	var hdr [4]byte
	var buf []byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxMemberContext {
		t.log.Warn("multiraft: peer sent an oversized hello", "remote", c.RemoteAddr().String(), "bytes", size)
		return
	}
	hello := make([]byte, size)
	if _, err := io.ReadFull(br, hello); err != nil {
		return
	}
	if t.greeted != nil && size > 0 {
		t.greeted(hello)
	}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(hdr[:])
		if size > MaxFrame {
			t.log.Warn("multiraft: peer sent an oversized frame", "remote", c.RemoteAddr().String(), "bytes", size)
			return
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			return
		}
		if err := n.Receive(buf); err != nil {
			t.log.Warn("multiraft: peer sent a malformed frame", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		if cap(buf) > 1<<20 { // one large frame does not pin its buffer
			buf = nil
		}
	}
}

// Close stops the writers and closes every connection; the layer is the
// caller's to close (which ends Serve).
func (t *NetTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	for _, p := range t.peers {
		close(p.stop)
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}
