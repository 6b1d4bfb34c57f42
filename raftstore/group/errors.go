package group

import (
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/fsm"
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
	ErrNotApplied error = &command.Failure{Outcome: outcome.NotApplied,
		Text: "TRYAGAIN write not applied: no leader with a quorum is ready; safe to retry"}
	// ErrUnknownOutcome: the write was appended but leadership was lost or the
	// node shut down before it was known to commit. Read the state before retrying.
	ErrUnknownOutcome error = &command.Failure{Outcome: outcome.Unknown,
		Text: "UNKNOWNOUTCOME the write may or may not have been applied (leadership lost before commit); read before retrying"}
	// ErrNotReadable: a strict read could not confirm leadership with a quorum.
	ErrNotReadable error = &command.Failure{Outcome: outcome.ReadNotServed,
		Text: "TRYAGAIN read not served: leadership could not be confirmed with a quorum; safe to retry"}
	// ErrTooLarge: the write's log entry would be longer than
	// Config.MaxWriteBytes allows, or than the log accepts; nothing was
	// appended. Wrapped with the entry's size and the limit. A script's
	// dry run refuses a write command it sends with the same text.
	ErrTooLarge error = &command.Failure{Outcome: outcome.TooLarge, Text: fsm.ErrTooLargeText}
	// ErrClosed: the store is shut down.
	ErrClosed error = &command.Failure{Outcome: outcome.ShuttingDown, Text: "TRYAGAIN server is shutting down"}
)
