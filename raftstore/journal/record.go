package journal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// The record format (part of the on-disk format: existing journals must
// replay). A record is its payload's length (4 bytes, little-endian) and the
// CRC-32C of the payload (4 bytes, little-endian), then the payload: the
// number of writes (uvarint) and, for each, a flag byte (1: its keys are
// deleted), the number of its keys (uvarint), and each key and, unless
// deleted, its value, each preceded by its length (uvarint). A length of 0
// (the zeros of a preallocated file) ends a file's records.

// recordHeader is a record's length (4 bytes) and CRC-32C of its payload (4).
const recordHeader = 8

// BigPiece is the size from which a value goes into a record by reference,
// as a piece of its own in the record's vectored write, instead of being
// copied into the record's buffer: a megabyte value was copied into memory
// cleared for it first (the record's buffer, grown to size), a tenth of a
// node's CPU under 1.5 MB SETs. A writer that has such a value in pieces
// (Write.Split) need not join them: each piece is written where it lies.
const BigPiece = 64 << 10

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Write is one write of a record: its keys set to its values, or deleted.
type Write struct {
	Keys, Vals [][]byte
	// Split, when not nil, gives the values that are in pieces (Vals[i]
	// nil where Split[i][1] is not): the record holds their concatenation.
	Split [][3][]byte
	Del   bool // delete Keys (Vals unused) instead of setting them

	// Tail, for a write of log entries that stay in the journal's files, is
	// the log's tail (Tail.Journaled applies the write to it); Append sets
	// Locs then: where each value landed. A replay sets Locs of every set.
	Tail *Tail
	Locs []Loc
}

// Pieces returns w's i-th value as the pieces it is the concatenation of.
func (w *Write) Pieces(i int) [][]byte {
	if w.Split != nil && w.Split[i][1] != nil {
		return w.Split[i][:]
	}
	return w.Vals[i : i+1]
}

// Value returns w's i-th value in one slice (a split one joined: a copy).
func (w *Write) Value(i int) []byte {
	if p := w.Pieces(i); len(p) > 1 {
		return slices.Concat(p...)
	}
	return w.Vals[i]
}

// record is a record ready to write: buf holds its bytes except the values
// it refers to (refs, in order), each of which goes between buf's bytes
// before and after its at.
type record struct {
	buf  []byte
	refs []recordRef
	size int // the whole record's length
}

type recordRef struct {
	at  int // val goes after buf[:at]
	val []byte
}

// build makes rec the record of batch's writes (reusing rec's buffer). The
// Locs of a set with a Tail get where each value is, from the record's
// start. A value given in pieces is written as their concatenation.
func (rec *record) build(batch []*Write) {
	// Grown once to the record's size: appending values one by one to a
	// buffer that starts small copied each several times over.
	n := recordHeader + binary.MaxVarintLen64
	for _, w := range batch {
		n += 1 + binary.MaxVarintLen64
		for i, k := range w.Keys {
			n += binary.MaxVarintLen64 + len(k)
			if !w.Del {
				n += binary.MaxVarintLen64
				for _, p := range w.Pieces(i) {
					if len(p) < BigPiece {
						n += len(p)
					}
				}
			}
		}
	}
	dst := slices.Grow(rec.buf[:0], n)
	refs := rec.refs[:0]
	refd := 0 // bytes of refs so far
	dst = append(dst, make([]byte, recordHeader)...)
	dst = binary.AppendUvarint(dst, uint64(len(batch)))
	for _, w := range batch {
		flag := byte(0)
		if w.Del {
			flag = 1
		}
		dst = append(dst, flag)
		dst = binary.AppendUvarint(dst, uint64(len(w.Keys)))
		locs := w.Tail != nil && !w.Del
		if locs {
			w.Locs = make([]Loc, len(w.Keys))
		}
		for i, k := range w.Keys {
			dst = binary.AppendUvarint(dst, uint64(len(k)))
			dst = append(dst, k...)
			if w.Del {
				continue
			}
			size := 0
			for _, p := range w.Pieces(i) {
				size += len(p)
			}
			dst = binary.AppendUvarint(dst, uint64(size))
			if locs {
				w.Locs[i] = Loc{Off: int64(len(dst) + refd), N: uint32(size)}
			}
			for _, p := range w.Pieces(i) {
				if len(p) < BigPiece {
					dst = append(dst, p...)
					continue
				}
				refs = append(refs, recordRef{at: len(dst), val: p})
				refd += len(p)
			}
		}
	}
	crc, from := uint32(0), recordHeader
	for _, ref := range refs {
		crc = crc32.Update(crc, crcTable, dst[from:ref.at])
		crc = crc32.Update(crc, crcTable, ref.val)
		from = ref.at
	}
	crc = crc32.Update(crc, crcTable, dst[from:])
	rec.buf, rec.refs, rec.size = dst, refs, len(dst)+refd
	binary.LittleEndian.PutUint32(dst, uint32(rec.size-recordHeader))
	binary.LittleEndian.PutUint32(dst[4:], crc)
}

