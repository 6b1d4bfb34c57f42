package redisproto

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// conn is one client connection. It is served in one of two ways (loop.go):
// by the event loop, while it only sends keyspace commands that do not block,
// or by a goroutine of its own (serve), which reads a batch of requests (all
// that are already buffered: a pipeline), answers them in order and flushes
// once. Exactly one of them owns the connection at a time.
type conn struct {
	// killedByClient is set by the CLIENT KILL that closed the connection
	// (killClients): a later one no longer finds it, although it stays listed
	// until its owner ends it.
	killedByClient atomic.Bool
	srv            *Server
	// The socket: nc while a goroutine owns the connection; while the event
	// loop owns it, fd, a descriptor of the loop's own, and nc is nil
	// (loop_linux.go: detach, attach). Only the owner changes them, under
	// sockMu; the goroutines that are not the owner (kill, Shutdown) read them
	// under sockMu, the owner without it.
	sockMu sync.Mutex
	nc     net.Conn
	fd     int
	rd     *reader
	lt     loopTurn // the loop's scratch for this connection (loop.go)

	// Output: replies (from this connection's goroutine) and pushed pub/sub
	// messages (from the apply goroutine) share one ordered queue; one writer at a
	// time drains it to the socket.
	wmu      sync.Mutex
	pending  []byte
	spare    []byte
	inflight int // bytes taken from pending and being written (output.go)
	writing  bool
	broken   bool
	// queuedN and writtenN count every byte ever put in pending and taken
	// out of it by a drain that finished its write: a waiting sender whose
	// bytes another goroutine drains waits on written until writtenN passes
	// its own (send).
	queuedN, writtenN int64
	written           *sync.Cond // on wmu; made by the first sender that waits
	// unitBytes is the most bytes a value of c's replies has taken (0: none
	// seen yet), for cutting its pipelines into batches (output.go).
	unitBytes int64
	id        int64
	created   time.Time
	addr      string
	laddr     string

	mu      sync.Mutex // guards the fields CLIENT LIST reads
	name    string
	libName string
	libVer  string
	lastCmd string
	lastAt  time.Time

	// proto is the RESP version the connection speaks (2 or 3): written by
	// HELLO under mu, read by every request without it.
	proto atomic.Int32
	// stepAt is when the batch of requests being stepped was read (set by
	// serve and the loop's turn): touch records it, one clock read per
	// batch rather than per request. The connection's goroutine's, or the
	// loop's while the loop serves it.
	stepAt time.Time

	quit    bool
	auth    authState         // user and authentication (auth.go; user guarded by mu)
	subs    subState          // pub/sub subscriptions (guarded by mu)
	trk     trackState        // CLIENT TRACKING (tracking.go; guarded by the tracker's mu)
	tx      *txState          // open MULTI, or nil
	watches []command.Watched // WATCHed keys and their versions

	// Cluster redirects (moved.go): whether this connection follows -MOVED,
	// and the View fetched afresh during the current batch (nil: none yet).
	clusterAware bool
	batchView    *shard.View

	// plainBatches counts the batches in a row this connection's goroutine
	// answered that the event loop could have (handBack), since it last
	// left the loop.
	plainBatches int

	// Client timeouts (timeout.go), the owner's: the read deadline armRead
	// set (zero: none) and whether it is the login deadline; when the event
	// loop last read from the connection.
	readDL   time.Time
	loginDL  bool
	lastRead time.Time
}

func newConn(s *Server, nc net.Conn) *conn {
	now := time.Now()
	c := &conn{srv: s, nc: nc, fd: -1, rd: newReader(nc, s.cfg.Limits),
		id: s.nextID.Add(1), created: now, lastAt: now, clusterAware: s.cfg.Redirect,
		addr: nc.RemoteAddr().String(), laddr: nc.LocalAddr().String()}
	c.proto.Store(2)
	c.rd.unauthed = c.mustAuthenticate
	if s.timeoutsOn() {
		c.rd.arm = c.armRead
	}
	return c
}

