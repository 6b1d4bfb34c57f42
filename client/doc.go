// Package client is a Go client for lockd's locks on go-redis/v9: fencing
// tokens, sessions with keepalives, server-side FIFO waits, and a local
// deadline that stops the holder before the server can give the lock away.
//
// No lock service alone guarantees mutual exclusion: a holder that pauses (a
// GC pause, a stopped VM, a slow network) can keep working after its lease
// ended and someone else was granted the lock. Two things close that gap, and
// this package makes both easy:
//
//   - The holder stops at a local deadline, measured on its monotonic clock
//     from when it *sent* the request that set the lease (acquire or extend),
//     plus the TTL, less a safety margin (DefaultSafetyMargin, 3 s of 15 s).
//     Lock.Context is cancelled then. A slow reply only makes the holder more
//     cautious, never less.
//   - The resource rejects stale holders: every grant carries a fencing token
//     larger than every earlier one (Lock.Token), and the resource refuses a
//     write whose token is smaller than one it has seen (FencedExec for SQL,
//     Locker.Validate for resources that can call back).
//
// Unknown outcomes are resolved, not guessed: when a request may or may not
// have been applied (-UNKNOWNOUTCOME, a lost connection, a timeout), the
// client asks the server whether this owner holds the lock before it retries.
//
// A Locker built with PlainRedis runs the same API on plain Redis (SET NX PX,
// compare-and-delete) for efficiency locks, without tokens or sessions.
package client
