package multiraft

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestFrameRoundTrip: messages of several groups in one frame come out in
// order, whole; a frame cut anywhere but between messages, or naming a
// message longer than it holds, is refused whole.
func TestFrameRoundTrip(t *testing.T) {
	msgs := []struct {
		g Group
		m pb.Message
	}{
		{0, pb.Message{Type: pb.MsgApp, From: 1, To: 2, Term: 3, Index: 7, Commit: 6,
			Entries: []pb.Entry{{Term: 3, Index: 8, Data: []byte("abc")}, {Term: 3, Index: 9, Data: make([]byte, 300)}}}},
		{7, pb.Message{Type: pb.MsgHeartbeat, From: 1, To: 2, Term: 5, Commit: 40}},
		{1 << 20, pb.Message{Type: pb.MsgAppResp, From: 1, To: 2, Term: 9, Index: 100}},
	}
	var frame []byte
	var bounds []int
	for _, x := range msgs {
		frame = AppendMessage(frame, x.g, &x.m)
		bounds = append(bounds, len(frame))
	}
	var got []Group
	decoded, err := decodeFrame(frame, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, im := range decoded {
		if !reflect.DeepEqual(im.m, msgs[i].m) {
			t.Errorf("message %d: %+v, want %+v", i, im.m, msgs[i].m)
		}
		got = append(got, im.g)
	}
	if !reflect.DeepEqual(got, []Group{0, 7, 1 << 20}) {
		t.Fatalf("groups %v", got)
	}

	atBound := map[int]bool{0: true}
	for _, b := range bounds {
		atBound[b] = true
	}
	for cut := range len(frame) {
		kept := []inMsg{{g: 42}} // what the caller had: a refused frame leaves it as it was
		out, err := decodeFrame(frame[:cut], kept)
		calls := len(out) - len(kept)
		if atBound[cut] {
			if err != nil {
				t.Fatalf("cut at a message boundary %d: %v", cut, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadFrame) || calls != 0 {
			t.Fatalf("cut at %d: err %v after %d messages, want ErrBadFrame and none", cut, err, calls)
		}
	}

	huge := binary.AppendUvarint(binary.AppendUvarint(nil, 1), MaxFrameMessage+1)
	if _, err := decodeFrame(append(huge, make([]byte, 16)...), nil); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("a message longer than the limit: %v", err)
	}
	tooBig := binary.AppendUvarint(binary.AppendUvarint(nil, 1<<33), 0)
	if _, err := decodeFrame(tooBig, nil); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("a group number beyond 32 bits: %v", err)
	}
}
