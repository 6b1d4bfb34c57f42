package redisproto

import (
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// loop is the event loop (loop.go): one goroutine, epoll over the sockets of
// the connections it owns. Its descriptors are touched only through each
// connection's RawConn, which holds the descriptor open while it is used: a
// Close elsewhere (CLIENT KILL, Shutdown) cannot make it read or write another
// connection's socket that reused the number.
type loop struct {
	srv   *Server
	epfd  int
	wakeR int // a pipe whose read end is in the epoll set: wake
	wakeW int

	mu      sync.Mutex
	conns   map[int64]*conn // the connections the loop owns, by id
	stopped bool            // the loop has ended every connection and takes no more

	// The current turn's scratch (the loop goroutine only).
	stall  *time.Timer // stallAfter for the batch in flight
	events []syscall.EpollEvent
	ready  []*conn
	batch  []command.Request
	slots  []loopSlot
}

// wakeID is the epoll data of the wake pipe; connection ids start at 1.
const wakeID = 0

// EnableEventLoop makes the server serve plain-TCP connections with the event
// loop (loop.go) from the next one accepted; call it before Serve. It fails
// with ErrNoEventLoop on a TLS port or where epoll is missing.
func (s *Server) EnableEventLoop() error {
	if s.cfg.TLS != nil {
		return ErrNoEventLoop
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setID(&ev, wakeID)
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return err
	}
	l := &loop{srv: s, epfd: epfd, wakeR: p[0], wakeW: p[1], conns: map[int64]*conn{},
		events: make([]syscall.EpollEvent, 256), stall: time.NewTimer(time.Hour)}
	l.stall.Stop()
	s.loop = l
	s.wg.Add(1)
	go l.run()
	return nil
}

func setID(ev *syscall.EpollEvent, id int64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(uint64(id)>>32))
}

