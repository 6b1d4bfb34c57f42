package rdb

import (
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"math"
	"strconv"
)

// DecodeDump decodes a DUMP payload: one value in RDB form, then the RDB
// version (2 bytes, little endian) and Redis's CRC64 of everything before
// the checksum (8 bytes, little endian). A payload shorter than its footer,
// of a version above Version, or whose checksum does not match (a zero
// checksum included: RESTORE skips the check only under the
// skip-checksum-validation setting, never for a zero) is
// ErrVersionOrChecksum. A body that does not decode is an error matching
// ErrBadFormat, as is an empty collection; bytes after the value and before
// the footer are ignored, as RESTORE ignores them. A stream or module value
// is an *Unsupported (after its structure was read to its end). The Value
// returned shares no memory with payload.
//
// DecodeDump sets no bound on the decoded size but the payload's own: LZF
// strings may expand 88 times, and a listpack's entries cost more than
// their bytes. Code that decodes payloads it did not make, where the
// expansion matters, uses DecodeDumpLimit.
func DecodeDump(payload []byte) (Value, error) {
	v, _, err := decodeDump(payload, meter{})
	return v, err
}

// DecodeDumpLimit is DecodeDump with a budget of limit bytes decoded
// (negative counts as 0): every byte decoding allocates for the value (raw
// strings, LZF output, encoded blobs such as listpacks) and 64 bytes per
// element of a collection (a hash field and its value are two, a
// sorted-set member and its score two) are charged before they are
// allocated, and decoding stops with an error matching ErrTooLarge as soon
// as the next charge would pass limit. A payload whose footer is wrong is
// still ErrVersionOrChecksum, found before anything is decoded; a body
// malformed before the budget runs out is still ErrBadFormat. used is what
// was charged, also when decoding failed: what the decode cost (never more
// than limit).
func DecodeDumpLimit(payload []byte, limit int64) (v Value, used int64, err error) {
	return decodeDump(payload, meter{limit: max(limit, 0), limited: true})
}

