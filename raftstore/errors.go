package raftstore

import (
	"errors"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// The outcomes of a write that did not simply succeed. Their texts are RESP error
// lines (prefix first) so that the front door can reply with them unchanged.
//
// A write has three outcomes: done (the reply), rejected (ErrNotApplied: nothing
// was appended, retrying is safe; the TRYAGAIN prefix makes go-redis and other
// clients retry by themselves) and unknown (ErrUnknownOutcome: the entry may or may
// not commit; the prefix is one that no client retries blindly).
var (
	// ErrNotApplied: the write was not appended to the log (no leader, no quorum
	// yet, leader still catching up). Safe to retry.
	ErrNotApplied = errors.New("TRYAGAIN write not applied: no leader with a quorum is ready; safe to retry")
	// ErrUnknownOutcome: the write was appended but leadership was lost or the
	// node shut down before it was known to commit. Read the state before retrying.
	ErrUnknownOutcome = errors.New("UNKNOWNOUTCOME the write may or may not have been applied (leadership lost before commit); read before retrying")
	// ErrNotReadable: a strict read could not confirm leadership with a quorum.
	ErrNotReadable = errors.New("TRYAGAIN read not served: leadership could not be confirmed with a quorum; safe to retry")
	// ErrTooLarge: the write's log entry would be longer than
	// Config.MaxWriteBytes allows, or than the log accepts; nothing was
	// appended. Wrapped with the entry's size and the limit. A script's
	// dry run refuses a write command it sends with the same text.
	ErrTooLarge = errors.New(fsm.ErrTooLargeText)
	// ErrClosed: the store is shut down.
	ErrClosed = errors.New("TRYAGAIN server is shutting down")
)

// outcomeOf is the outcome of a request that ended in err: the errors above
// (by identity, wrapped or not) name theirs; any other error is a reply of
// the command's own (outcome.Done).
func outcomeOf(err error) outcome.Outcome {
	switch {
	case errors.Is(err, ErrNotApplied):
		return outcome.NotApplied
	case errors.Is(err, ErrNotReadable):
		return outcome.ReadNotServed
	case errors.Is(err, ErrUnknownOutcome):
		return outcome.Unknown
	case errors.Is(err, ErrClosed):
		return outcome.ShuttingDown
	case errors.Is(err, ErrTooLarge):
		return outcome.TooLarge
	}
	return outcome.Done
}

// errorReply is the error reply for err: a command.Replier's own reply, else
// err's text with its outcome (outcomeOf).
func errorReply(err error) resp.Value {
	if r, ok := err.(command.Replier); ok {
		return r.Reply()
	}
	return resp.Failed(outcomeOf(err), err.Error())
}
