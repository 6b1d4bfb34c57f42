package logstore

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/logcodec"
)

// Key layout. Every key starts with a one-byte prefix that selects the
// keyspace. Log keys are the prefix followed by the big-endian uint64 index,
// so badger's byte-wise key order is index order. Stable-store keys are the
// prefix followed by the caller's key bytes. Neither prefix collides with
// badger's internal "!badger!" keys.
const (
	prefixLog    byte = 'l'
	prefixStable byte = 's'

	logKeyLen = 1 + 8
)

// keyPrefix scopes a Store's keys in its badger DB: empty for a Store that
// owns its DB (Open), and 'g' followed by the group number for one of the
// groups that share a node's DB (Shared.Group). Every key the Store reads or
// writes starts with it.
type keyPrefix []byte

// groupPrefix is group g's key prefix in a shared DB.
func groupPrefix(g int) keyPrefix { return keyPrefix{'g', byte(g)} }

// logLen is the length of a log key under p.
func (p keyPrefix) logLen() int { return len(p) + logKeyLen }

// putLog writes the key of the log entry with the given index into
// dst[:p.logLen()] and returns that slice.
func (p keyPrefix) putLog(dst []byte, index uint64) []byte {
	dst = dst[:p.logLen()]
	n := copy(dst, p)
	dst[n] = prefixLog
	binary.BigEndian.PutUint64(dst[n+1:], index)
	return dst
}

func (p keyPrefix) log(index uint64) []byte { return p.putLog(make([]byte, p.logLen()), index) }

// parseLog returns the index encoded in a log key under p.
func (p keyPrefix) parseLog(key []byte) (uint64, bool) {
	if len(key) != p.logLen() || string(key[:len(p)]) != string(p) || key[len(p)] != prefixLog {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[len(p)+1:]), true
}

// logs is the prefix of every log key under p.
func (p keyPrefix) logs() []byte { return append(append([]byte(nil), p...), prefixLog) }

func (p keyPrefix) stable(key []byte) []byte {
	k := make([]byte, 0, len(p)+1+len(key))
	return append(append(append(k, p...), prefixStable), key...)
}

// The layout of a Store that owns its DB.
func putLogKey(dst []byte, index uint64) []byte { return keyPrefix(nil).putLog(dst, index) }
func logKey(index uint64) []byte                { return keyPrefix(nil).log(index) }
func parseLogKey(key []byte) (uint64, bool)     { return keyPrefix(nil).parseLog(key) }
func stableKey(key []byte) []byte               { return keyPrefix(nil).stable(key) }

// A log entry's value is its logcodec encoding (logcodec documents the
// format, which is part of the on-disk format).

// decodeLog decodes a stored value into l, overwriting every field. Data and
// Extensions alias buf, so buf must not be reused by the caller. Bytes that
// do not decode, or that follow the entry, are ErrCorrupt.
func decodeLog(buf []byte, l *raft.Log) error {
	rest, err := logcodec.Decode(buf, l)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after log entry", ErrCorrupt, len(rest))
	}
	return nil
}
