package redisproto

import (
	"errors"

	"github.com/lockd/lockd/command"
)

// The event loop (Linux; loop_linux.go) is the front door's fast path, as
// Redis's: one goroutine waits on epoll for every connection it owns, and each
// turn reads what the ready ones sent, hands all their keyspace commands to
// the Store as one batch, waits for it, and writes each connection its replies
// with one write. A goroutine per connection (conn.serve) costs this VM 1.7 to
// 2.5 times the CPU per request of such a loop before any work is done
// (scripts/connmodel.sh), and one batch per turn gives Raft bigger batches:
// fewer fsyncs per request (redisproto/DESIGN.md).
//
// The loop serves only what needs no more than that: keyspace commands that do
// not block, from connections in no special state. The first command of a
// connection that is anything else (a local command: HELLO, CLIENT, MULTI,
// SUBSCRIBE, ...; a LOCK.ACQUIRE … WAIT) is left unread, and after the turn
// the connection moves, with the bytes it has buffered, to a goroutine of its
// own (conn.serve), which answers exactly as it answers every connection when
// there is no loop. That goroutine hands the connection back (take) after
// handBackAfter batches in a row the loop could have served, once it has
// answered everything it read and the connection is plain again: no MULTI, no
// subscription, not a MONITOR, not cluster-aware, no output queued.
//
// Each turn is synchronous: the loop reads nothing while the Store commits its
// batch. Variants that kept reading during the commit made smaller batches and
// did worse. A batch that takes longer than stallAfter (an election, a slow
// disk) does not hold the loop: the turn's connections leave it, another
// goroutine becomes the loop and goes on serving the others — a PING, say,
// which a node answers while it has no leader — and the stalled one answers
// the turn's connections when the batch is done and hands each to a goroutine
// of its own. On a node of several Raft groups a turn's batch spans them, and
// a group without a leader stalls the turns holding its requests; with a
// PartStore (parts.go) the stalled goroutine answers each of the turn's
// connections as soon as that connection's own requests are done, so the
// other groups' clients in that turn wait stallAfter, not the election.

// ErrNoEventLoop is returned by EnableEventLoop where the platform has no
// epoll (the loop is Linux only) or the port speaks TLS.
var ErrNoEventLoop = errors.New("the RESP event loop needs Linux and plain TCP")

// errWouldBlock: a non-blocking read found nothing to read.
var errWouldBlock = errors.New("would block")

// loopTurn is the loop's scratch for one connection during one turn.
type loopTurn struct {
	answers  // the turn's replies and the values they may copy
	out      []byte
	rerr     error // what ended reading (nil: nothing; errWouldBlock is not kept)
	perr     error // what ended parsing: a protocol error or the query buffer limit
	handoff  bool  // a command was left unread for the connection's goroutine
	overflow bool  // the replies would pass the output buffer limit: the connection ends
}

// multiplexingAPI is INFO's multiplexing_api: "epoll" with the event loop,
// "goroutine" (a goroutine per connection) without.
func (s *Server) multiplexingAPI() string {
	if s.loop == nil {
		return "goroutine"
	}
	return "epoll"
}

// loopSlot is where a batched request's reply goes.
type loopSlot struct {
	c  *conn
	at int
}

// parseTurn parses every complete request c has buffered into the turn's batch
// (its keyspace requests) and c's reply slots (the rest are answered here:
// NOAUTH, NOPERM, syntax errors). It stops at the first command the loop does
// not serve, leaving it unread for the connection's goroutine (lt.handoff).
// Each request it serves goes through the pipeline (step), as in conn.serve.
func (c *conn) parseTurn(batch []command.Request, slots []loopSlot) ([]command.Request, []loopSlot) {
	t := &c.lt
	for {
		mark := c.rd.start
		args, err := c.rd.next(false)
		if err != nil {
			t.perr = err
			return batch, slots
		}
		if args == nil {
			return batch, slots
		}
		q := request{args: args}
		q.parse()
		if q.spec == nil || q.perr == nil && (command.Request{Op: q.op}).Blocks() {
			c.rd.start = mark // unread: the goroutine parses it again
			t.handoff = true
			return batch, slots
		}
		// A connection in the loop is in no state the loop does not serve
		// (loopReady): the pipeline answers the request or batches it.
		var f fate
		if batch, f = c.step(&q, &t.answers, batch); f != fateBatched {
			if c.quit {
				return batch, slots
			}
			continue
		}
		slots = append(slots, loopSlot{c, len(t.replies) - 1})
		if t.units >= c.batchUnits() && c.rd.start != c.rd.end {
			// More is buffered than one batch's replies should copy: the
			// connection's goroutine answers it batch by batch (output.go).
			t.handoff = true
			return batch, slots
		}
	}
}

// ending reports whether c ends once its replies of this turn are out: after a
// protocol error, a deleted user (quit), or the end of its input with nothing
// left unread.
func (c *conn) ending() bool {
	t := &c.lt
	return t.perr != nil || c.quit || t.overflow || t.rerr != nil && !t.handoff
}

// renderTurn renders c's replies of this turn, with what serve adds at the end
// of a batch whose reading failed. Replies that would pass the output buffer
// limit are not rendered: nil, and the connection ends (lt.overflow).
func (c *conn) renderTurn() []byte {
	t := &c.lt
	t.replies, t.protos = c.readFailed(t.perr, t.replies, t.protos)
	out, ok := renderLimited(t.out[:0], t.replies, t.protos, c.srv.maxOutput())
	t.out = out
	if !ok {
		t.overflow = true
		c.overLimit()
		return nil
	}
	c.learn(t.units, int64(len(out)))
	return out
}

// reset clears c's scratch for a new turn, keeping its memory.
func (t *loopTurn) reset() {
	clear(t.replies) // drop references to the previous replies
	t.replies, t.protos = t.replies[:0], t.protos[:0]
	t.rerr, t.perr, t.handoff = nil, nil, false
	t.units, t.overflow = 0, false
	if cap(t.out) > 64<<10 {
		t.out = nil
	}
}

// handBackAfter is how many batches in a row a connection's goroutine answers
// that the loop could have before it offers the connection back. A client that
// keeps coming back to what the loop does not serve — a blocking acquire every
// other command, as a lock waiter sends — so stays with its goroutine rather
// than paying two moves per wait, each a turn late (moving every time halved
// the hot-name hand-overs of make bench-ab).
const handBackAfter = 16

// handBack counts the batch just answered (plain: the loop could have served
// it) and reports whether the connection has earned its way back to the loop.
func (c *conn) handBack(plain bool) bool {
	if !plain {
		c.plainBatches = 0
		return false
	}
	c.plainBatches++
	return c.plainBatches >= handBackAfter
}

// loopReady reports whether c, served by its goroutine, may go back to the
// loop: read to the end, in no state the loop does not track, and no output
// queued. (Its socket is plain TCP: a server with the loop serves no TLS.)
func (c *conn) loopReady() bool {
	if c.quit || c.tx != nil || c.clusterAware || c.trk.on || c.rd.buffered() {
		return false
	}
	if c.subCount() > 0 || c.srv.monitors.has(c) {
		return false
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return !c.writing && !c.broken && len(c.pending) == 0
}
