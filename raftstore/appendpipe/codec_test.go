package appendpipe

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func sampleRequest() *raft.AppendEntriesRequest {
	at := time.Unix(1764500000, 123456789)
	return &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n1"), Addr: []byte("127.0.0.1:7379")},
		Term:              7,
		Leader:            []byte("127.0.0.1:7379"),
		PrevLogEntry:      41,
		PrevLogTerm:       6,
		LeaderCommitIndex: 40,
		Entries: []*raft.Log{
			{Index: 42, Term: 7, Type: raft.LogCommand, Data: []byte("SET k v"), AppendedAt: at},
			{Index: 43, Term: 7, Type: raft.LogNoop, AppendedAt: time.Time{}}, // no Data, no Extensions: they come back nil
			{Index: 44, Term: 7, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xff}, 300), Extensions: []byte("ext")},
		},
	}
}

// Every field of a request, the header's nil and empty byte strings and an
// entry's zero time among them, comes back as it was sent.
func TestRequestRoundTrip(t *testing.T) {
	for _, req := range []*raft.AppendEntriesRequest{
		sampleRequest(),
		{}, // a heartbeat-shaped request: no header, no entries
		{RPCHeader: raft.RPCHeader{ID: []byte{}, Addr: []byte{}}, Term: 1 << 62, LeaderCommitIndex: 1<<64 - 1},
	} {
		got, err := decodeRequest(appendRequest(nil, req))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		// time.Unix builds a local-zone time without a monotonic reading:
		// compare instants, then the rest field by field.
		for i, l := range req.Entries {
			if !got.Entries[i].AppendedAt.Equal(l.AppendedAt) || got.Entries[i].AppendedAt.IsZero() != l.AppendedAt.IsZero() {
				t.Fatalf("entry %d AppendedAt = %v, want %v", i, got.Entries[i].AppendedAt, l.AppendedAt)
			}
			got.Entries[i].AppendedAt = l.AppendedAt
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, req)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	cases := []struct {
		resp raft.AppendEntriesResponse
		err  error
	}{
		{raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n2"), Addr: []byte("a:1")}, Term: 7, LastLog: 44, Success: true}, nil},
		{raft.AppendEntriesResponse{Term: 9, LastLog: 3, NoRetryBackoff: true}, errors.New("log store failed")},
		{raft.AppendEntriesResponse{}, nil},
	}
	for _, c := range cases {
		var got raft.AppendEntriesResponse
		rpcErr, err := decodeResponse(appendResponse(nil, &c.resp, c.err), &got)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, c.resp) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, c.resp)
		}
		if (rpcErr == nil) != (c.err == nil) || (rpcErr != nil && rpcErr.Error() != c.err.Error()) {
			t.Fatalf("error = %v, want %v", rpcErr, c.err)
		}
	}
}

// A payload cut anywhere, or with bytes after its end, is refused with
// ErrMalformed, never decoded into something else.
func TestMalformedRefused(t *testing.T) {
	p := appendRequest(nil, sampleRequest())
	for n := 0; n < len(p); n++ {
		if _, err := decodeRequest(p[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("request cut to %d of %d bytes: err = %v, want ErrMalformed", n, len(p), err)
		}
	}
	if _, err := decodeRequest(append(p[:len(p):len(p)], 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte: err = %v", err)
	}
	r := appendResponse(nil, &raft.AppendEntriesResponse{Term: 1, Success: true}, errors.New("x"))
	for n := 0; n < len(r); n++ {
		var got raft.AppendEntriesResponse
		if _, err := decodeResponse(r[:n], &got); !errors.Is(err, ErrMalformed) {
			t.Fatalf("response cut to %d of %d bytes: err = %v, want ErrMalformed", n, len(r), err)
		}
		// hashicorp/raft reads only the response: a cut one must not
		// leave a Success (or anything else) behind.
		if !reflect.DeepEqual(got, raft.AppendEntriesResponse{}) {
			t.Fatalf("response cut to %d of %d bytes left %+v", n, len(r), got)
		}
	}
	bad := append([]byte(nil), r...)
	bad[len(bad)-3] |= 0x80 // an unknown flag bit
	if _, err := decodeResponse(bad, &raft.AppendEntriesResponse{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown flag: err = %v", err)
	}
	// An entry count far beyond what the payload could hold allocates
	// nothing and fails.
	huge := appendRequest(nil, &raft.AppendEntriesRequest{})
	huge = append(huge[:len(huge)-1], 0xff, 0xff, 0xff, 0xff, 0x0f)
	if _, err := decodeRequest(huge); !errors.Is(err, ErrMalformed) {
		t.Fatalf("huge entry count: err = %v", err)
	}
}

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	for _, p := range [][]byte{{}, []byte("one"), bytes.Repeat([]byte("x"), 70000)} {
		if err := writeFrame(w, p); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	r := bufio.NewReader(&b)
	for _, want := range []int{0, 3, 70000} {
		p, err := readFrame(r)
		if err != nil || len(p) != want {
			t.Fatalf("frame of %d bytes: got %d, %v", want, len(p), err)
		}
	}
	if _, err := readFrame(r); err == nil {
		t.Fatal("read past the last frame")
	}
	// A length over MaxFrame is refused before anything is read or allocated.
	var over bytes.Buffer
	w = bufio.NewWriter(&over)
	writeFrame(w, nil)
	w.Flush()
	over.Reset()
	over.Write([]byte{0xff, 0xff, 0xff, 0xff, 0x7f})
	if _, err := readFrame(bufio.NewReader(&over)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("oversized frame: err = %v", err)
	}
}

// FuzzDecode: no input makes a decoder panic, and what a request decodes to
// survives an encode and decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(appendRequest(nil, sampleRequest()))
	f.Add(appendResponse(nil, &raft.AppendEntriesResponse{Term: 3, Success: true}, errors.New("e")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		if req, err := decodeRequest(p); err == nil {
			again, err := decodeRequest(appendRequest(nil, req))
			if err != nil || !reflect.DeepEqual(again, req) {
				t.Fatalf("request does not survive a round trip: %v\n%+v\n%+v", err, req, again)
			}
		}
		var resp raft.AppendEntriesResponse
		if rpcErr, err := decodeResponse(p, &resp); err == nil {
			var again raft.AppendEntriesResponse
			rpcErr2, err := decodeResponse(appendResponse(nil, &resp, rpcErr), &again)
			if err != nil || !reflect.DeepEqual(again, resp) || (rpcErr == nil) != (rpcErr2 == nil) {
				t.Fatalf("response does not survive a round trip: %v\n%+v\n%+v", err, resp, again)
			}
		}
	})
}
