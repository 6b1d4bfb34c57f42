package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/internal/readn"
)

// Dialer opens a connection to addr. It must honour ctx (Client.Close
// cancels it and waits for it to return). A Dialer for a shared peer port
// writes whatever routing header the port needs before returning the conn.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// Options tunes a Client. Zero values take the defaults.
type Options struct {
	// MaxConnsPerAddr is how many connections the Client opens to one
	// address (DefaultMaxConnsPerAddr if <= 0). Calls share them.
	MaxConnsPerAddr int
	// Timeout, if > 0, bounds each Call as a deadline on its ctx (waiting
	// for a dial, writing, waiting for the reply) and each dial.
	Timeout time.Duration
	// MaxFrame is the largest request the Client sends and the largest
	// response it reads (DefaultMaxFrame if <= 0, at most 4 GiB - 1). It
	// should not exceed the server's, which is DefaultMaxFrame.
	MaxFrame int
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// Client sends requests to servers run by Serve. It is safe for concurrent
// use: concurrent Calls to one address share up to MaxConnsPerAddr
// connections, each carrying many requests at once (pipelining).
//
// Connections are dialed lazily, in a background goroutine, when a Call
// finds no connection or only busy ones and fewer than MaxConnsPerAddr are
// open; a Call picks the least loaded open connection, and waits for a dial
// only when none is open. Connections stay open, idle or not, until they
// break or Close; a broken one is dropped, and a later Call dials anew. Each
// connection has one reader goroutine, and requests are written by their
// Calls, one at a time per connection, each frame in a single write.
//
// Nothing is retried: a failed dial or a broken connection fails the Calls
// that needed it, and the caller decides from ErrNotSent or ErrUnknown
// whether to call again.
type Client struct {
	dial     Dialer
	maxConns int
	timeout  time.Duration
	maxFrame uint64
	log      *slog.Logger

	ctx    context.Context // for dials; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial and reader goroutines

	mu     sync.Mutex
	closed bool
	pools  map[string][]*conn
	rr     uint64
}

// NewClient returns a Client that opens its connections with dial. It starts
// no goroutine until the first Call.
func NewClient(dial Dialer, opts Options) *Client {
	if opts.MaxConnsPerAddr <= 0 {
		opts.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = DefaultMaxFrame
	}
	maxFrame := min(uint64(opts.MaxFrame), math.MaxUint32)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		dial:     dial,
		maxConns: opts.MaxConnsPerAddr,
		timeout:  opts.Timeout,
		maxFrame: maxFrame,
		log:      log,
		ctx:      ctx,
		cancel:   cancel,
		pools:    make(map[string][]*conn),
	}
}

// Call sends req to the server at addr and returns its response. It blocks
// until the response arrives, the call fails or ctx ends (Options.Timeout
// shortens ctx). It does not modify req, nor use it once it has returned.
//
// Every error wraps ErrNotSent (the handler cannot have run: safe to retry)
// or ErrUnknown (the whole request was written: the handler may have run),
// and its cause: ctx.Err() when ctx ended first (ErrNotSent if that was
// before the request was written), ErrClosed, ErrFrameTooLarge (a request
// above MaxFrame is refused with ErrNotSent; a response above it breaks the
// connection), a dial or connection error. A broken connection fails all
// the Calls in flight on it. Call never retries. Call never sends a cancel
// frame: when ctx ends after the request was written, the server's handler
// goes on (see CallCancelable).
func (c *Client) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	return c.call(ctx, addr, req, false)
}

// CallCancelable is Call, except that when ctx ends after the request was
// written and before its response came, it also sends the server a cancel
// frame for the request, best-effort, before returning ErrUnknown: the
// server then ends the handler's ctx with cause ErrCanceledByCaller, if the
// handler still runs. It does not wait for another Call's write to finish:
// the cancel frame then goes out right after that write. A cancel frame that
// cannot be written within about a second (the server is not reading) is
// dropped, and the connection kept.
//
// A server that predates cancel frames closes the connection on one, failing
// every Call in flight on it: use CallCancelable only for servers known to
// understand them (the caller's duty; the protocol does not tell).
func (c *Client) CallCancelable(ctx context.Context, addr string, req []byte) ([]byte, error) {
	return c.call(ctx, addr, req, true)
}

