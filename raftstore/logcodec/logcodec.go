// Package logcodec is the binary form of one hashicorp/raft Log, shared by
// the log store (each entry's value on disk, so this is part of the on-disk
// format) and appendpipe (each entry of a pipelined AppendEntries on the
// wire). It is pure: no I/O, nothing shared between calls.
//
// Version 1:
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
package logcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// ErrMalformed is returned by Decode for bytes that are not an encoded log
// of a version this package knows.
var ErrMalformed = errors.New("logcodec: malformed log encoding")

const (
	version1       byte = 1
	flagAppendedAt byte = 1 << 0
)

// Size returns an upper bound of the encoded size of l.
func Size(l *raft.Log) int {
	return 1 + // version
		binary.MaxVarintLen64 + // index
		binary.MaxVarintLen64 + // term
		1 + // type
		1 + // flags
		binary.MaxVarintLen64 + // appended at
		binary.MaxVarintLen64 + len(l.Data) +
		binary.MaxVarintLen64 + len(l.Extensions)
}

// Append appends the encoding of l to dst and returns the extended slice.
func Append(dst []byte, l *raft.Log) []byte {
	dst = append(AppendHead(dst, l), l.Data...)
	return AppendTail(dst, l)
}

// AppendHead appends the encoding of l up to its Data (Data's length
// included) and AppendTail what follows Data: Append(dst, l) is
// AppendTail(append(AppendHead(dst, l), l.Data...), l). A caller that
// writes the pieces where they go (the log store's journal, with one
// vectored write) need not copy a large Data.
func AppendHead(dst []byte, l *raft.Log) []byte {
	dst = append(dst, version1)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	if l.AppendedAt.IsZero() {
		dst = append(dst, 0)
	} else {
		dst = append(dst, flagAppendedAt)
		dst = binary.AppendVarint(dst, l.AppendedAt.UnixNano())
	}
	return binary.AppendUvarint(dst, uint64(len(l.Data)))
}

// AppendTail appends the encoding of what follows l's Data (AppendHead).
func AppendTail(dst []byte, l *raft.Log) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	return append(dst, l.Extensions...)
}

// Decode decodes the log at the front of buf into l, overwriting every
// field, and returns what follows it. Data and Extensions alias buf (with
// their capacity clipped so that appending to one cannot clobber the
// other), so buf must not be reused by the caller. On an error l is
// unchanged.
func Decode(buf []byte, l *raft.Log) (rest []byte, err error) {
	d := decoder{buf: buf}
	version := d.byte()
	if d.err == nil && version != version1 {
		return nil, fmt.Errorf("%w: unknown log encoding version %d", ErrMalformed, version)
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
		return nil, d.err
	}
	if flags&^flagAppendedAt != 0 {
		return nil, fmt.Errorf("%w: unknown log flags %#x", ErrMalformed, flags)
	}
	*l = raft.Log{
		Index:      index,
		Term:       term,
		Type:       raft.LogType(typ),
		Data:       data,
		Extensions: ext,
		AppendedAt: appendedAt,
	}
	return d.buf, nil
}

// decoder reads the fields of an encoded log; the first error sticks.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or malformed %s", ErrMalformed, what)
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
