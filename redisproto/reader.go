package redisproto

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/splitargs"
)

// Limits on what one request may hold. The zero value of a field means Redis's
// default.
type Limits struct {
	MaxBulkLen      int64 // proto-max-bulk-len: 512 MiB
	MaxMultibulkLen int64 // argument count per command: INT_MAX, as Redis 7
	// MaxQueryBuffer bounds the bytes of one request buffered while it is
	// read (client-query-buffer-limit: 1 GiB); a connection past it is closed
	// without a reply (errQueryBuffer), as Redis closes one.
	MaxQueryBuffer int64
}

const (
	defaultMaxQueryBuf  = 1 << 30
	defaultMaxBulk      = 512 << 20
	defaultMaxMultibulk = math.MaxInt32
	maxInlineSize       = 64 << 10 // PROTO_INLINE_MAX_SIZE
	readChunk           = 16 << 10
)

// protocolError is a malformed request. Redis answers "-ERR Protocol error: ..."
// and closes the connection; so do we.
type protocolError string

func (e protocolError) Error() string { return "Protocol error: " + string(e) }

// reader parses client requests (RESP multibulk or inline) from a connection,
// exactly as Redis 7's networking.c accepts them.
type reader struct {
	rd         io.Reader
	buf        []byte
	start, end int
	lim        Limits

	// The multibulk request being parsed: arguments still to read, where to
	// continue, and the [begin, end) offsets of the arguments read so far.
	mbLeft  int64
	mbPos   int
	mbMarks [][2]int

	// Bytes (and the error that ended them) read ahead while the connection
	// was blocked in a command; fill consumes them before reading again.
	ahead    []byte
	aheadErr error

	// want is what the last incomplete parse asked fill for (errIncomplete's
	// need), so that the event loop, which fills without parsing, grows the
	// buffer as next would.
	want int

	// unauthed, when set, reports whether the connection must still
	// authenticate (Redis's authRequired). It is asked only when a request
	// announces more than maxUnauthArgs arguments or a bulk longer than
	// maxUnauthBulk: such a request is refused before AUTH succeeds, as Redis
	// ≥ 6.2.6 refuses it (CVE-2021-32675), so that a client without
	// credentials cannot make the server buffer large requests.
	unauthed func() bool

	// arm, when set, is called before each read from rd (the client
	// timeouts' read deadline: conn.armRead).
	arm func()
}

// Redis's limits on the requests of a client that must still authenticate
// (networking.c, processMultibulkBuffer).
const (
	maxUnauthArgs = 10
	maxUnauthBulk = 16384
)

// pushback keeps b and err, read ahead from the connection, for the parser.
func (r *reader) pushback(b []byte, err error) {
	r.ahead = append(r.ahead, b...)
	if err != nil {
		r.aheadErr = err
	}
}

func newReader(rd io.Reader, lim Limits) *reader {
	if lim.MaxBulkLen <= 0 {
		lim.MaxBulkLen = defaultMaxBulk
	}
	if lim.MaxMultibulkLen <= 0 {
		lim.MaxMultibulkLen = defaultMaxMultibulk
	}
	if lim.MaxQueryBuffer <= 0 {
		lim.MaxQueryBuffer = defaultMaxQueryBuf
	}
	return &reader{rd: rd, buf: make([]byte, readChunk), lim: lim}
}

// errIncomplete means more bytes are needed; need is how many bytes from the
// start of the request the parse needs, or 0 if unknown.
type errIncomplete struct{ need int }

func (errIncomplete) Error() string { return "incomplete" }

// errQueryBuffer: a request grew past Limits.MaxQueryBuffer while it was read.
// The connection is closed without a reply, as Redis closes a client that
// reached its client-query-buffer-limit.
var errQueryBuffer = errors.New("request larger than the query buffer limit")

// buffered reports whether bytes read from the connection are waiting to be
// parsed (a partial request included).
func (r *reader) buffered() bool {
	return r.start != r.end || len(r.ahead) > 0 || r.aheadErr != nil
}

// next returns the next command. With block false it returns (nil, nil) instead of
// waiting for bytes that are not yet buffered. Empty requests (blank inline lines,
// *0, *-1) are skipped as Redis skips them.
func (r *reader) next(block bool) ([][]byte, error) {
	for {
		args, n, err := r.parse(r.buf[r.start:r.end])
		if err == nil {
			r.start += n
			r.want = 0
			if len(args) == 0 {
				continue
			}
			return args, nil
		}
		inc, ok := err.(errIncomplete) // never wrapped; errors.As's reflection cost 2% of a node's CPU
		if !ok {
			return nil, err
		}
		r.want = inc.need
		if !block {
			return nil, nil
		}
		if err := r.fill(inc.need); err != nil {
			return nil, err
		}
	}
}

