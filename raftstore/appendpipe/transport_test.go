package appendpipe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// node is one side of a test: an appendpipe Transport over an in-memory
// raft transport, its pipe listener on 127.0.0.1.
type node struct {
	t     *Transport
	inner *raft.InmemTransport
	ln    net.Listener
}

func newNode(t *testing.T, dial func(raft.ServerAddress, time.Duration) (net.Conn, error)) *node {
	t.Helper()
	return newNodeVersion(t, dial, 0)
}

// newNodeVersion is newNode whose pipe server greets with version.
func newNodeVersion(t *testing.T, dial func(raft.ServerAddress, time.Duration) (net.Conn, error), version byte) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, inner := raft.NewInmemTransport(raft.ServerAddress(ln.Addr().String()))
	if dial == nil {
		dial = func(target raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", string(target), timeout)
		}
	}
	n := &node{inner: inner, ln: ln}
	n.t = New(Config{Inner: inner, Listener: ln, Dial: dial, Timeout: 5 * time.Second, Version: version})
	t.Cleanup(func() { n.t.Close() })
	return n
}

func (n *node) addr() raft.ServerAddress { return raft.ServerAddress(n.ln.Addr().String()) }

// follow answers every AppendEntries n's consumer delivers, as a follower
// would: the term echoed, LastLog the last entry's index, and for a request
// whose Term is 13 a refusal (Success false, the error "refused"). Each request is passed to seen.
func (n *node) follow(seen chan<- *raft.AppendEntriesRequest) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case rpc := <-n.t.Consumer():
				switch req := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					if seen != nil {
						seen <- req
					}
					resp := &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("f")}, Term: req.Term, Success: true}
					if k := len(req.Entries); k > 0 {
						resp.LastLog = req.Entries[k-1].Index
					}
					var err error
					if req.Term == 13 { // as hashicorp/raft's follower fails: Success false, and the error
						resp.Success, err = false, errors.New("refused")
					}
					rpc.Respond(resp, err)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
				default:
					rpc.Respond(nil, fmt.Errorf("unexpected %T", req))
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// openPipeline connects leader's wrapped transport to follower's, has the
// follower answer (follow), and opens leader's pipeline to it, which must be
// appendpipe's own when ours is set and the wrapped transport's otherwise.
// The test's end closes it.
func openPipeline(t *testing.T, leader, follower *node, ours bool) raft.AppendPipeline {
	t.Helper()
	leader.inner.Connect(follower.addr(), follower.inner)
	t.Cleanup(follower.follow(nil))
	p, err := leader.t.AppendEntriesPipeline("f", follower.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, isOurs := p.(*pipeline); isOurs != ours {
		t.Fatalf("got a %T, want appendpipe's own pipeline: %v", p, ours)
	}
	return p
}

func request(i int) *raft.AppendEntriesRequest {
	idx := uint64(i) * 2
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte("l:1")}, Term: uint64(i%12 + 1),
		PrevLogEntry: idx - 1, PrevLogTerm: 1, LeaderCommitIndex: idx - 2,
		Entries: []*raft.Log{
			{Index: idx, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("cmd %d", i)), AppendedAt: time.Unix(0, int64(i))},
			{Index: idx + 1, Term: 1, Type: raft.LogCommand, Data: []byte(strings.Repeat("x", i))},
		},
	}
}

