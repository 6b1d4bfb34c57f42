package forward

import (
	"encoding/binary"
	"errors"
	"net"
)

// Wire protocol (version 1). The dialer writes a 4-byte preamble, "LKF1",
// before its first frame; then both directions carry frames:
//
//	length  uint32 big-endian: payload bytes, at most the receiver's max frame
//	type    uint8: 1 request (client to server), 2 response, 3 error,
//	        4 cancel (client to server)
//	id      uint64 big-endian: chosen by the client, echoed by the server
//	payload length bytes
//
// An error frame answers a request whose handler ran but whose response
// cannot be sent; its payload is a one-byte code and a text. A cancel frame
// has no payload and the id of a request the client has given up on: the
// server ends that handler's ctx (cause ErrCanceledByCaller) if it still
// runs, and ignores a cancel frame for an id it does not run. The request's
// response, if the handler still returns one, is sent as usual. A frame
// above the receiver's limit, a bad type, a cancel frame with a payload or a
// bad preamble closes the connection.
//
// Type 4 came after the first release of version 1, and servers from before
// it close the connection on it (a bad type). The preamble does not tell them
// apart: a client sends cancel frames only to servers known to understand
// them, which is its caller's duty (Client.CallCancelable sends them, Call
// never does).

// DefaultMaxFrame is the largest payload either side accepts unless told
// otherwise: 512 MiB of batch plus slack for its framing.
const DefaultMaxFrame = 512<<20 + 64<<10

// DefaultMaxConnsPerAddr is the connections a Client keeps per address when
// Options.MaxConnsPerAddr is not set.
const DefaultMaxConnsPerAddr = 2

const (
	headerLen = 13

	typeRequest  = 1
	typeResponse = 2
	typeError    = 3
	typeCancel   = 4

	// codeTooLarge: the handler's response exceeded the server's max frame.
	// Other codes are reserved.
	codeTooLarge = 1
)

var preamble = [4]byte{'L', 'K', 'F', '1'}

// The errors of a Call. Every error Call returns wraps exactly one of
// ErrNotSent and ErrUnknown, plus the cause (a dial error, ctx.Err(),
// ErrClosed, ErrFrameTooLarge, the connection's error).
var (
	// ErrNotSent: the request never left this node whole (no connection,
	// the dial failed, ctx ended or the Client closed before it was written,
	// or the write failed part way, which no server can take for a request).
	// The handler cannot have run: retrying is safe.
	ErrNotSent = errors.New("forward: request not sent")
	// ErrUnknown: the whole request was written but its reply was lost (the
	// connection broke, ctx ended, the Client closed) or could not be sent
	// (an error frame). The handler may have run, or may still run.
	ErrUnknown = errors.New("forward: request sent, outcome unknown")
	// ErrClosed: the Client is closed.
	ErrClosed = errors.New("forward: client closed")
	// ErrFrameTooLarge: a request or response payload is above the max frame
	// of the side that would receive it.
	ErrFrameTooLarge = errors.New("forward: frame too large")
)

func putHeader(h *[headerLen]byte, typ byte, n int, id uint64) {
	binary.BigEndian.PutUint32(h[0:4], uint32(n))
	h[4] = typ
	binary.BigEndian.PutUint64(h[5:13], id)
}

func parseHeader(h *[headerLen]byte) (typ byte, n uint64, id uint64) {
	return h[4], uint64(binary.BigEndian.Uint32(h[0:4])), binary.BigEndian.Uint64(h[5:13])
}

// writeFrame writes one frame (after pre, if any) with a single vectored
// write and returns the bytes written and their total.
func writeFrame(nc net.Conn, pre []byte, typ byte, id uint64, payload []byte) (n, total int64, err error) {
	var h [headerLen]byte
	putHeader(&h, typ, len(payload), id)
	bufs := make(net.Buffers, 0, 3)
	if len(pre) > 0 {
		bufs = append(bufs, pre)
	}
	bufs = append(bufs, h[:])
	if len(payload) > 0 {
		bufs = append(bufs, payload)
	}
	total = int64(len(pre) + headerLen + len(payload))
	n, err = bufs.WriteTo(nc)
	return n, total, err
}
