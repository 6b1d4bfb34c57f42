package client

import (
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The errors of this package. Every error it returns matches one of them with
// errors.Is (wrapped with detail), except the caller's own context errors,
// invalid arguments (a lease under 1 ms), and definitive server errors (a
// syntax error, WRONGTYPE, a namespace limit), which are wrapped as the server
// sent them.
var (
	// ErrNotObtained: the lock was not granted (held by others, or the wait
	// ended first). Nothing is held.
	ErrNotObtained = errors.New("client: lock not obtained")
	// ErrLockLost: the lock is no longer held, or its local deadline passed
	// (the holder must stop: the server may already have granted it to
	// someone else). A lost lock stays lost; acquire it again for a new token.
	ErrLockLost = errors.New("client: lock lost")
	// ErrSessionExpired: the session ended: the server answered NOSESSION, or
	// no keepalive was acknowledged before the session's local deadline
	// ("disconnected is not expired, but act as if it were"). Its locks are
	// lost. Open a new session for new locks and new tokens.
	ErrSessionExpired = errors.New("client: session expired")
	// ErrQueueFull: the name's FIFO wait queue is at its cap (-QUEUEFULL).
	ErrQueueFull = errors.New("client: wait queue full")
	// ErrUnknownOutcome: a request may or may not have been applied, and the
	// client could not find out (the server did not answer the follow-up
	// read). An acquire in that state may hold the lock until its lease ends.
	ErrUnknownOutcome = errors.New("client: outcome unknown")
	// ErrUnavailable: the server kept answering TRYAGAIN (no leader, no
	// quorum) or RATELIMITED (a namespace's rate): nothing was applied.
	ErrUnavailable = errors.New("client: lock service unavailable")
	// ErrNoToken: a fencing token was asked of a server that has none: the
	// Locker runs in plain-Redis mode, or the server does not know lockd's
	// LOCK commands (plain Redis: use PlainRedis() for efficiency locks).
	ErrNoToken = errors.New("client: no fencing token")
	// ErrNotSupported: the option needs lockd (sessions, shared locks,
	// semaphores) and the Locker runs in plain-Redis mode.
	ErrNotSupported = errors.New("client: not supported in plain-Redis mode")
	// ErrStaleToken: a fenced write touched no row: a holder with a newer
	// token has written since. Roll back and stop.
	ErrStaleToken = errors.New("client: stale fencing token: a newer holder has written")
)

// outcome classifies a reply for retry decisions.
type outcome int

const (
	outOK      outcome = iota // a reply (possibly nil)
	outRetry                  // TRYAGAIN, RATELIMITED: not applied, safe to retry
	outUnknown                // may have been applied: find out before retrying
	outFinal                  // a definitive server error
)

// classify tells what err says about whether a write was applied.
func classify(err error) outcome {
	if err == nil || err == redis.Nil {
		return outOK
	}
	if errors.Is(err, redis.ErrClosed) {
		return outFinal
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case strings.HasPrefix(msg, "TRYAGAIN"), strings.HasPrefix(msg, "RATELIMITED"):
			return outRetry
		case strings.HasPrefix(msg, "UNKNOWNOUTCOME"):
			return outUnknown
		}
		return outFinal
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return outRetry // never sent
	}
	// Network errors, timeouts and context errors: the request may have been
	// written and applied.
	return outUnknown
}

// serverErr reports whether err is a server error reply beginning with prefix.
func serverErr(err error, prefix string) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), prefix)
}

// unknownCommand reports whether the server does not know the command.
func unknownCommand(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "ERR unknown command")
}
