package logstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
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

// Log value encoding, version 1:
//
//	byte     version (= 1)
//	uvarint  Index
//	uvarint  Term
//	byte     Type
//	byte     flags (bit 0: AppendedAt is set)
//	varint   AppendedAt as Unix nanoseconds (present only if flag bit 0)
//	uvarint  len(Data), then Data
//	uvarint  len(Extensions), then Extensions
//
// Empty and nil Data/Extensions both decode as nil. A zero AppendedAt decodes
// as the zero time.Time; a non-zero one decodes as time.Unix(0, n) (location
// and monotonic clock reading are not preserved).
const (
	encodingV1 byte = 1

	flagAppendedAt byte = 1 << 0
)

// encodedLogSize returns an upper bound of the encoded size of l.
func encodedLogSize(l *raft.Log) int {
	return 1 + // version
		binary.MaxVarintLen64 + // index
		binary.MaxVarintLen64 + // term
		1 + // type
		1 + // flags
		binary.MaxVarintLen64 + // appended at
		binary.MaxVarintLen64 + len(l.Data) +
		binary.MaxVarintLen64 + len(l.Extensions)
}

// appendLog appends the encoding of l to dst and returns the extended slice.
func appendLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, encodingV1)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	if l.AppendedAt.IsZero() {
		dst = append(dst, 0)
	} else {
		dst = append(dst, flagAppendedAt)
		dst = binary.AppendVarint(dst, l.AppendedAt.UnixNano())
	}
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	return dst
}

// decodeLog decodes buf into l, overwriting every field. Data and Extensions
// alias buf (with their capacity clipped so that appending to one cannot
// clobber the other), so buf must not be reused by the caller.
func decodeLog(buf []byte, l *raft.Log) error {
	d := decoder{buf: buf}
	version := d.byte()
	if d.err == nil && version != encodingV1 {
		return fmt.Errorf("%w: unknown log encoding version %d", ErrCorrupt, version)
	}
	index := d.uvarint()
	term := d.uvarint()
	typ := d.byte()
	flags := d.byte()
	var appendedAt time.Time
	if flags&flagAppendedAt != 0 {
		appendedAt = time.Unix(0, d.varint())
	}
	data := d.bytes()
	ext := d.bytes()
	if d.err != nil {
		return d.err
	}
	if flags&^flagAppendedAt != 0 {
		return fmt.Errorf("%w: unknown log flags %#x", ErrCorrupt, flags)
	}
	if len(d.buf) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after log entry", ErrCorrupt, len(d.buf))
	}
	*l = raft.Log{
		Index:      index,
		Term:       term,
		Type:       raft.LogType(typ),
		Data:       data,
		Extensions: ext,
		AppendedAt: appendedAt,
	}
	return nil
}

// decoder reads the fields of an encoded log; the first error sticks.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or malformed %s", ErrCorrupt, what)
	}
	d.buf = nil
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.buf) < 1 {
		d.fail("byte")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)) {
		d.fail("byte string")
		return nil
	}
	if n == 0 {
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}