// stopReading makes c's goroutine stop reading (Shutdown's drain); the loop
// stops reading its connections itself when Shutdown wakes it.
func (c *conn) stopReading() {
	c.sockMu.Lock()
	defer c.sockMu.Unlock()
	if c.nc != nil {
		c.nc.SetReadDeadline(time.Now())
	}
}

// kill closes c from a goroutine that does not own it (CLIENT KILL, ACL
// DELUSER, Shutdown past its drain). The loop's descriptor is shut down
// rather than closed, so that the loop — which does not hear of a close —
// reads the end and ends it; a goroutine's read or write fails on the closed
// net.Conn.
func (c *conn) kill() {
	c.sockMu.Lock()
	defer c.sockMu.Unlock()
	if c.nc != nil {
		c.nc.Close()
	} else if c.fd >= 0 {
		shutdownFD(c.fd)
	}
}

// closeSocket closes c's socket; its owner calls it once, when it ends c.
func (c *conn) closeSocket() {
	c.sockMu.Lock()
	defer c.sockMu.Unlock()
	if c.nc != nil {
		c.nc.Close()
	}
	if c.fd >= 0 {
		closeFD(c.fd)
		c.fd = -1
	}
}

// serve answers the connection on this goroutine until it ends (false: the
// caller ends it, endConn) or the event loop takes it back (true: the loop owns
// it now; the caller must not touch it). Each request goes through the
// pipeline (step); serve runs the local commands, ends a batch and sends it.
func (c *conn) serve() (toLoop bool) {
	var batch []command.Request
	var batchAt []int // reply slot of each batched request
	var a answers
	for {
		c.auth.stale = true // re-read the users for the next batch (auth.go)
		c.batchView = nil   // a redirect is confirmed on a View of this batch (moved.go)
		a.replies, a.protos, a.units = a.replies[:0], a.protos[:0], 0
		batch, batchAt = batch[:0], batchAt[:0]
		var perr error
		plain := true // every command of the batch is one the loop serves
		// The values the batch's replies may copy: past maxUnits the batch
		// is answered before more is read (output.go).
		maxUnits := c.batchUnits()
	read:
		for n := 0; ; n++ {
			args, err := c.rd.next(n == 0)
			if err != nil {
				perr = err
				break
			}
			if args == nil {
				break
			}
			if n == 0 {
				c.trackHold()         // invalidations for c wait for this batch's replies (tracking.go)
				c.stepAt = time.Now() // the batch's first request has arrived
			}
			q := request{args: args}
			var f fate
			if batch, f = c.step(&q, &a, batch); f != fateLocal {
				c.trackAfter(args[0]) // a local command's is after it ran
			}
			switch f {
			case fateAnswered:
				if c.quit {
					break read
				}
				continue
			case fateInState:
				plain = false
				continue
			case fateBatched:
				plain = plain && !batch[len(batch)-1].Blocks()
				batchAt = append(batchAt, len(a.replies)-1)
				if a.units >= maxUnits {
					break read
				}
				continue
			}
			// A local command: keyspace commands before it are answered first.
			plain = false
			a.replies = c.flushBatch(batch, batchAt, a.replies)
			batch, batchAt = batch[:0], batchAt[:0]
			if pubsubCommand(args[0]) {
				// Its confirmations are queued directly: send what precedes them.
				if !c.sendReplies(a.replies, a.protos, 0) {
					return false
				}
				a.replies, a.protos = a.replies[:0], a.protos[:0]
			}
			started := time.Now()
			v := c.local(args)
			c.trackAfter(args[0])
			c.observe(localName(args), args, v, time.Since(started))
			a.add(v, c.protocol())
			if c.quit {
				break
			}
			if n > 4096 {
				break // answer a long pipeline in slices
			}
		}
		a.replies = c.flushBatch(batch, batchAt, a.replies)
		a.replies, a.protos = c.readFailed(perr, a.replies, a.protos)
		if !c.sendReplies(a.replies, a.protos, a.units) {
			return false
		}
		c.trackRelease() // after the replies: what was held back (tracking.go)
		if perr != nil || c.quit {
			return false
		}
		if c.srv.loop != nil && c.handBack(plain) && c.srv.loop.take(c) {
			return true
		}
	}
}