// 300 pipelined requests (far more than MaxInFlight, so the sender waits on the
// answers) reach the follower intact and in order, and their answers come
// back in order, each on its own request's future.
func TestPipelineCarriesAppends(t *testing.T) {
	leader, follower := newNode(t, nil), newNode(t, nil)
	seen := make(chan *raft.AppendEntriesRequest, 400)
	defer follower.follow(seen)()
	p, err := leader.t.AppendEntriesPipeline("f", follower.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ok := p.(*pipeline); !ok {
		t.Fatalf("pipeline is a %T, not appendpipe's", p)
	}
	const n = 300
	sent := make(chan []*raft.AppendEntriesRequest, 1)
	go func() {
		var reqs []*raft.AppendEntriesRequest
		for i := 1; i <= n; i++ {
			req := request(i)
			if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
				t.Errorf("send %d: %v", i, err)
				break
			}
			reqs = append(reqs, req)
		}
		sent <- reqs
	}()
	timeout := time.After(10 * time.Second)
	for i := 1; i <= n; i++ {
		var f raft.AppendFuture
		select {
		case f = <-p.Consumer():
		case <-timeout:
			t.Fatalf("answer %d did not come", i)
		}
		req, resp := f.Request(), f.Response()
		if req.Term != uint64(i%12+1) || resp.Term != req.Term || resp.LastLog != req.Entries[1].Index || !resp.Success {
			t.Fatalf("answer %d: request term %d, response %+v", i, req.Term, resp)
		}
		if string(resp.ID) != "f" {
			t.Fatalf("answer %d: header %+v", i, resp.RPCHeader)
		}
		if err := f.Error(); err != nil {
			t.Fatalf("answer %d: error %v", i, err)
		}
		if f.Start().IsZero() {
			t.Fatalf("answer %d: no start time", i)
		}
	}
	reqs := <-sent
	for i, want := range reqs {
		got := <-seen
		for j := range want.Entries { // time.Unix gives a local time without a monotonic reading
			if !got.Entries[j].AppendedAt.Equal(want.Entries[j].AppendedAt) {
				t.Fatalf("request %d entry %d: AppendedAt %v, want %v", i+1, j, got.Entries[j].AppendedAt, want.Entries[j].AppendedAt)
			}
			got.Entries[j].AppendedAt = want.Entries[j].AppendedAt
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d arrived as\n%+v\nwant\n%+v", i+1, got, want)
		}
	}
	if s, _, _ := leader.t.Stats(); s != n {
		t.Fatalf("leader sent %d on pipes, want %d", s, n)
	}
	if _, s, _ := follower.t.Stats(); s != n {
		t.Fatalf("follower served %d from pipes, want %d", s, n)
	}
}