func decodeDump(payload []byte, m meter) (Value, int64, error) {
	if len(payload) < 10 {
		return Value{}, 0, ErrVersionOrChecksum
	}
	footer := payload[len(payload)-10:]
	if binary.LittleEndian.Uint16(footer) > Version {
		return Value{}, 0, ErrVersionOrChecksum
	}
	if crc(0, payload[:len(payload)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return Value{}, 0, ErrVersionOrChecksum
	}
	s := &bytesSource{b: payload[:len(payload)-10], m: m}
	t, err := s.readByte()
	if err != nil {
		return Value{}, 0, err
	}
	v, skipped, err := decodeObject(s, t)
	if err != nil {
		return Value{}, s.m.used, err
	}
	if skipped != "" {
		return Value{}, s.m.used, &Unsupported{Name: skipped}
	}
	return v, s.m.used, nil
}

// Entry is one key of an RDB stream.
type Entry struct {
	DB       int    // the database (SELECTDB) the key belongs to
	Key      []byte // the key
	Value    Value  // the value; zero when Skipped
	ExpireMs int64  // absolute unix time in ms the key expires at; 0 = none
	// Skipped, when non-empty, is Redis's name of a type Reader passed over
	// without making a Value ("stream", "module:<name>").
	Skipped string
}

// Reader reads an RDB stream: a file, or the body a master sends at a full
// resync. It accepts RDB versions 1 to MaxReaderVersion. It reads no byte
// past the RDB's final checksum when the io.Reader it was given is also an
// io.ByteReader (a *bufio.Reader, say: pass one to keep what follows, such
// as a replication stream, readable); any other reader is buffered and may
// be read ahead. A Reader is not safe for concurrent use.
type Reader struct {
	s       *streamSource
	aux     map[string]string
	version int
	db      int
	err     error // sticky: set once Next returned an error or io.EOF
}

// NewReader returns a Reader of the RDB stream r; nothing is read until Next.
// It sets no bound on a value's decoded size (see NewReaderLimit).
func NewReader(r io.Reader) *Reader {
	return &Reader{s: newStreamSource(r), aux: map[string]string{}}
}

// ReplicaValueLimit is a per-value limit for NewReaderLimit on a
// replication link: 512 MiB, Redis's default proto-max-bulk-len (the
// largest string a Redis client may send). Redis itself loads whatever its
// master sends; a lockd replica refuses a value that would cost more.
const ReplicaValueLimit = 512 << 20

// NewReaderLimit is NewReader with a budget per record of limit bytes
// decoded, counted as DecodeDumpLimit counts (every byte allocated for a
// key, an aux field or a value, and 64 per collection element), charged
// before it is allocated and restarted at each record: a key (with its
// value) or an aux field over the limit makes Next fail with an error
// matching ErrTooLarge (and, as for any error, every later Next).
func NewReaderLimit(r io.Reader, limit int64) *Reader {
	rd := NewReader(r)
	rd.s.m = meter{limit: max(limit, 0), limited: true}
	return rd
}

// Aux returns a copy of the aux fields (repl-id, repl-offset, redis-ver, …)
// seen so far; those before the first key are all there once Next returned
// the first entry or io.EOF.
func (r *Reader) Aux() map[string]string { return maps.Clone(r.aux) }

// Version is the RDB version of the stream, 0 before Next read its header.
func (r *Reader) Version() int { return r.version }

// Next returns the next key of the stream. After the EOF opcode and its
// checksum (verified when the version has one and it is not zero, as Redis
// does) it returns io.EOF. Keys with empty collections are passed over, as
// Redis does when loading. A malformed stream is an error matching
// ErrBadFormat (a truncated one as well), a failing io.Reader its own
// error; a module value in the pre-GA format is an error wrapping
// *Unsupported; a record over a NewReaderLimit budget an error matching
// ErrTooLarge. After an error or io.EOF, Next returns that again.
func (r *Reader) Next() (Entry, error) {
	if r.err != nil {
		return Entry{}, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (Entry, error) {
	s := r.s
	if r.version == 0 {
		hdr, err := s.read(9)
		if err != nil {
			return Entry{}, err
		}
		if string(hdr[:5]) != "REDIS" {
			return Entry{}, errf("not an RDB stream (signature %q)", hdr[:5])
		}
		v, err := strconv.Atoi(string(hdr[5:]))
		if err != nil || v < 1 || v > MaxReaderVersion {
			return Entry{}, errf("RDB version %q not supported", hdr[5:])
		}
		r.version = v
	}
	var expire int64
	for {
		s.m.used = 0 // each record has its own budget
		t, err := s.readByte()
		if err != nil {
			return Entry{}, err
		}
		switch t {
		case opExpireTime:
			b, err := s.read(4)
			if err != nil {
				return Entry{}, err
			}
			expire = int64(int32(binary.LittleEndian.Uint32(b))) * 1000
			continue
		case opExpireTimeMs:
			b, err := s.read(8)
			if err != nil {
				return Entry{}, err
			}
			expire = int64(binary.LittleEndian.Uint64(b))
			continue
		case opFreq:
			if _, err := s.readByte(); err != nil {
				return Entry{}, err
			}
			continue
		case opIdle:
			if _, _, err := readLen(s); err != nil {
				return Entry{}, err
			}
			continue
		case opEOF:
			return Entry{}, r.finish()
		case opSelectDB:
			db, _, err := readLen(s)
			if err != nil {
				return Entry{}, err
			}
			if db > math.MaxInt32 {
				return Entry{}, errf("database number %d", db)
			}
			r.db = int(db)
			continue
		case opResizeDB:
			for range 2 {
				if _, _, err := readLen(s); err != nil {
					return Entry{}, err
				}
			}
			continue
		case opAux:
			k, err := readString(s)
			if err != nil {
				return Entry{}, err
			}
			v, err := readString(s)
			if err != nil {
				return Entry{}, err
			}
			r.aux[string(k)] = string(v)
			continue
		case opModuleAux:
			if _, _, err := readLen(s); err != nil { // module id
				return Entry{}, err
			}
			when, _, err := readLen(s)
			if err != nil {
				return Entry{}, err
			}
			if when != moduleOpUInt {
				return Entry{}, errf("module aux 'when' opcode %d", when)
			}
			if _, _, err := readLen(s); err != nil { // when
				return Entry{}, err
			}
			if err := skipModuleBody(s); err != nil {
				return Entry{}, err
			}
			continue
		case opFunction2:
			if err := skipString(s); err != nil {
				return Entry{}, err
			}
			continue
		case opFunction: // 7.0 release candidates: name, engine, [description,] code
			if err := r.skipOldFunction(); err != nil {
				return Entry{}, err
			}
			continue
		}
		key, err := readString(s)
		if err != nil {
			return Entry{}, err
		}
		v, skipped, err := decodeObject(s, t)
		if err == errEmpty {
			expire = 0
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		return Entry{DB: r.db, Key: key, Value: v, ExpireMs: expire, Skipped: skipped}, nil
	}
}

func (r *Reader) skipOldFunction() error {
	for range 2 {
		if err := skipString(r.s); err != nil {
			return err
		}
	}
	hasDesc, _, err := readLen(r.s)
	if err != nil {
		return err
	}
	if hasDesc != 0 {
		if err := skipString(r.s); err != nil {
			return err
		}
	}
	return skipString(r.s)
}

// finish reads the checksum after the EOF opcode (RDB version 5 on) and
// checks it unless it is zero (written with rdbchecksum off).
func (r *Reader) finish() error {
	if r.version < 5 {
		return io.EOF
	}
	want := r.s.crc
	b, err := r.s.read(8)
	if err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(b); got != 0 && got != want {
		return errf("RDB checksum %016x, content %016x", got, want)
	}
	return io.EOF
}

// IsUnsupported reports whether err is or wraps an *Unsupported, and
// returns it.
func IsUnsupported(err error) (*Unsupported, bool) {
	var u *Unsupported
	ok := errors.As(err, &u)
	return u, ok
}
