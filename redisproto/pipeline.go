package redisproto

import (
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// The per-request pipeline: the steps every request read from a client goes
// through, in this order, whichever path serves the connection (conn.serve on
// its goroutine, conn.parseTurn in the event loop's turn): admit (count, MONITOR,
// AUTH and ACL gate), the subscribed RESP2 connection's refusal, MULTI's queue,
// command lookup, cluster redirect, parse, and batching for the store. A check
// every request must pass is added here, once. The callers keep what differs:
// how they read, when a batch ends, local commands (the goroutine's alone; the
// loop leaves them unread for it).

// request is one request read from a client on its way through the pipeline.
type request struct {
	args [][]byte
	// parsed is set when the caller looked the command up and parsed it
	// before the pipeline (the loop, to choose what it serves): spec (nil: a
	// local command), op and perr are then that result; otherwise the
	// pipeline looks up and parses at its own steps.
	parsed bool
	spec   *command.Spec
	op     command.Op
	perr   error
	// looked: spec holds command.Lookup's answer for args[0] (lookup).
	looked bool
}

// parse looks q's command up and parses it; pure, it sets q.parsed.
func (q *request) parse() {
	q.parsed = true
	if spec := q.lookup(); spec != nil {
		q.op, q.perr = spec.Parse(q.args)
	}
}

// lookup returns the row of q's keyspace command (nil: a local or unknown
// command), looking it up once for every step that needs it.
func (q *request) lookup() *command.Spec {
	if !q.looked {
		q.looked = true
		q.spec, _ = command.Lookup(q.args[0])
	}
	return q.spec
}

// answers are one batch's replies of a connection, in request order: each in
// the protocol it is written in (HELLO may switch mid-pipeline), and the
// values they may copy (replyUnits), for cutting batches (output.go).
type answers struct {
	replies []resp.Value
	protos  []int
	units   int
}

// add appends the reply v, written in protocol proto.
func (a *answers) add(v resp.Value, proto int) {
	a.replies, a.protos = append(a.replies, v), append(a.protos, proto)
}

// fate is what the pipeline made of a request.
type fate uint8

const (
	// fateAnswered: refused (NOAUTH, NOPERM, a deleted user: c.quit), redirected
	// (-MOVED) or a syntax error; its reply is appended.
	fateAnswered fate = iota
	// fateInState: answered by the connection's state, which the event
	// loop does not serve (a subscribed RESP2 connection's refusal, MULTI's
	// QUEUED or its error); its reply is appended.
	fateInState
	// fateBatched: a keyspace request, appended to the batch; its reply slot is
	// appended empty, the last of a.replies, for the store's reply.
	fateBatched
	// fateLocal: a local command (or an unknown one), not run and nothing
	// appended; the caller runs it.
	fateLocal
)

// step runs the per-request pipeline on q, appending its reply (or reply
// slot) to a and, if it is for the store, the request to batch.
func (c *conn) step(q *request, a *answers, batch []command.Request) ([]command.Request, fate) {
	args := q.args
	if v, denied := c.admit(q); denied {
		a.add(v, c.protocol())
		return batch, fateAnswered
	}
	proto := c.protocol()
	if proto == 2 && c.subCount() > 0 && !allowedSubscribed(args[0]) && known(args[0]) {
		a.add(resp.Error("ERR Can't execute '"+strings.ToLower(string(args[0]))+
			"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"), 2)
		return batch, fateInState
	}
	if c.tx != nil && !txControl(args[0]) {
		v := c.enqueue(args)
		a.add(v, c.protocol())
		return batch, fateInState
	}
	spec := q.lookup()
	if spec == nil {
		return batch, fateLocal
	}
	c.touch(spec.Name)
	if c.clusterAware { // -MOVED (moved.go); plain connections pay nothing
		if v, ok := c.moved(spec, args); ok {
			a.add(v, proto)
			c.observe(spec.Name, args, v, 0)
			return batch, fateAnswered
		}
	}
	op, perr := q.op, q.perr
	if !q.parsed {
		op, perr = spec.Parse(args)
	}
	if perr != nil {
		v := resp.Error(perr.Error())
		a.add(v, proto)
		c.observe(spec.Name, args, v, 0)
		return batch, fateAnswered
	}
	c.trackRequest(spec, args) // before the store sees it (tracking.go)
	batch = append(batch, command.Request{Args: args, Op: op, Spec: spec, User: c.userName()})
	a.add(resp.Value{}, proto)
	a.units += replyUnits(op)
	return batch, fateBatched
}

// admit counts a request read from c, shows it to MONITOR and checks it
// (auth.go): denied, with the reply (NOAUTH, NOPERM) to send instead. It is
// the pipeline's first step (step), so that both paths count, show and refuse
// alike.
func (c *conn) admit(q *request) (resp.Value, bool) {
	c.srv.stats.commands.Add(1)
	c.srv.monitors.feed(c, q.args)
	return c.authorize(q)
}