func (c *Client) call(ctx context.Context, addr string, req []byte, cancelable bool) ([]byte, error) {
	if uint64(len(req)) > c.maxFrame {
		return nil, notSent(addr, fmt.Errorf("%w: request of %d bytes, max %d", ErrFrameTooLarge, len(req), c.maxFrame))
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, notSent(addr, err)
	}
	cn, err := c.pick(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer cn.users.Add(-1)
	return cn.call(ctx, req, cancelable)
}

// Close fails the Calls in progress (with ErrUnknown those whose request was
// written, ErrNotSent the others, both wrapping ErrClosed), closes the
// connections, and waits for the Client's goroutines to exit. Later Calls
// fail with ErrNotSent and ErrClosed. Close is idempotent and returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var all []*conn
	for _, conns := range c.pools {
		all = append(all, conns...)
	}
	c.pools = nil
	c.mu.Unlock()

	c.cancel()
	for _, cn := range all {
		cn.fail(ErrClosed)
	}
	c.wg.Wait()
	return nil
}

func notSent(addr string, cause error) error {
	return fmt.Errorf("%w: %s: %w", ErrNotSent, addr, cause)
}

func unknown(addr string, cause error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnknown, addr, cause)
}

// conn is one connection of a Client's pool, from the start of its dial to
// its failure.
type conn struct {
	c    *Client
	addr string

	ready   chan struct{} // closed when the dial is over
	dialErr error         // set before ready is closed

	users atomic.Int64 // Calls given this conn and not yet returned: its load

	wsem         chan struct{} // held (cap 1) while a frame is written; released by unlockWrite
	preambleSent bool          // guarded by wsem

	dead chan struct{} // closed by fail

	mu      sync.Mutex
	nc      net.Conn // set when the dial succeeds
	broken  bool
	err     error // why it broke
	nextID  uint64
	pending map[uint64]chan result // requests written or being written
	cancels []uint64               // requests whose cancel frame awaits the write lock
}

type result struct {
	resp []byte
	err  error
}

func (c *Client) newConn(addr string) *conn {
	return &conn{
		c:       c,
		addr:    addr,
		ready:   make(chan struct{}),
		wsem:    make(chan struct{}, 1),
		dead:    make(chan struct{}),
		pending: make(map[uint64]chan result),
	}
}

// pick returns a usable connection to addr, its load already counted, or an
// error wrapping ErrNotSent. It prefers the least loaded ready connection;
// if that one is busy (or there is none) and the pool is not full it starts
// dialing another, and waits for a dial only when no connection is ready.
func (c *Client) pick(ctx context.Context, addr string) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, notSent(addr, ErrClosed)
	}
	var best *conn
	var bestLoad int64
	var dialing []*conn
	kept := c.pools[addr][:0]
	for _, cn := range c.pools[addr] {
		select {
		case <-cn.ready:
			if cn.isBroken() {
				continue
			}
			if l := cn.users.Load(); best == nil || l < bestLoad {
				best, bestLoad = cn, l
			}
		default:
			dialing = append(dialing, cn)
		}
		kept = append(kept, cn)
	}
	if len(kept) < c.maxConns && (best == nil || bestLoad > 0) {
		cn := c.newConn(addr)
		kept = append(kept, cn)
		dialing = append(dialing, cn)
		c.wg.Add(1)
		go c.dialConn(cn)
	}
	c.pools[addr] = kept
	wait := best
	if wait == nil {
		c.rr++
		wait = dialing[c.rr%uint64(len(dialing))]
	}
	wait.users.Add(1)
	c.mu.Unlock()
	if best != nil {
		return best, nil
	}

	select {
	case <-wait.ready:
		if wait.dialErr != nil {
			wait.users.Add(-1)
			return nil, notSent(addr, wait.dialErr)
		}
		return wait, nil
	case <-ctx.Done():
		wait.users.Add(-1)
		return nil, notSent(addr, ctx.Err())
	}
}

// dialConn dials cn and starts its reader, or records the dial's failure and
// drops cn from the pool.
func (c *Client) dialConn(cn *conn) {
	defer c.wg.Done()
	ctx := c.ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	nc, err := c.dial(ctx, cn.addr)
	if err == nil && nc == nil {
		err = errors.New("dialer returned no connection")
	}

	c.mu.Lock()
	if c.closed {
		err = ErrClosed
	}
	if err != nil {
		c.removeLocked(cn)
		cn.dialErr = fmt.Errorf("dial: %w", err)
		c.mu.Unlock()
		if nc != nil {
			nc.Close()
		}
		c.log.Debug("forward: dial failed", "addr", cn.addr, "err", err)
		close(cn.ready)
		return
	}
	cn.mu.Lock()
	cn.nc = nc
	cn.mu.Unlock()
	c.wg.Add(1)
	c.mu.Unlock()
	c.log.Debug("forward: connected", "addr", cn.addr)
	close(cn.ready)
	go cn.readLoop(nc)
}