// A target that closes the connection instead of greeting (a peer from
// before appendpipe: its mux closes an unknown header) gets the wrapped
// transport's pipeline.
func TestFallsBackToInner(t *testing.T) {
	old, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	go func() {
		for {
			c, err := old.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	follower := newNode(t, nil)
	leader := newNode(t, func(raft.ServerAddress, time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", old.Addr().String(), time.Second)
	})
	p := openPipeline(t, leader, follower, false)
	if _, _, fb := leader.t.Stats(); fb != 1 {
		t.Fatalf("fallbacks = %d, want 1", fb)
	}
	if v := leader.t.PeerVersion(follower.addr()); v != 0 {
		t.Fatalf("PeerVersion of a target that did not greet = %d, want 0", v)
	}
	// The wrapped transport's pipeline works, through the follower's relay.
	f, err := p.AppendEntries(request(1), &raft.AppendEntriesResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Error(); err != nil || f.Response().LastLog != 3 {
		t.Fatalf("fallback append: %v, %+v", err, f.Response())
	}
}

// RPCs of the wrapped transport reach the consumer too.
func TestRelaysInnerRPCs(t *testing.T) {
	a, b := newNode(t, nil), newNode(t, nil)
	a.inner.Connect(b.addr(), b.inner)
	defer b.follow(nil)()
	var resp raft.RequestVoteResponse
	if err := a.t.RequestVote("b", b.addr(), &raft.RequestVoteRequest{Term: 5}, &resp); err != nil || !resp.Granted || resp.Term != 5 {
		t.Fatalf("vote through the relay: %v, %+v", err, resp)
	}
}

// Close ends a follower's connections even while a request waits for an
// answer that never comes; the leader's outstanding future then fails.
func TestCloseWithRequestInFlight(t *testing.T) {
	leader, follower := newNode(t, nil), newNode(t, nil)
	p, err := leader.t.AppendEntriesPipeline("f", follower.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := p.AppendEntries(request(1), &raft.AppendEntriesResponse{})
	if err != nil {
		t.Fatal(err)
	}
	select { // the follower's raft has the request and never answers
	case <-follower.t.Consumer():
	case <-time.After(5 * time.Second):
		t.Fatal("request did not arrive")
	}
	closed := make(chan error, 1)
	go func() { closed <- follower.t.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on an unanswered request")
	}
	select {
	case got := <-p.Consumer():
		if got.Error() == nil {
			t.Fatal("unanswered request reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's future never failed")
	}
	if f.Error() == nil {
		t.Fatal("future has no error")
	}
}

// dialPipe connects to n's pipe listener as a leader's pipeline would and
// reads its greeting; the connection has a 5 s deadline and closes when the
// test ends.
func dialPipe(t *testing.T, n *node) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", string(n.addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if g, err := r.ReadByte(); err != nil || g != minVersion {
		t.Fatalf("greeting: %v %x", err, g)
	}
	return c, r
}

// A follower that receives a frame it cannot decode closes the connection:
// the request's future fails rather than being answered.
func TestGarbageClosesConnection(t *testing.T) {
	follower := newNode(t, nil)
	defer follower.follow(nil)()
	c, r := dialPipe(t, follower)
	if _, err := c.Write([]byte{3, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	var g [1]byte
	if n, err := r.Read(g[:]); err == nil {
		t.Fatalf("follower answered garbage with %d bytes", n)
	}
	if _, s, _ := follower.t.Stats(); s != 0 {
		t.Fatalf("served %d requests from garbage", s)
	}
}

// An answer after which hashicorp/raft stops reading the pipeline (here the
// follower's error) reaches the consumer with its error, and every later
// send fails at once instead of parking for good: with two requests in
// flight, a send behind an answer nobody takes would wait forever, and
// replication to that follower with it (hashicorp/raft issue 612). Both for
// appendpipe's pipeline and for the wrapped transport's (the fallback).
func TestAnswerEndsPipeline(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			follower := newNode(t, nil)
			var dial func(raft.ServerAddress, time.Duration) (net.Conn, error)
			if fallback {
				dial = func(raft.ServerAddress, time.Duration) (net.Conn, error) { return nil, errors.New("no pipe") }
			}
			p := openPipeline(t, newNode(t, dial), follower, !fallback)
			// A reader like hashicorp/raft's: it takes answers until one
			// ends the pipeline, then reads no more.
			answers := make(chan error, 2)
			go func() {
				for range 2 {
					f := <-p.Consumer()
					answers <- f.Error()
				}
			}()
			refused := request(2)
			refused.Term = 13 // the follower refuses it
			for _, req := range []*raft.AppendEntriesRequest{request(1), refused} {
				if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range []error{nil, errors.New("refused")} {
				select {
				case err := <-answers:
					if fmt.Sprint(err) != fmt.Sprint(want) {
						t.Fatalf("answer %d: error %v, want %v", i, err, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("answer %d did not come", i)
				}
			}
			// Nobody reads the consumer any more, as in hashicorp/raft after
			// such an answer: sends must fail, not park.
			sent := make(chan error, 1)
			go func() {
				var err error
				for i := 0; i < 3 && err == nil; i++ {
					_, err = p.AppendEntries(request(20+i), &raft.AppendEntriesResponse{})
				}
				sent <- err
			}()
			select {
			case err := <-sent:
				if err == nil {
					t.Fatal("three sends after the pipeline ended all succeeded")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a send after the pipeline ended parked")
			}
		})
	}
}

// heartbeatInner is an in-memory transport that keeps the heartbeat handler
// it is given, so that a test can call it as a connection goroutine would.
type heartbeatInner struct {
	*raft.InmemTransport
	handler chan func(raft.RPC)
}

func (h heartbeatInner) SetHeartbeatHandler(cb func(raft.RPC)) { h.handler <- cb }

// TestCloseWaitsForHeartbeats: Close returns only after a heartbeat already
// in Raft's handler returned, and a heartbeat after Close is refused without
// reaching the handler (hashicorp/raft runs heartbeats on the transport's
// goroutines, after its own Shutdown too).
func TestCloseWaitsForHeartbeats(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, mem := raft.NewInmemTransport("")
	inner := heartbeatInner{mem, make(chan func(raft.RPC), 1)}
	tr := New(Config{Inner: inner, Listener: ln, Dial: func(raft.ServerAddress, time.Duration) (net.Conn, error) {
		return nil, errors.New("no dialing here")
	}, Timeout: time.Second})
	entered, release, calls := make(chan struct{}), make(chan struct{}), 0
	tr.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls++
		close(entered)
		<-release
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	hb := <-inner.handler
	heartbeat := func() raft.RPCResponse {
		ch := make(chan raft.RPCResponse, 1)
		hb(raft.RPC{Command: &raft.AppendEntriesRequest{}, RespChan: ch})
		return <-ch
	}

	first := make(chan raft.RPCResponse, 1)
	go func() { first <- heartbeat() }()
	<-entered
	closed := make(chan struct{})
	go func() {
		tr.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a heartbeat was in Raft's handler")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the heartbeat did")
	}
	if r := <-first; r.Error != nil {
		t.Fatalf("the heartbeat in the handler: %v", r.Error)
	}
	if r := heartbeat(); !errors.Is(r.Error, raft.ErrTransportShutdown) || calls != 1 {
		t.Fatalf("heartbeat after Close: %v, %d handler calls; want ErrTransportShutdown, 1", r.Error, calls)
	}
}

// chained is the i-th of a run of requests of one leader and term, each
// continuing the one before: entries 2i and 2i+1, after entry 2i-1.
func chained(i int, term uint64) *raft.AppendEntriesRequest {
	req := request(i)
	req.Term = term
	return req
}

// Requests that reach a follower together go to its Raft as one request
// (one log write, one fsync): the entries of all of them in order, the last
// one's commit index; each gets the answer to it, in order. A request that
// does not continue the run (another term) goes to Raft after it, alone.
func TestMergesRequestsThatArriveTogether(t *testing.T) {
	follower := newNode(t, nil)
	seen := make(chan *raft.AppendEntriesRequest, 10)
	defer follower.follow(seen)()
	c, r := dialPipe(t, follower)
	// One write, so that all five are in the follower's buffer at its first read.
	var sent []*raft.AppendEntriesRequest
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for i := 1; i <= 5; i++ {
		term := uint64(7)
		if i == 5 {
			term = 8
		}
		req := chained(i, term)
		sent = append(sent, req)
		if err := writeFrame(w, appendRequest(nil, req)); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if _, err := c.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{sent[3].Entries[1].Index, sent[3].Entries[1].Index, sent[3].Entries[1].Index, sent[3].Entries[1].Index, sent[4].Entries[1].Index} {
		p, err := readFrame(r)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		var resp raft.AppendEntriesResponse
		if rpcErr, err := decodeResponse(p, &resp); err != nil || rpcErr != nil || !resp.Success || resp.LastLog != want {
			t.Fatalf("answer %d: %+v (%v, %v), want success with last log %d", i+1, resp, rpcErr, err, want)
		}
	}
	var got []*raft.AppendEntriesRequest
	for len(seen) > 0 {
		got = append(got, <-seen)
	}
	if len(got) != 2 {
		t.Fatalf("Raft got %d requests, want 2 (four merged, then the one of another term)", len(got))
	}
	var entries []uint64
	for _, l := range got[0].Entries {
		entries = append(entries, l.Index)
	}
	if want := []uint64{2, 3, 4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(entries, want) {
		t.Fatalf("merged request carries entries %v, want %v", entries, want)
	}
	if m := got[0]; m.PrevLogEntry != 1 || m.Term != 7 || m.LeaderCommitIndex != sent[3].LeaderCommitIndex {
		t.Fatalf("merged request: prev %d term %d commit %d, want 1, 7, %d", m.PrevLogEntry, m.Term, m.LeaderCommitIndex, sent[3].LeaderCommitIndex)
	}
	if got[1].Term != 8 || got[1].PrevLogEntry != 9 || len(got[1].Entries) != 2 {
		t.Fatalf("the request of another term arrived as %+v", got[1])
	}
	if _, served, _ := follower.t.Stats(); served != 5 {
		t.Fatalf("served %d requests, want 5", served)
	}
}

// ackLog records what an AckObserver hears, as lines.
type ackLog struct {
	mu    sync.Mutex
	lines []string
}

func (a *ackLog) Stored(id raft.ServerID, pipe uint64, args *raft.AppendEntriesRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, fmt.Sprintf("stored %s pipe %d term %d last %d", id, pipe, args.Term, args.Entries[len(args.Entries)-1].Index))
}

func (a *ackLog) Ended(id raft.ServerID, pipe uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, fmt.Sprintf("ended %s pipe %d", id, pipe))
}

func (a *ackLog) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lines)
}

// A leader's pipeline tells Config.Acks of each success before
// hashicorp/raft sees the answer, and that it ended at the first refusal
// (once: closing it after says nothing more); a second pipeline has its own,
// higher serial, and its Close ends it.
func TestAcksReportStoredAndEnded(t *testing.T) {
	follower := newNode(t, nil)
	leader := newNode(t, nil)
	acks := &ackLog{}
	leader.t.cfg.Acks = acks
	p := openPipeline(t, leader, follower, true)
	refused := request(3)
	refused.Term = 13 // the follower refuses it
	for _, req := range []*raft.AppendEntriesRequest{request(1), request(2), refused} {
		if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		select {
		case f := <-p.Consumer():
			if i < 2 && len(acks.get()) <= i {
				t.Fatalf("answer %d reached the consumer before the observer heard of it", i)
			}
			_ = f.Error()
		case <-time.After(5 * time.Second):
			t.Fatalf("answer %d did not come", i)
		}
	}
	p.Close()
	want := []string{"stored f pipe 1 term 2 last 3", "stored f pipe 1 term 3 last 5", "ended f pipe 1"}
	if got := acks.get(); !slices.Equal(got, want) {
		t.Fatalf("heard %q, want %q", got, want)
	}
	q, err := leader.t.AppendEntriesPipeline("f", follower.addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.AppendEntries(request(4), &raft.AppendEntriesResponse{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-q.Consumer():
	case <-time.After(5 * time.Second):
		t.Fatal("the second pipeline's answer did not come")
	}
	q.Close()
	q.Close()
	want = append(want, "stored f pipe 2 term 5 last 9", "ended f pipe 2")
	if got := acks.get(); !slices.Equal(got, want) {
		t.Fatalf("heard %q, want %q", got, want)
	}
}

// A leader learns each follower's version from its greeting (PeerVersion):
// 0 before any pipeline connected, the greeting's after; a dial that does
// not connect (the follower is down) leaves it, one that connects to a
// follower greeting with another version replaces it. A version above 1
// still speaks the frames.
func TestPeerVersion(t *testing.T) {
	var down atomic.Bool
	leader := newNode(t, func(target raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		if down.Load() {
			return nil, errors.New("connection refused")
		}
		return net.DialTimeout("tcp", string(target), timeout)
	})
	v2, v1 := newNodeVersion(t, nil, 2), newNode(t, nil)
	if v := leader.t.PeerVersion(v2.addr()); v != 0 {
		t.Fatalf("PeerVersion before any pipeline = %d, want 0", v)
	}
	p := openPipeline(t, leader, v2, true)
	f, err := p.AppendEntries(request(1), &raft.AppendEntriesResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Error(); err != nil || f.Response().LastLog != 3 {
		t.Fatalf("append to a version 2 follower: %v, %+v", err, f.Response())
	}
	openPipeline(t, leader, v1, true)
	if a, b := leader.t.PeerVersion(v2.addr()), leader.t.PeerVersion(v1.addr()); a != 2 || b != 1 {
		t.Fatalf("PeerVersion = %d and %d, want 2 and 1", a, b)
	}
	down.Store(true)
	openPipeline(t, leader, v2, false) // the wrapped transport's, as the dial failed
	if v := leader.t.PeerVersion(v2.addr()); v != 2 {
		t.Fatalf("PeerVersion after a dial that did not connect = %d, want 2 still", v)
	}
}