// noReply marks a reply slot whose bytes were already queued (pub/sub
// confirmations are queued together with the subscription, so that no message can
// overtake them).
const noReply resp.Kind = 255

// maxPending is the default bound on the output queued for a client that
// does not read (a slow subscriber): past Config.MaxOutputBuffer the
// connection is closed, as Redis does with its client-output-buffer-limit.
const maxPending = 64 << 20

// send queues b for the client and, unless another writer is draining the queue,
// drains it: on this goroutine when wait is set, else on a new one. With wait
// it returns once b is written, whoever drains it (so a caller that ends the
// connection next loses none of its output). It reports false once the
// connection is broken.
func (c *conn) send(b []byte, wait bool) bool {
	c.wmu.Lock()
	if c.broken {
		c.wmu.Unlock()
		return false
	}
	if int64(len(c.pending)+c.inflight+len(b)) > c.srv.maxOutput() {
		c.wmu.Unlock()
		c.overLimit()
		return false
	}
	c.pending = append(c.pending, b...)
	c.queuedN += int64(len(b))
	if c.writing {
		if wait {
			mine := c.queuedN
			if c.written == nil {
				c.written = sync.NewCond(&c.wmu)
			}
			for c.writtenN < mine && !c.broken {
				c.written.Wait()
			}
		}
		ok := !c.broken
		c.wmu.Unlock()
		return ok
	}
	c.writing = true
	c.wmu.Unlock()
	if wait {
		return c.drain()
	}
	go c.drain()
	return true
}

func (c *conn) drain() bool {
	for {
		c.wmu.Lock()
		if len(c.pending) == 0 || c.broken {
			c.writing = false
			ok := !c.broken
			c.wmu.Unlock()
			return ok
		}
		data := c.pending
		c.pending, c.spare = c.spare[:0], nil
		c.inflight = len(data)
		c.wmu.Unlock()
		err := c.write(data)
		c.wmu.Lock()
		c.inflight = 0
		c.writtenN += int64(len(data))
		if cap(data) <= 1<<20 {
			c.spare = data[:0]
		}
		if err != nil {
			c.broken = true
		}
		if c.written != nil {
			c.written.Broadcast()
		}
		c.wmu.Unlock()
		if err != nil {
			c.nc.Close()
		}
	}
}

// write writes data to c's socket in chunks of writeChunk, each with a
// deadline outputStall away: a client that takes none of a chunk for that
// long is disconnected (output.go).
func (c *conn) write(data []byte) error {
	stall := c.srv.outputStall()
	for len(data) > 0 {
		chunk := data[:min(len(data), writeChunk)]
		c.nc.SetWriteDeadline(time.Now().Add(stall))
		n, err := c.nc.Write(chunk)
		data = data[n:]
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.srv.stats.outputDisconnects.Add(1)
				c.srv.log.Debug("disconnecting a client that does not read its replies", "addr", c.addr, "id", c.id,
					"stalled_for", stall, "unwritten_bytes", len(data))
			}
			return err
		}
	}
	return nil
}

// readFailed adds what ends a batch whose reading failed with err (nil:
// nothing): the reply to a malformed request, after which the connection
// closes; a request past the query buffer limit closes it without one.
func (c *conn) readFailed(err error, replies []resp.Value, protos []int) ([]resp.Value, []int) {
	if err == nil { // the common case, before errors.As's target escapes
		return replies, protos
	}
	var pe protocolError
	if errors.As(err, &pe) {
		c.srv.stats.protocolErrors.Add(1)
		replies = append(replies, resp.Error("ERR "+pe.Error()))
		protos = append(protos, c.protocol())
	} else if err == errQueryBuffer {
		c.srv.stats.protocolErrors.Add(1)
		c.srv.log.Warn("closing a client whose request reached the query buffer limit",
			"addr", c.addr, "id", c.id, "limit", c.rd.lim.MaxQueryBuffer)
	} else {
		c.timedOut(err) // closed without a reply, as Redis closes an idle client
	}
	return replies, protos
}

