// Package command is the vocabulary of the replicated log: the Entry that one log
// record carries, its binary codec, the command table (one row per command: name,
// arity, flags, key positions, ACL categories, route, handler; table.go) and the
// parsing of a command's arguments into a typed Op.
//
// Everything here is pure and deterministic: the front door parses to reject bad
// input before anything is proposed, and the FSM parses the same arguments again
// when it applies the entry, reaching the same Op on every replica.
package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Kind says what a log entry asks the FSM to do.
type Kind uint8

// Entry kinds. Values are part of the on-disk format: never renumber.
const (
	// KindCommand carries one client command (its argument vector).
	KindCommand Kind = 1
	// KindTick carries no command: it advances log time so that every key whose
	// deadline has passed is removed. The leader proposes it at the earliest deadline.
	KindTick Kind = 2
	// KindNoop only advances log time (the leader's first entry of a term).
	KindNoop Kind = 3
)

// Entry is the payload of one Raft log record.
type Entry struct {
	Kind Kind
	// Time is log time in milliseconds, stamped by the leader from its monotonic
	// clock and continuous across terms. The FSM uses max(previous, Time) as now.
	Time int64
	// Wall is the leader's wall clock (Unix ms) when it stamped the entry. It is used
	// only to turn absolute times given by clients (EXAT, PXAT, EXPIREAT) into
	// durations; it is never compared with log time.
	Wall int64
	// Args is the client command's argument vector (KindCommand only).
	Args [][]byte
}

// ErrCorrupt is returned by Decode for bytes that are not an entry this version
// understands. A replica that meets it must stop rather than skip the entry.
var ErrCorrupt = errors.New("command: undecodable log entry")

const codecVersion = 1

// Size bounds the length of Encode's output for an entry with these
// arguments (whatever its kind and times), by at most 30 bytes too many.
func Size(args [][]byte) int {
	n := 2 + 3*binary.MaxVarintLen64
	for _, a := range args {
		n += uvarintLen(uint64(len(a))) + len(a)
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// Encode returns the binary form of e.
func (e Entry) Encode() []byte {
	b := make([]byte, 0, Size(e.Args))
	b = append(b, codecVersion, byte(e.Kind))
	b = binary.AppendVarint(b, e.Time)
	b = binary.AppendVarint(b, e.Wall)
	b = binary.AppendUvarint(b, uint64(len(e.Args)))
	for _, a := range e.Args {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	return b
}

// Decode parses the output of Encode. The returned Args alias b.
func Decode(b []byte) (Entry, error) {
	var e Entry
	if len(b) < 2 || b[0] != codecVersion {
		return e, ErrCorrupt
	}
	e.Kind = Kind(b[1])
	if e.Kind < KindCommand || e.Kind > maxKind {
		return e, fmt.Errorf("%w: kind %d", ErrCorrupt, b[1])
	}
	p := b[2:]
	var n int
	if e.Time, n = binary.Varint(p); n <= 0 {
		return e, ErrCorrupt
	}
	p = p[n:]
	if e.Wall, n = binary.Varint(p); n <= 0 {
		return e, ErrCorrupt
	}
	p = p[n:]
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p)) {
		return e, ErrCorrupt
	}
	p = p[n:]
	if count > 0 {
		e.Args = make([][]byte, count)
	}
	for i := range e.Args {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return e, ErrCorrupt
		}
		e.Args[i] = p[n : n+int(l) : n+int(l)]
		p = p[n+int(l):]
	}
	if len(p) != 0 {
		return e, ErrCorrupt
	}
	return e, nil
}
