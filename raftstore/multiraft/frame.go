package multiraft

import (
	"encoding/binary"
	"errors"
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
)

// A frame is every message one node has for one peer in one turn, of all
// groups: repeated (uvarint group, uvarint length, the message's protobuf
// encoding). The transport delimits frames; a frame holds no header.

// MaxFrameMessage bounds one message's encoding in a frame (Raft's
// MaxSizePerMsg, 1 MiB, plus room for the entries' framing and a large
// entry): a longer one is refused before anything is allocated for it.
const MaxFrameMessage = 64 << 20

// ErrBadFrame wraps every reason a frame is refused (decodeFrame).
var ErrBadFrame = errors.New("multiraft: malformed frame")

// AppendMessage appends m, a message of group g, to frame.
func AppendMessage(frame []byte, g Group, m *pb.Message) []byte {
	size := m.Size()
	frame = binary.AppendUvarint(frame, uint64(g))
	frame = binary.AppendUvarint(frame, uint64(size))
	at := len(frame)
	frame = append(frame, make([]byte, size)...)
	if _, err := m.MarshalTo(frame[at:]); err != nil {
		panic("multiraft: marshal message: " + err.Error()) // Size said it fits
	}
	return frame
}

// decodeFrame appends every message of frame, in order, to dst. A frame
// that does not parse whole adds none of it (dst comes back as it was).
func decodeFrame(frame []byte, dst []inMsg) ([]inMsg, error) {
	n0 := len(dst)
	for b := frame; len(b) > 0; {
		g, n := binary.Uvarint(b)
		if n <= 0 || g > 1<<32-1 {
			return dst[:n0], fmt.Errorf("%w: group number", ErrBadFrame)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > MaxFrameMessage || size > uint64(len(b)-n) {
			return dst[:n0], fmt.Errorf("%w: message length", ErrBadFrame)
		}
		b = b[n:]
		dst = append(dst, inMsg{g: Group(g)})
		if err := dst[len(dst)-1].m.Unmarshal(b[:size]); err != nil {
			return dst[:n0], fmt.Errorf("%w: %v", ErrBadFrame, err)
		}
		b = b[size:]
	}
	return dst, nil
}