// segments returns the record's bytes in the order they are written, none
// empty.
func (rec *record) segments() [][]byte {
	segs := make([][]byte, 0, 2*len(rec.refs)+1)
	from := 0
	for _, ref := range rec.refs {
		if ref.at > from {
			segs = append(segs, rec.buf[from:ref.at])
		}
		segs = append(segs, ref.val)
		from = ref.at
	}
	if from < len(rec.buf) {
		segs = append(segs, rec.buf[from:])
	}
	return segs
}

// writeAt writes the record to f at off: one pwrite, or one vectored write
// (more where the kernel takes fewer pieces, or fewer bytes, at a time) of
// its buffer's parts and the values it refers to.
func (rec *record) writeAt(f *os.File, off int64) error {
	if len(rec.refs) == 0 {
		_, err := f.WriteAt(rec.buf, off)
		return err
	}
	segs := rec.segments()
	for len(segs) > 0 {
		n, err := unix.Pwritev(int(f.Fd()), segs[:min(len(segs), maxIOV)], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		off += int64(n)
		for n > 0 {
			if n < len(segs[0]) {
				segs[0] = segs[0][n:]
				break
			}
			n -= len(segs[0])
			segs = segs[1:]
		}
	}
	return nil
}

// maxIOV is the most pieces one vectored write takes (Linux's IOV_MAX; a
// variable for tests).
var maxIOV = 1024

// errRecord is wrapped in the error of a replay that found a record whose
// checksum holds but whose payload does not parse: not a crash's doing.
var errRecord = errors.New("malformed journal record")

// decodeRecord parses a record's payload into its writes (keys and values
// share p's memory).
func decodeRecord(p []byte) ([]*Write, error) {
	uvarint := func() (uint64, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return 0, false // also: a count larger than what is left to hold it
		}
		p = p[k:]
		return n, true
	}
	field := func() ([]byte, bool) {
		n, ok := uvarint()
		if !ok {
			return nil, false
		}
		b := p[:n]
		p = p[n:]
		return b, true
	}
	count, ok := uvarint()
	if !ok {
		return nil, errRecord
	}
	ws := make([]*Write, 0, count)
	for range count {
		if len(p) == 0 || p[0] > 1 {
			return nil, errRecord
		}
		w := &Write{Del: p[0] == 1}
		p = p[1:]
		n, ok := uvarint()
		if !ok {
			return nil, errRecord
		}
		for range n {
			k, ok := field()
			if !ok {
				return nil, errRecord
			}
			w.Keys = append(w.Keys, k)
			if !w.Del {
				v, ok := field()
				if !ok {
					return nil, errRecord
				}
				w.Vals = append(w.Vals, v)
			}
		}
		ws = append(ws, w)
	}
	if len(p) != 0 {
		return nil, errRecord
	}
	return ws, nil
}

// replayFile calls apply with the writes of each whole record in data,
// journal file seq's contents, in order; each set's Locs say where in the
// file its values are. A record cut short or failing its checksum ends the
// replay without an error (the write a crash interrupted, or the zeros after
// the last record); a checksummed record that does not parse fails it
// (errRecord), and so does an error of apply.
func replayFile(data []byte, seq uint64, apply func([]*Write) error) error {
	for off := 0; off+recordHeader <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 || n > len(data)-off-recordHeader {
			return nil // the preallocated zeros after the last record, or a torn one
		}
		payload := data[off+recordHeader : off+recordHeader+n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(data[off+4:]) {
			return nil // torn
		}
		ws, err := decodeRecord(payload)
		if err != nil {
			return err // whole and checksummed, yet unreadable: not a crash's doing
		}
		for _, w := range ws {
			if w.Del {
				continue
			}
			w.Locs = make([]Loc, len(w.Vals))
			for i, v := range w.Vals {
				// v is a slice of data (decodeRecord): its capacity runs to
				// data's end, so it tells where v starts.
				w.Locs[i] = Loc{Seq: seq, Off: int64(cap(data) - cap(v)), N: uint32(len(v))}
			}
		}
		if err := apply(ws); err != nil {
			return err
		}
		off += recordHeader + n
	}
	return nil
}