// removeLocked drops cn from its pool; c.mu is held.
func (c *Client) removeLocked(cn *conn) {
	conns := c.pools[cn.addr]
	for i, x := range conns {
		if x == cn {
			conns = append(conns[:i], conns[i+1:]...)
			break
		}
	}
	if len(conns) == 0 {
		delete(c.pools, cn.addr)
	} else if c.pools != nil {
		c.pools[cn.addr] = conns
	}
}

func (cn *conn) isBroken() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.broken
}

// fail breaks cn for cause: it closes the connection and fails the requests
// in flight on it with ErrUnknown. Only its first call does anything.
func (cn *conn) fail(cause error) {
	cn.mu.Lock()
	if cn.broken {
		cn.mu.Unlock()
		return
	}
	cn.broken = true
	cn.err = cause
	pending := cn.pending
	cn.pending = nil
	cn.cancels = nil
	nc := cn.nc
	cn.mu.Unlock()

	close(cn.dead)
	if nc != nil {
		nc.Close()
	}
	for _, ch := range pending {
		ch <- result{err: unknown(cn.addr, cause)}
	}
	c := cn.c
	c.mu.Lock()
	c.removeLocked(cn)
	c.mu.Unlock()
	if !errors.Is(cause, ErrClosed) {
		c.log.Debug("forward: connection broken", "addr", cn.addr, "err", cause, "failed_calls", len(pending))
	}
}

// forget drops request id from the pending set and reports whether it was
// there (false: its result has been or is being sent on its channel).
func (cn *conn) forget(id uint64) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if _, ok := cn.pending[id]; ok {
		delete(cn.pending, id)
		return true
	}
	return false
}

// call writes req as one frame, then waits for its response. If cancelable,
// a request given up on after it was written gets a cancel frame.
func (cn *conn) call(ctx context.Context, req []byte, cancelable bool) ([]byte, error) {
	select {
	case cn.wsem <- struct{}{}:
	case <-cn.dead:
		return nil, notSent(cn.addr, cn.cause())
	case <-ctx.Done():
		return nil, notSent(cn.addr, ctx.Err())
	}

	if err := ctx.Err(); err != nil {
		cn.unlockWrite()
		return nil, notSent(cn.addr, err)
	}
	cn.mu.Lock()
	if cn.broken {
		err := cn.err
		cn.mu.Unlock()
		cn.unlockWrite()
		return nil, notSent(cn.addr, err)
	}
	cn.nextID++
	id := cn.nextID
	ch := make(chan result, 1)
	cn.pending[id] = ch
	nc := cn.nc
	cn.mu.Unlock()

	// ctx ending interrupts a blocked write through the write deadline.
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		nc.SetWriteDeadline(time.Unix(1, 0))
		close(interrupted)
	})
	var pre []byte
	if !cn.preambleSent {
		pre = preamble[:]
	}
	n, total, err := writeFrame(nc, pre, typeRequest, id, req)
	wasInterrupted := !stop()
	if wasInterrupted {
		<-interrupted
		if err == nil || n == 0 {
			nc.SetWriteDeadline(time.Time{})
		}
		if err != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	if err == nil {
		cn.preambleSent = true
	}

	if err != nil {
		cn.forget(id)
		if n == 0 && wasInterrupted {
			// Nothing was written: the stream is intact and the
			// connection stays (a connection the deadline did break,
			// such as TLS, fails its next write, again with nothing sent).
			cn.unlockWrite()
			return nil, notSent(cn.addr, err)
		}
		// A partial frame leaves the stream unusable: the connection
		// breaks before the write lock is let go, so that no frame
		// follows the partial one.
		cn.fail(fmt.Errorf("write: %w", err))
		cn.unlockWrite()
		cause := cn.cause() // ours, or the failure (Close, a lost connection) that made the write fail
		if n < total {
			return nil, notSent(cn.addr, cause)
		}
		return nil, unknown(cn.addr, cause)
	}
	cn.unlockWrite()

	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		if cn.forget(id) {
			if cancelable {
				cn.sendCancel(id)
			}
			return nil, unknown(cn.addr, ctx.Err())
		}
		r := <-ch
		return r.resp, r.err
	}
}

