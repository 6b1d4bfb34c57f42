package redisproto

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"golang.org/x/sys/unix"
)

// loop is the event loop (loop.go): one goroutine, epoll over the sockets of
// the connections it owns.
//
// The loop reads and writes a descriptor of its own for each socket it owns
// (conn.fd), a duplicate made as it takes the connection, whose net.Conn it
// then closes (detach); a connection that leaves the loop gets a net.Conn
// again (attach). A socket the Go runtime's poller also watched would wake the
// runtime's poller thread for each request that the loop then reads itself:
// on the development VM half an epoll_pwait and a context switch per lock
// cycle, 6-17% of a single node's CPU per cycle. Only the owner closes the
// descriptor (conn.closeSocket); others shut it down under the connection's
// sockMu (conn.kill), so no one touches a number another socket reused.
type loop struct {
	srv   *Server
	parts PartStore // the Server's store when it answers in parts, else nil
	epfd  int
	wakeR int // a pipe whose read end is in the epoll set: wake
	wakeW int

	mu      sync.Mutex
	conns   map[int64]*conn // the connections the loop owns, by id
	stopped bool            // the loop has ended every connection and takes no more

	// running is the number of the turn whose batch is in the store (0:
	// none). The loop goroutine and that turn's stall timer each try to swap
	// it back to 0 when the batch comes back or stallAfter passes; the one
	// that does decides the turn's fate (runBatch).
	running atomic.Uint64
	turns   uint64 // the last turn's number (the loop goroutine's)
}

// turnScratch is a loop goroutine's scratch, reused from turn to turn. A
// goroutine that stops being the loop (a stalled turn, runBatch) keeps its
// own, and its successor starts with a new one.
type turnScratch struct {
	events []syscall.EpollEvent
	ready  []*conn
	batch  []command.Request
	slots  []loopSlot
	parts  turnParts                         // where the turn's replies go
	part   func(idx []int, res []resp.Value) // parts.part, bound once
	swept  time.Time                         // the last sweep for expired clients (sweep)
	expire []*conn
}

func newTurnScratch() *turnScratch {
	t := &turnScratch{events: make([]syscall.EpollEvent, 256)}
	t.part = t.parts.part
	return t
}

// wakeID is the epoll data of the wake pipe; connection ids start at 1.
const wakeID = 0

// EnableEventLoop makes the server serve plain-TCP connections with the event
// loop (loop.go) from the next one accepted; call it before Serve, and after
// SetStore where the store is set late (the loop asks once whether the store
// is a PartStore). It fails with ErrNoEventLoop on a TLS port or where epoll
// is missing.
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
	l := &loop{srv: s, epfd: epfd, wakeR: p[0], wakeW: p[1], conns: map[int64]*conn{}}
	l.parts, _ = s.store.(PartStore)
	s.loop = l
	s.wg.Add(1)
	go l.run(newTurnScratch())
	return nil
}

func setID(ev *syscall.EpollEvent, id int64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(uint64(id)>>32))
}

