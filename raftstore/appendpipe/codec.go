package appendpipe

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/internal/readn"
	"github.com/lockd/lockd/raftstore/logcodec"
)

// ErrMalformed is returned for a frame that does not decode: the connection
// carrying it is closed (the peer speaks something else, or the bytes were
// damaged).
var ErrMalformed = errors.New("appendpipe: malformed frame")

// MaxFrame bounds one frame (one request or response). hashicorp/raft sends at
// most MaxAppendEntries entries per request; a frame announcing more than this
// is refused before anything is allocated for it.
const MaxFrame = 1 << 30

// The wire format. Every frame is a uvarint payload length, then the payload.
// Integers are uvarints, byte strings a uvarint of length+1 (0 for nil, so
// nil and empty stay apart) and then the bytes.
//
// Request payload: header (protocol version, ID, Addr), Term, Leader,
// PrevLogEntry, PrevLogTerm, LeaderCommitIndex, the entry count, then each
// entry in logcodec's encoding (the log store's, so an entry's Data and
// Extensions come back nil when empty, as from the store).
//
// Response payload: header, Term, LastLog, flags (bit 0 Success, bit 1
// NoRetryBackoff), then the error the follower answered with (nil: none).

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

func appendHeader(b []byte, h raft.RPCHeader) []byte {
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

// appendRequest appends req's payload to b.
func appendRequest(b []byte, req *raft.AppendEntriesRequest) []byte {
	b = appendHeader(b, req.RPCHeader)
	b = binary.AppendUvarint(b, req.Term)
	b = appendBytes(b, req.Leader)
	b = binary.AppendUvarint(b, req.PrevLogEntry)
	b = binary.AppendUvarint(b, req.PrevLogTerm)
	b = binary.AppendUvarint(b, req.LeaderCommitIndex)
	b = binary.AppendUvarint(b, uint64(len(req.Entries)))
	for _, l := range req.Entries {
		b = logcodec.Append(b, l)
	}
	return b
}

// appendResponse appends resp's payload, and the follower's error, to b.
func appendResponse(b []byte, resp *raft.AppendEntriesResponse, rpcErr error) []byte {
	b = appendHeader(b, resp.RPCHeader)
	b = binary.AppendUvarint(b, resp.Term)
	b = binary.AppendUvarint(b, resp.LastLog)
	var flags byte
	if resp.Success {
		flags |= 1
	}
	if resp.NoRetryBackoff {
		flags |= 2
	}
	b = append(b, flags)
	if rpcErr == nil {
		return append(b, 0)
	}
	return appendBytes(b, []byte(rpcErr.Error()))
}

// decoder reads a payload front to back; the first failure sticks.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.p) == 0 {
		d.fail(what)
		return 0
	}
	c := d.p[0]
	d.p = d.p[1:]
	return c
}

// bytes returns a byte string that aliases the payload (capacity clipped,
// so an append by its owner never writes into the next field).
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil || n == 0 {
		return nil
	}
	n--
	if n > uint64(len(d.p)) {
		d.fail(what)
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

func (d *decoder) header() raft.RPCHeader {
	return raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersion(d.uvarint("protocol version")),
		ID:              d.bytes("id"),
		Addr:            d.bytes("addr"),
	}
}

func (d *decoder) done() error {
	if d.err == nil && len(d.p) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// minEntry is the fewest bytes a logcodec entry takes (version, index,
// term, type, flags, and two empty byte strings).
const minEntry = 7

// decodeRequest parses a request payload. The entries' Data and Extensions
// alias p, which must not be reused: hashicorp/raft keeps the entries (its
// log cache holds them).
func decodeRequest(p []byte) (*raft.AppendEntriesRequest, error) {
	d := &decoder{p: p}
	req := &raft.AppendEntriesRequest{RPCHeader: d.header()}
	req.Term = d.uvarint("term")
	req.Leader = d.bytes("leader")
	req.PrevLogEntry = d.uvarint("prev log entry")
	req.PrevLogTerm = d.uvarint("prev log term")
	req.LeaderCommitIndex = d.uvarint("leader commit index")
	n := d.uvarint("entry count")
	// Every entry takes at least minEntry bytes: a count beyond that is a
	// lie, and is refused before a slab is allocated for it.
	if d.err == nil && n > uint64(len(d.p))/minEntry {
		d.fail("entry count")
	}
	if d.err == nil && n > 0 {
		slab := make([]raft.Log, n)
		req.Entries = make([]*raft.Log, n)
		for i := range slab {
			rest, err := logcodec.Decode(d.p, &slab[i])
			if err != nil {
				d.err = fmt.Errorf("%w: entry %d: %v", ErrMalformed, i, err)
				break
			}
			d.p = rest
			req.Entries[i] = &slab[i]
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return req, nil
}

// decodeResponse parses a response payload into resp, and returns the error
// the follower answered with (nil when none) or, for a payload that does not
// decode, an error wrapping ErrMalformed as malformed; resp is then left
// as it was. hashicorp/raft reads a pipelined answer's response, not its
// error: a half-decoded Success must never reach it.
func decodeResponse(p []byte, resp *raft.AppendEntriesResponse) (rpcErr, malformed error) {
	d := &decoder{p: p}
	r := raft.AppendEntriesResponse{RPCHeader: d.header()}
	r.Term = d.uvarint("term")
	r.LastLog = d.uvarint("last log")
	flags := d.byte("flags")
	r.Success = flags&1 != 0
	r.NoRetryBackoff = flags&2 != 0
	if d.err == nil && flags&^3 != 0 {
		d.fail("flags")
	}
	msg := d.bytes("error")
	if err := d.done(); err != nil {
		return nil, err
	}
	*resp = r
	if msg != nil {
		return errors.New(string(msg)), nil
	}
	return nil, nil
}

// writeFrame writes payload as one frame to w (not flushed).
func writeFrame(w *bufio.Writer, payload []byte) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(payload)))]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readFrame reads one frame's payload from r into a new buffer of its own.
func readFrame(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: a frame of %d bytes (limit %d)", ErrMalformed, n, MaxFrame)
	}
	// Memory follows the bytes received, not the length announced.
	p, err := readn.Read(r, int(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return p, nil
}