// cancelWriteTimeout bounds the write of queued cancel frames: a server that
// reads none of their bytes for that long is not reading the connection.
const cancelWriteTimeout = time.Second

// sendCancel sends a cancel frame for request id, which its Call has given
// up on, without waiting for the write lock: it writes the frame itself if
// the lock is free, else the holder writes it when letting go (unlockWrite).
func (cn *conn) sendCancel(id uint64) {
	cn.mu.Lock()
	if cn.broken {
		cn.mu.Unlock()
		return // the server's handlers end with the connection
	}
	cn.cancels = append(cn.cancels, id)
	cn.mu.Unlock()
	select {
	case cn.wsem <- struct{}{}:
		cn.unlockWrite()
	default:
	}
}

// unlockWrite lets go of the write lock (wsem), held by the caller, after
// writing the cancel frames queued meanwhile. Every holder lets go through
// it, and rechecks the queue after letting go, so a frame that sendCancel
// queued while the lock was held is written by the holder (or by whoever
// took the lock next), never left behind.
func (cn *conn) unlockWrite() {
	for {
		cn.writeCancels()
		<-cn.wsem
		cn.mu.Lock()
		queued := len(cn.cancels) > 0
		cn.mu.Unlock()
		if !queued {
			return
		}
		select {
		case cn.wsem <- struct{}{}:
		default:
			return // the holder writes them
		}
	}
}

// writeCancels writes the queued cancel frames in one write; wsem is held.
// Best-effort: if nothing could be written within cancelWriteTimeout they
// are dropped and the connection kept; a partial write breaks it (and the
// server's handlers end with it).
func (cn *conn) writeCancels() {
	cn.mu.Lock()
	ids := cn.cancels
	cn.cancels = nil
	nc := cn.nc
	broken := cn.broken
	cn.mu.Unlock()
	if len(ids) == 0 || broken {
		return
	}
	buf := make([]byte, headerLen*len(ids))
	for i, id := range ids {
		putHeader((*[headerLen]byte)(buf[i*headerLen:]), typeCancel, 0, id)
	}
	nc.SetWriteDeadline(time.Now().Add(cancelWriteTimeout))
	n, err := nc.Write(buf)
	if err == nil || n == 0 {
		nc.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		return
	}
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		cn.c.log.Warn("forward: server not reading; cancel frames dropped", "addr", cn.addr, "requests", len(ids))
		return
	}
	cn.fail(fmt.Errorf("write: %w", err))
}

func (cn *conn) cause() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// readLoop reads responses and hands each to its Call until the connection
// fails.
func (cn *conn) readLoop(nc net.Conn) {
	defer cn.c.wg.Done()
	br := bufio.NewReaderSize(nc, 64<<10)
	var hdr [headerLen]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			cn.fail(fmt.Errorf("connection lost: %w", err))
			return
		}
		typ, n, id := parseHeader(&hdr)
		if typ != typeResponse && typ != typeError {
			cn.fail(fmt.Errorf("protocol error: frame type %d from the server", typ))
			return
		}
		if n > cn.c.maxFrame {
			cn.fail(fmt.Errorf("%w: response of %d bytes, max %d", ErrFrameTooLarge, n, cn.c.maxFrame))
			return
		}
		cn.mu.Lock()
		_, wanted := cn.pending[id]
		cn.mu.Unlock()
		if !wanted { // abandoned by its Call
			if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
				cn.fail(fmt.Errorf("connection lost: %w", err))
				return
			}
			continue
		}
		// Memory follows the bytes received, not the length announced.
		payload, err := readn.Read(br, int(n))
		if err != nil {
			cn.fail(fmt.Errorf("connection lost: %w", err))
			return
		}
		cn.mu.Lock()
		ch, ok := cn.pending[id]
		delete(cn.pending, id)
		cn.mu.Unlock()
		if !ok {
			continue
		}
		if typ == typeError {
			ch <- result{err: unknown(cn.addr, serverError(payload))}
		} else {
			ch <- result{resp: payload}
		}
	}
}

// serverError is the error an error frame's payload stands for.
func serverError(p []byte) error {
	if len(p) == 0 {
		return errors.New("server error")
	}
	if p[0] == codeTooLarge {
		return fmt.Errorf("%w: server: %s", ErrFrameTooLarge, p[1:])
	}
	return fmt.Errorf("server error %d: %s", p[0], p[1:])
}