// fill reads at least one more chunk, growing the buffer so that need bytes fit.
func (r *reader) fill(need int) error {
	if r.start > 0 && (r.start == r.end || r.end == len(r.buf) || need > len(r.buf)-r.start) {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if int64(r.end-r.start) >= r.lim.MaxQueryBuffer {
		return errQueryBuffer
	}
	// Grow by doubling, so that the copying stays linear in what arrives however
	// it is split (a multibulk of a million small arguments grew by readChunk per
	// read: 1.7 GB copied for 7 MB), and towards need (a bulk's announced length)
	// no faster, so that a client that announces a huge bulk but sends little
	// gets little memory: the buffer is at most twice what was sent, plus a chunk.
	want := r.end + readChunk
	if need := r.start + need; need > want {
		want = min(need, max(want, 2*len(r.buf)))
	} else if want > len(r.buf) {
		want = max(want, 2*len(r.buf))
	}
	if want > len(r.buf) {
		nb := make([]byte, want)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	if len(r.ahead) > 0 {
		n := copy(r.buf[r.end:], r.ahead)
		r.ahead = r.ahead[n:]
		r.end += n
		return nil
	}
	if r.aheadErr != nil {
		return r.aheadErr
	}
	if r.arm != nil {
		r.arm()
	}
	n, err := r.rd.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse parses one request from b. It returns the arguments and bytes consumed.
func (r *reader) parse(b []byte) ([][]byte, int, error) {
	if len(b) == 0 {
		return nil, 0, errIncomplete{}
	}
	if b[0] == '*' {
		return r.parseMultibulk(b)
	}
	return parseInline(b)
}

func (r *reader) parseMultibulk(b []byte) ([][]byte, int, error) {
	// A multibulk request may arrive in many reads; the parse resumes where it
	// stopped (offsets are relative to r.start, which compaction preserves), so a
	// request of a million arguments is parsed once, not once per read.
	if r.mbLeft == 0 {
		nl := bytes.IndexByte(b, '\r')
		if nl < 0 || nl+1 >= len(b) {
			if len(b) > maxInlineSize {
				return nil, 0, protocolError("too big mbulk count string")
			}
			return nil, 0, errIncomplete{}
		}
		count, ok := command.ParseInt(b[1:nl])
		if !ok || count > r.lim.MaxMultibulkLen {
			return nil, 0, protocolError("invalid multibulk length")
		}
		if count > maxUnauthArgs && r.unauthed != nil && r.unauthed() {
			return nil, 0, protocolError("unauthenticated multibulk length")
		}
		if count <= 0 {
			return nil, nl + 2, nil
		}
		r.mbLeft, r.mbPos, r.mbMarks = count, nl+2, r.mbMarks[:0]
	}
	pos := r.mbPos
	for r.mbLeft > 0 {
		if pos >= len(b) {
			r.mbPos = pos
			return nil, 0, errIncomplete{}
		}
		if b[pos] != '$' {
			r.mbLeft = 0
			return nil, 0, protocolError("expected '$', got '" + string(b[pos]) + "'")
		}
		nl := bytes.IndexByte(b[pos:], '\r')
		if nl < 0 || pos+nl+1 >= len(b) {
			if len(b)-pos > maxInlineSize {
				r.mbLeft = 0
				return nil, 0, protocolError("too big bulk count string")
			}
			r.mbPos = pos
			return nil, 0, errIncomplete{}
		}
		size, ok := command.ParseInt(b[pos+1 : pos+nl])
		if !ok || size < 0 || size > r.lim.MaxBulkLen {
			r.mbLeft = 0
			return nil, 0, protocolError("invalid bulk length")
		}
		if size > maxUnauthBulk && r.unauthed != nil && r.unauthed() {
			r.mbLeft = 0
			return nil, 0, protocolError("unauthenticated bulk length")
		}
		end := pos + nl + 2 + int(size)
		if end+2 > len(b) {
			r.mbPos = pos
			return nil, 0, errIncomplete{need: end + 2}
		}
		if len(r.mbMarks) == cap(r.mbMarks) {
			// Double (append grows a large slice by a quarter: a million
			// arguments copied their marks 80 MB over, onto fresh pages).
			r.mbMarks = slices.Grow(r.mbMarks, max(16, cap(r.mbMarks)))
		}
		r.mbMarks = append(r.mbMarks, [2]int{pos + nl + 2, end})
		pos = end + 2 // Redis skips the CRLF without checking it
		r.mbLeft--
	}
	args := make([][]byte, len(r.mbMarks))
	for i, m := range r.mbMarks {
		args[i] = b[m[0]:m[1]:m[1]]
	}
	if cap(r.mbMarks) > 4096 {
		r.mbMarks = nil
	}
	return args, pos, nil
}

// parseInline splits one inline request line as Redis's sdssplitargs does.
func parseInline(b []byte) ([][]byte, int, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if len(b) > maxInlineSize {
			return nil, 0, protocolError("too big inline request")
		}
		return nil, 0, errIncomplete{}
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := splitargs.Split(line)
	if !ok {
		return nil, 0, protocolError("unbalanced quotes in request")
	}
	return args, nl + 1, nil
}