func eventID(ev *syscall.EpollEvent) int64 {
	return int64(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
}

// rawConn is nc's RawConn when the loop can serve it (plain TCP), else nil.
func (s *Server) rawConn(nc net.Conn) syscall.RawConn {
	tc, ok := nc.(*net.TCPConn)
	if s.loop == nil || !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// loopClients is the number of connections the event loop serves now (INFO
// event_loop_clients); the others each have a goroutine.
func (s *Server) loopClients() int {
	if s.loop == nil {
		return 0
	}
	s.loop.mu.Lock()
	defer s.loop.mu.Unlock()
	return len(s.loop.conns)
}

// wake makes the loop look at the server again (Shutdown).
func (l *loop) wake() {
	syscall.Write(l.wakeW, []byte{1})
}

// take gives c to the loop: the accept loop does for a new connection, and a
// connection's goroutine when the connection is plain again. false: the loop
// cannot have it (c is not ready, the loop stopped, or the socket is closed),
// and the caller keeps serving it.
func (l *loop) take(c *conn) bool {
	if !c.loopReady() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setID(&ev, c.id)
	var err error
	if cerr := c.raw.Control(func(fd uintptr) {
		err = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}); cerr != nil || err != nil {
		return false
	}
	c.rd.rd = rawReader{c.raw}
	c.plainBatches = 0 // counted afresh when it next leaves the loop
	l.conns[c.id] = c
	return true
}

// release takes c out of the epoll set and the loop's map.
func (l *loop) release(c *conn) {
	c.raw.Control(func(fd uintptr) {
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
	c.rd.rd = c.nc
}

// run is the loop's goroutine: until Shutdown, wait for ready connections and
// serve them one turn at a time.
func (l *loop) run() {
	defer l.srv.wg.Done()
	defer syscall.Close(l.wakeW)
	defer syscall.Close(l.wakeR)
	defer syscall.Close(l.epfd)
	for {
		n, err := syscall.EpollWait(l.epfd, l.events, -1)
		if err == syscall.EINTR {
			continue
		}
		stop := err != nil || l.srv.shuttingDown()
		if err != nil {
			l.srv.log.Error("RESP event loop: epoll_wait failed; closing its connections", "err", err)
		}
		l.ready = l.ready[:0]
		l.mu.Lock()
		if stop {
			l.stopped = true
			for _, c := range l.conns {
				l.ready = append(l.ready, c)
			}
		} else {
			for i := range n {
				id := eventID(&l.events[i])
				if id == wakeID {
					var b [64]byte
					syscall.Read(l.wakeR, b[:])
				} else if c := l.conns[id]; c != nil {
					l.ready = append(l.ready, c)
				}
			}
		}
		l.mu.Unlock()
		if stop {
			// Shutdown: every request read was answered in an earlier turn.
			for _, c := range l.ready {
				l.end(c)
			}
			return
		}
		l.turn()
	}
}

// turn reads and parses every ready connection, runs their keyspace commands
// as one batch, and answers each.
func (l *loop) turn() {
	batch, slots := l.batch[:0], l.slots[:0]
	for _, c := range l.ready {
		c.lt.reset()
		switch err := c.rd.fill(c.rd.want); err {
		case nil, errWouldBlock:
		case errQueryBuffer:
			c.lt.perr = err // closed without a reply, as serve closes it
		default:
			c.lt.rerr = err
		}
		c.auth.stale = true // re-read the users for this turn (auth.go)
		batch, slots = c.parseTurn(batch, slots)
	}
	if len(batch) > 0 && !l.runBatch(batch, slots) {
		l.batch, l.slots = nil, nil // the detached turn keeps them
		return
	}
	clear(batch) // keep no request's arguments until the next turn
	clear(slots)
	l.batch, l.slots = batch[:0], slots[:0]
	for _, c := range l.ready {
		l.answer(c)
	}
}

// stallAfter is how long the loop waits for a turn's batch before it lets the
// turn's connections go (loop.go): well above a commit on a busy small machine
// (a p99 of 10–25 ms), well below what a health check waits for a PING.
const stallAfter = 50 * time.Millisecond

// runBatch runs the turn's batch and reports whether it came back within
// stallAfter, the replies in their slots. If not, the turn's connections have
// left the loop, and a goroutine answers them when the batch is done and moves
// each to a goroutine of its own (moveOut).
func (l *loop) runBatch(batch []command.Request, slots []loopSlot) bool {
	started := time.Now()
	done := make(chan []resp.Value, 1)
	go func() { done <- l.srv.store.Do(l.srv.ctx, batch) }()
	l.stall.Reset(stallAfter)
	select {
	case res := <-done:
		l.stall.Stop()
		fillReplies(batch, slots, res, time.Since(started))
		return true
	case <-l.stall.C:
	}
	ready := slices.Clone(l.ready)
	for _, c := range ready {
		l.release(c)
	}
	go func() {
		fillReplies(batch, slots, <-done, time.Since(started))
		for _, c := range ready {
			l.moveOut(c, c.renderTurn(), c.ending())
		}
	}()
	return false
}

// answer writes c's replies of this turn and decides what becomes of it: it
// stays, ends, or moves to a goroutine of its own.
func (l *loop) answer(c *conn) {
	out := c.renderTurn()
	t := &c.lt
	var n int
	var err error
	if len(out) > 0 {
		n, err = rawWrite(c.raw, out)
	}
	if err != nil {
		l.end(c)
		return
	}
	ending := c.ending()
	if n == len(out) && (ending || !t.handoff) {
		if ending {
			l.end(c)
		}
		return
	}
	// A command the loop does not serve, or a client that does not read fast
	// enough.
	l.release(c)
	l.moveOut(c, out[n:], ending)
}

// moveOut gives c, released from the loop, to a goroutine of its own, which
// sends rest (replies the socket did not take yet), then ends c if ending, or
// serves it (conn.serve) with the bytes it has buffered.
func (l *loop) moveOut(c *conn, rest []byte, ending bool) {
	if t := &c.lt; t.rerr != nil && !ending {
		c.rd.pushback(nil, t.rerr) // what ended reading, after the buffered requests
	}
	go func() {
		if len(rest) > 0 && !c.send(rest, true) || ending {
			l.srv.endConn(c)
			return
		}
		l.srv.serveConn(c)
	}()
}

// end ends a connection the loop owns.
func (l *loop) end(c *conn) {
	l.release(c)
	l.srv.endConn(c)
}

// rawReader reads a socket without blocking: errWouldBlock when nothing is
// there, io.EOF at its end.
type rawReader struct{ rc syscall.RawConn }

func (r rawReader) Read(b []byte) (int, error) {
	var n int
	var err error
	if cerr := r.rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), b)
			if err != syscall.EINTR {
				return true
			}
		}
	}); cerr != nil {
		return 0, cerr
	}
	switch {
	case err == syscall.EAGAIN:
		return 0, errWouldBlock
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// rawWrite writes b without blocking and returns how much was written; a full
// socket buffer is not an error.
func rawWrite(rc syscall.RawConn, b []byte) (int, error) {
	done := 0
	var err error
	if cerr := rc.Write(func(fd uintptr) bool {
		for done < len(b) {
			n, werr := syscall.Write(int(fd), b[done:])
			if werr == syscall.EINTR {
				continue
			}
			if werr != nil {
				if werr != syscall.EAGAIN {
					err = werr
				}
				return true
			}
			done += n
		}
		return true
	}); cerr != nil {
		return done, cerr
	}
	return done, err
}

// kill closes c from another goroutine (CLIENT KILL, ACL DELUSER). A plain
// TCP connection is shut down rather than closed, so that whoever owns it —
// its goroutine or the loop, which does not hear of a close — reads the end
// and ends it.
func (c *conn) kill() {
	if c.raw == nil {
		c.nc.Close()
		return
	}
	if err := c.raw.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) }); err != nil {
		c.nc.Close()
	}
}
