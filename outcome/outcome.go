// Package outcome names what became of one request inside lockd, beside its
// reply: the store, the node, the state machine and the forwarding codec set
// it, and every decision they take on a reply (send it again, follow a moved
// slot, wait for a queued acquire, close a session that is gone) reads it,
// never the reply's text. Only the doors (RESP, HTTP) turn a reply into text
// or a status, and the reply's text is what a Redis client sees, unchanged.
//
// It sits below resp (resp.Value carries an Outcome), so it imports nothing
// of lockd's.
package outcome

import "strconv"

// Outcome is what became of a request. The zero value, Done, is the common
// case: the command ran and its reply, an error reply included (WRONGTYPE,
// a syntax error), is its result.
type Outcome uint8

const (
	// Done: the command ran; the reply is its result.
	Done Outcome = iota
	// NotApplied: nothing was appended to the log (no leader with a quorum
	// ready: an election, a leadership transfer); sending it again is safe.
	// Text: TRYAGAIN write not applied ….
	NotApplied
	// ReadNotServed: a read could not confirm leadership with a quorum, or
	// its forwarded answer was lost; nothing was changed. Text: TRYAGAIN
	// read not served ….
	ReadNotServed
	// Unknown: the write was appended (or sent to a leader) but whether it
	// committed is not known. Never sent again. Text: UNKNOWNOUTCOME ….
	Unknown
	// ShuttingDown: this node is closing; what was in flight may or may not
	// have been applied. Text: TRYAGAIN server is shutting down.
	ShuttingDown
	// Moved: the key's slot belongs to another group now; nothing was done,
	// and the request goes again by the current slot map. Text: MOVED <slot>.
	Moved
	// Moving: the key's slot is being handed to another group; nothing was
	// done. Text: TRYAGAIN slot <slot> is moving ….
	Moving
	// Queued: a LOCK.ACQUIRE … WAIT joined its name's queue; the reply's Int
	// is the waiter's id. It never reaches a client: the node that proposed it
	// waits for the grant. Text (internal): QUEUED <id>.
	Queued
	// NoSession: the session named does not exist (expired or closed).
	// Text: NOSESSION ….
	NoSession
	// RateLimited: the namespace's RATE refused the operation; nothing was
	// done. The reply's Int is the milliseconds until one is free. Text:
	// RATELIMITED ….
	RateLimited
	// QueueFull: the name's wait queue is at its namespace's limit; nothing
	// was done. Text: QUEUEFULL ….
	QueueFull
	// TooLarge: the write's log entry would exceed the log's limit; nothing
	// was appended. Text: ERR write too large for the log ….
	TooLarge
	// WrongType: the command ran against a key holding another type and did
	// nothing. Text: WRONGTYPE ….
	WrongType
	// Denied: the user may not run the command or touch the key; nothing was
	// done. Text: NOPERM ….
	Denied

	count // the number of outcomes; keep last
)

var names = [count]string{"done", "not applied", "read not served", "unknown", "shutting down", "moved", "moving",
	"queued", "no session", "rate limited", "queue full", "too large", "wrong type", "denied"}

// String names the outcome (for logs and test messages).
func (o Outcome) String() string {
	if o < count {
		return names[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Valid reports whether o is one of the outcomes above (a decoder's check).
func (o Outcome) Valid() bool { return o < count }

// Refused reports an outcome that says nothing was done and the same request
// may simply be sent again once a leader serves (NotApplied, ReadNotServed).
func (o Outcome) Refused() bool { return o == NotApplied || o == ReadNotServed }

// SlotRefused reports an outcome that says nothing was done because the
// key's slot is elsewhere or on its way (Moved, Moving): the request goes
// again by the current slot map.
func (o Outcome) SlotRefused() bool { return o == Moved || o == Moving }

// Retryable reports the outcomes whose text is TRYAGAIN, which Redis clients
// retry by themselves: Refused ones, Moving, and ShuttingDown (which may have
// been applied: only idempotent requests may take it as a retry).
func (o Outcome) Retryable() bool { return o.Refused() || o == Moving || o == ShuttingDown }