// sendReplies renders replies, each in its protocol, and sends them; a
// client whose output they would take past the limit is disconnected instead
// (output.go), before the reply that would cross it is rendered.
// The replies copied units values (replyUnits): what they took is learned
// for cutting the next batches.
func (c *conn) sendReplies(replies []resp.Value, protos []int, units int) bool {
	out, ok := renderLimited(nil, replies, protos, c.srv.maxOutput()-c.queued())
	if !ok {
		c.overLimit()
		return false
	}
	c.learn(units, int64(len(out)))
	return len(out) == 0 || c.send(out, true)
}

// flushBatch sends the batched keyspace requests to the store and puts each reply
// in its slot.
func (c *conn) flushBatch(batch []command.Request, at []int, replies []resp.Value) []resp.Value {
	if len(batch) == 0 {
		return replies
	}
	ctx := c.srv.ctx
	for _, r := range batch {
		if r.Blocks() {
			var stop func()
			ctx, stop = c.watchClose(ctx)
			defer stop()
			break
		}
	}
	started := time.Now()
	res := c.srv.store.Do(ctx, batch)
	took := time.Since(started) // the batch's commands share one round through the log
	for i, v := range res {
		replies[at[i]] = v
		c.observe(batch[i].Spec.Name, batch[i].Args, v, took)
	}
	return replies
}

// maxReadAhead bounds what watchClose reads while a command blocks.
const maxReadAhead = 64 << 10

// watchClose notices a client that goes away while its connection is blocked in
// a command (LOCK.ACQUIRE … WAIT): it reads ahead on the socket, keeping what it
// reads for the parser, and cancels the returned context when the read fails —
// the client closed the connection, or Shutdown stopped reading. stop ends the
// read-ahead; the connection's goroutine calls it before it reads again.
func (c *conn) watchClose(parent context.Context) (context.Context, func()) {
	c.disarmRead() // a blocked client is not idle
	ctx, cancel := context.WithCancel(parent)
	var stopping atomic.Bool
	var ahead []byte
	var rerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for len(ahead) < maxReadAhead {
			n, err := c.nc.Read(b)
			ahead = append(ahead, b[:n]...)
			if err == nil {
				continue
			}
			var ne net.Error
			if !(errors.As(err, &ne) && ne.Timeout() && stopping.Load()) {
				rerr = err
				cancel()
			}
			return
		}
	}()
	return ctx, func() {
		stopping.Store(true)
		c.nc.SetReadDeadline(time.Now())
		<-done
		if !c.srv.shuttingDown() {
			c.nc.SetReadDeadline(time.Time{})
		} else if rerr == nil {
			rerr = errShutdown
		}
		cancel()
		c.rd.pushback(ahead, rerr)
	}
}

// errShutdown ends reading on a connection whose server is shutting down.
var errShutdown = errors.New("server shutting down")

func (c *conn) protocol() int { return int(c.proto.Load()) }

func (c *conn) touch(name string) {
	c.mu.Lock()
	c.lastCmd = name
	c.lastAt = c.stepAt
	c.mu.Unlock()
}

// known reports whether name is a command of this server.
func known(name []byte) bool {
	if _, ok := command.Lookup(name); ok {
		return true
	}
	_, ok := locals[strings.ToLower(string(name))]
	return ok
}

// errUnknownCommand words the reply to a command nobody knows, as Redis 7 does.
func errUnknownCommand(args [][]byte) resp.Value {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		s := cstr(a)
		if room := 128 - b.Len(); len(s) > room {
			s = s[:room]
		}
		b.WriteString("'" + s + "' ")
	}
	return resp.Error("ERR unknown command '" + trunc(cstr(args[0]), 128) + "', with args beginning with: " + b.String())
}

// cstr is b as Redis echoes an argument in an error (a C string, "%s"): up
// to its first NUL byte. It is for an argument inside a longer text (several
// arguments, or one cut at 128 bytes); an error that echoes one argument is
// built with command.Echo, which also trims CR and LF at the text's end.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