func eventID(ev *syscall.EpollEvent) int64 {
	return int64(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
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
	if !l.detach(c) {
		return false
	}
	c.plainBatches = 0 // counted afresh when it next leaves the loop
	c.lastRead = time.Now()
	l.conns[c.id] = c
	return true
}

// detach gives the loop a descriptor of c's socket, in its epoll set, and
// closes c's net.Conn, which takes the socket out of the runtime's poller
// (see loop). false: nothing changed (the socket is closed, or out of
// descriptors), and c's goroutine keeps it.
func (l *loop) detach(c *conn) bool {
	c.sockMu.Lock()
	defer c.sockMu.Unlock()
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if cerr := rc.Control(func(s uintptr) {
		fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil || err != nil {
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setID(&ev, c.id)
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		return false
	}
	c.nc.Close()
	c.nc, c.fd = nil, fd
	c.rd.rd = rawReader(fd)
	return true
}

// attach makes c's socket a net.Conn again as c leaves the loop, for the
// goroutine that owns c now. false: it could not (out of descriptors); the
// socket is closed and the caller ends c.
func (c *conn) attach() bool {
	c.sockMu.Lock()
	f := os.NewFile(uintptr(c.fd), "")
	nc, err := net.FileConn(f) // a descriptor of its own, in the runtime's poller
	f.Close()
	c.fd = -1
	if err == nil {
		c.nc = nc
		c.rd.rd = nc
		c.readDL = time.Time{} // a new descriptor has no deadline
	}
	c.sockMu.Unlock()
	if err != nil {
		c.srv.log.Warn("a client leaving the event loop could not be given a goroutine; closing it", "client", c.addr, "err", err)
		return false
	}
	// Shutdown stops the goroutines' reads; it may have passed c while the
	// loop still owned it.
	if c.srv.shuttingDown() {
		c.stopReading()
	}
	return true
}

// release takes c out of the epoll set and the loop's map.
func (l *loop) release(c *conn) {
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	l.mu.Lock()
	delete(l.conns, c.id)
	l.mu.Unlock()
}

// run is the loop's goroutine: until Shutdown, wait for ready connections and
// serve them one turn at a time. A goroutine whose turn stalled returns once
// it has finished that turn; another has taken over the loop (runBatch).
func (l *loop) run(t *turnScratch) {
	defer l.srv.wg.Done()
	wait := -1 // ms
	if l.srv.timeoutsOn() {
		wait = int(sweepEvery / time.Millisecond)
	}
	for {
		n, err := syscall.EpollWait(l.epfd, t.events, wait)
		if err == syscall.EINTR {
			continue
		}
		if wait >= 0 && err == nil {
			l.sweep(t)
		}
		stop := err != nil || l.srv.shuttingDown()
		if err != nil {
			l.srv.log.Error("RESP event loop: epoll_wait failed; closing its connections", "err", err)
		}
		t.ready = t.ready[:0]
		l.mu.Lock()
		if stop {
			l.stopped = true
			for _, c := range l.conns {
				t.ready = append(t.ready, c)
			}
		} else {
			for i := range n {
				id := eventID(&t.events[i])
				if id == wakeID {
					var b [64]byte
					syscall.Read(l.wakeR, b[:])
				} else if c := l.conns[id]; c != nil {
					t.ready = append(t.ready, c)
				}
			}
		}
		l.mu.Unlock()
		if stop {
			// Shutdown: every request read was answered in an earlier turn.
			for _, c := range t.ready {
				l.end(c)
			}
			syscall.Close(l.epfd)
			syscall.Close(l.wakeR)
			syscall.Close(l.wakeW)
			return
		}
		if !l.turn(t) {
			return
		}
	}
}

// sweep ends the connections past a client timeout (timeout.go), at most
// once per sweepEvery.
func (l *loop) sweep(t *turnScratch) {
	now := time.Now()
	if now.Sub(t.swept) < sweepEvery {
		return
	}
	t.swept = now
	authRequired := l.srv.cfg.AuthTimeout > 0 && l.srv.AuthRequired()
	t.expire = t.expire[:0]
	l.mu.Lock()
	for _, c := range l.conns {
		if expired, login := c.expired(now, authRequired); expired {
			c.loginDL = login
			t.expire = append(t.expire, c)
		}
	}
	l.mu.Unlock()
	for _, c := range t.expire {
		c.expire(c.loginDL)
		l.end(c)
	}
	clear(t.expire)
}

// turn reads and parses every ready connection, runs their keyspace commands
// as one batch, and answers each. false: the batch stalled, and this
// goroutine is no longer the loop (runBatch).
func (l *loop) turn(t *turnScratch) bool {
	batch, slots := t.batch[:0], t.slots[:0]
	now := time.Now()
	for _, c := range t.ready {
		c.lastRead = now
		c.stepAt = now
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
	if len(batch) > 0 && !l.runBatch(t, batch, slots) {
		return false
	}
	clear(batch) // keep no request's arguments until the next turn
	clear(slots)
	t.batch, t.slots = batch[:0], slots[:0]
	for _, c := range t.ready {
		l.answer(c)
	}
	return true
}

// stallAfter is how long the loop waits for a turn's batch before it lets the
// turn's connections go (loop.go): well above a commit on a busy small machine
// (a p99 of 10–25 ms), well below what a health check waits for a PING.
const stallAfter = 50 * time.Millisecond

// runBatch runs the turn's batch on the loop goroutine and reports whether it
// came back within stallAfter, the replies in their slots. If not, the
// turn's stall timer took the turn's connections out of the loop and started
// a new loop goroutine (with a new scratch) in this one's place; this one
// fills their replies when the batch is done, moves each to a goroutine of
// its own (moveOut), and returns false: its caller stops being the loop.
// Running the batch here rather than on a goroutine of its own saves each
// turn a goroutine's start and two wake-ups (single node, 64 clients: about
// 5% less CPU per lock cycle).
func (l *loop) runBatch(t *turnScratch, batch []command.Request, slots []loopSlot) bool {
	started := time.Now()
	l.turns++
	turn := l.turns
	released := make(chan struct{})
	parts := &t.parts
	parts.reset(l, batch, slots, t.ready, started)
	l.running.Store(turn)
	stall := time.AfterFunc(stallAfter, func() {
		if !l.running.CompareAndSwap(turn, 0) {
			return // the batch came back first
		}
		for _, c := range t.ready {
			l.release(c)
		}
		parts.release() // the connections answered in full go now
		close(released)
		l.srv.wg.Add(1)
		go l.run(newTurnScratch())
	})
	// The replies go to the connections' turn scratch through parts: as a
	// PartStore reports them, under parts' lock, and the rest once the batch
	// is back.
	var res []resp.Value
	if l.parts != nil {
		res = l.parts.DoParts(l.srv.ctx, batch, t.part)
	} else {
		res = l.srv.store.Do(l.srv.ctx, batch)
	}
	if l.running.CompareAndSwap(turn, 0) {
		stall.Stop()
		parts.fillRest(res)
		return true
	}
	<-released // the turn's connections are out of the epoll set
	parts.done(res)
	return false
}

// answer writes c's replies of this turn and decides what becomes of it: it
// stays, ends, or moves to a goroutine of its own.
func (l *loop) answer(c *conn) {
	out := c.renderTurn()
	t := &c.lt
	if t.overflow {
		l.end(c)
		return
	}
	var n int
	var err error
	if len(out) > 0 {
		n, err = rawWrite(c.fd, out)
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
		if !c.attach() || len(rest) > 0 && !c.send(rest, true) || ending {
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

// rawReader reads the loop's descriptor of a socket without blocking:
// errWouldBlock when nothing is there, io.EOF at its end.
type rawReader int

func (r rawReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// rawWrite writes b to the loop's descriptor of a socket without blocking and
// returns how much was written; a full socket buffer is not an error.
func rawWrite(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := syscall.Write(fd, b[done:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return done, nil
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

func shutdownFD(fd int) { syscall.Shutdown(fd, syscall.SHUT_RDWR) }
func closeFD(fd int)    { syscall.Close(fd) }
