package command

import (
	"strconv"
	"strings"
)

// LockMode is the mode of a lock record.
type LockMode uint8

// Lock modes. Part of the snapshot format: never renumber.
const (
	LockExclusive LockMode = 1
	LockShared    LockMode = 2 // readers
	LockSemaphore LockMode = 3 // LIMIT n holders
)

// DefaultLockTTL is the lease of a LOCK.ACQUIRE without PX (the seed's 15 s).
const DefaultLockTTL = 15000

// LockAcquire is LOCK.ACQUIRE name owner [PX ms | SESSION id] [WAIT ms]
// [SHARED | LIMIT n] [REENTRANT].
type LockAcquire struct {
	Name, Owner []byte
	TTL         int64  // ms (no SESSION)
	TTLSet      bool   // PX was given (else the namespace's default TTL applies)
	Session     uint64 // 0: a lease of TTL; else held as long as the session lives
	Wait        int64  // ms to wait in the name's FIFO queue; 0 = try once
	Mode        LockMode
	Limit       int64 // holders allowed: 1 exclusive, n semaphore, unbounded shared
	Reentrant   bool
}

// Blocks reports whether the request may block its connection: its row has
// FlagBlocking and its Op waits (a LOCK.ACQUIRE with WAIT, a blocking pop:
// BLPOP … BZPOPMAX, list.go). A request built from an Op alone (no Spec) is
// judged by its Op.
func (r Request) Blocks() bool {
	if r.Spec != nil && !r.Spec.Flags.Has(FlagBlocking) {
		return false
	}
	switch op := r.Op.(type) {
	case LockAcquire:
		return op.Wait > 0
	case BlockingPop:
		return true
	}
	return false
}

// MaxLockWait bounds WAIT (one hour): a waiter is a replicated record, and a
// client that wants to wait longer re-queues.
const MaxLockWait = 3600_000

// LockCancel is LOCK.CANCEL name waiter-id [RELEASE]: it withdraws a queued
// acquire. A waiter that was granted already answers its token (and, with
// RELEASE, gives the grant back). The node that holds a blocked client sends it
// when the client's wait times out (without RELEASE) or the client disconnects
// (with RELEASE).
type LockCancel struct {
	Name    []byte
	Waiter  uint64
	Release bool
}

// LockRelease is LOCK.RELEASE name token.
type LockRelease struct {
	Name  []byte
	Token int64
}

// LockExtend is LOCK.EXTEND name token ms.
type LockExtend struct {
	Name  []byte
	Token int64
	TTL   int64
}

// LockValidate is LOCK.VALIDATE name token.
type LockValidate struct {
	Name  []byte
	Token int64
}

// LockInfo is LOCK.INFO name.
type LockInfo struct{ Name []byte }

func (LockAcquire) isOp()  {}
func (LockRelease) isOp()  {}
func (LockExtend) isOp()   {}
func (LockValidate) isOp() {}
func (LockInfo) isOp()     {}
func (LockCancel) isOp()   {}

var lockRows = []*Spec{
	fsmRow("lock.acquire", FlagWrite|FlagBlocking|FlagSession, RouteKeys, parseLockAcquire),
	fsmRow("lock.release", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		t, err := parseToken(a[2])
		return LockRelease{Name: a[1], Token: t}, err
	}),
	fsmRow("lock.extend", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		t, err := parseToken(a[2])
		if err != nil {
			return nil, err
		}
		ms, ok := ParseInt(a[3])
		if !ok {
			return nil, ErrNotInt
		}
		if ms <= 0 {
			return nil, Error("ERR invalid lease time in 'lock.extend' command")
		}
		return LockExtend{Name: a[1], Token: t, TTL: ms}, nil
	}),
	fsmRow("lock.validate", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		t, err := parseToken(a[2])
		return LockValidate{Name: a[1], Token: t}, err
	}),
	fsmRow("lock.info", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return LockInfo{Name: a[1]}, nil }),
	fsmRow("lock.cancel", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		id, err := strconv.ParseUint(string(a[2]), 10, 64)
		if err != nil || id == 0 {
			return nil, Error("ERR invalid waiter id")
		}
		op := LockCancel{Name: a[1], Waiter: id}
		switch {
		case len(a) == 4 && strings.EqualFold(string(a[3]), "release"):
			op.Release = true
		case len(a) > 3:
			return nil, ErrSyntax
		}
		return op, nil
	}),
}

func parseToken(b []byte) (int64, error) {
	t, ok := ParseInt(b)
	if !ok || t <= 0 {
		return 0, Error("ERR invalid fencing token")
	}
	return t, nil
}

// LOCK.ACQUIRE name owner [PX ms | SESSION id] [WAIT ms] [SHARED | LIMIT n] [REENTRANT]
func parseLockAcquire(_ string, a [][]byte) (Op, error) {
	op := LockAcquire{Name: a[1], Owner: a[2], TTL: DefaultLockTTL, Mode: LockExclusive, Limit: 1}
	if len(op.Owner) == 0 {
		return nil, Error("ERR the owner must not be empty")
	}
	seenTTL, seenMode, seenWait := false, false, false
	for i := 3; i < len(a); i++ {
		opt := strings.ToLower(string(a[i]))
		switch {
		case opt == "px" && i+1 < len(a) && !seenTTL:
			ms, ok := ParseInt(a[i+1])
			if !ok {
				return nil, ErrNotInt
			}
			if ms <= 0 {
				return nil, Error("ERR invalid lease time in 'lock.acquire' command")
			}
			op.TTL, op.TTLSet, seenTTL = ms, true, true
			i++
		case opt == "shared" && !seenMode:
			op.Mode, op.Limit, seenMode = LockShared, 0, true
		case opt == "limit" && i+1 < len(a) && !seenMode:
			n, ok := ParseInt(a[i+1])
			if !ok {
				return nil, ErrNotInt
			}
			if n < 1 {
				return nil, Error("ERR LIMIT must be at least 1")
			}
			op.Mode, op.Limit, seenMode = LockSemaphore, n, true
			i++
		case opt == "reentrant":
			op.Reentrant = true
		case opt == "session" && i+1 < len(a) && !seenTTL:
			id, err := parseSessionID(a[i+1])
			if err != nil {
				return nil, err
			}
			op.Session, seenTTL = id, true
			i++
		case opt == "wait" && i+1 < len(a) && !seenWait:
			ms, ok := ParseInt(a[i+1])
			if !ok {
				return nil, ErrNotInt
			}
			if ms < 0 || ms > MaxLockWait {
				return nil, Error("ERR WAIT must be between 0 and 3600000 ms")
			}
			op.Wait, seenWait = ms, true
			i++
		default:
			return nil, ErrSyntax
		}
	}
	return op, nil
}
