// Package appendpipe carries hashicorp/raft's pipelined AppendEntries — the
// stream of log entries a leader sends each follower — in a binary encoding
// of its own, on a connection of its own, instead of the msgpack of
// hashicorp/raft's NetworkTransport, whose reflection cost about a tenth of
// a lockd node's CPU under load (issue 9).
//
// A Transport wraps a raft.Transport (lockd's: a NetworkTransport on the
// node's peer port) and changes one method: AppendEntriesPipeline dials the
// target's pipe listener and speaks this package's frames there. Everything
// else — votes, heartbeats, the first, unpipelined appends of a follower
// catching up, snapshots — stays on the wrapped transport. A target that
// does not answer the pipe's greeting (a node from before this package, in
// a rolling upgrade) gets the wrapped transport's pipeline instead.
//
// The follower side serves every connection its listener accepts: each
// request becomes a raft.RPC on the Transport's Consumer channel, which
// also relays every RPC of the wrapped transport, so hashicorp/raft sees one
// transport. Requests on one connection are answered in order, each answer
// written as soon as the follower has it. Requests that arrived together
// (while Raft wrote the one before) are handed to Raft as one request when
// each continues the one before it: one log write and one fsync for all,
// the same answer to each.
package appendpipe

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The greeting is the byte a pipe server sends when it accepts a connection,
// before any frame: its version (Config.Version), 1 or more. Every version
// speaks this package's frames; what a version above 1 announces besides is
// the owner's to define (lockd: 2, the node applies batch entries), and a
// leader reads it back with PeerVersion. A client that reads no greeting (the
// peer closed the connection: it does not know the header) falls back to the
// wrapped transport; so does one greeted 0, which no version sends.
const minVersion byte = 1

// DefaultMaxInFlight is Config.MaxInFlight's default. With hashicorp/raft's
// two, a loaded follower always had the next request queued behind the one
// it was writing, and an entry waited out both fsyncs; with more in flight
// the leader sends what it appends at once, and the follower hands Raft all
// that arrived during its last write as one request (serve), one fsync. 8
// against 2 (make bench-ab, 64 clients, 4 pairs each): 1.12x the cycles/s
// at 0.91x the p99 for one group, 1.11x at 0.89x for 8 groups. Without the
// merge a deeper pipeline only sent more, smaller batches, each written
// after the other (128: 0.85x the cycles/s, 1.3x the p99).
const DefaultMaxInFlight = 8

// Inner is what a Transport wraps: a raft.Transport with pre-vote and Close,
// as hashicorp/raft's NetworkTransport is.
type Inner interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// Config is a Transport's wiring.
type Config struct {
	// Inner carries everything but the pipelined appends.
	Inner Inner
	// Listener accepts the connections other nodes' pipelines dial (lockd:
	// the mux layer of the group's pipe header).
	Listener net.Listener
	// Dial connects to a target's pipe listener (lockd: the same layer's
	// Dial, through the fault-test wrappers). It must return within about
	// timeout.
	Dial func(target raft.ServerAddress, timeout time.Duration) (net.Conn, error)
	// Timeout bounds each write of a request and each wait for a response,
	// and the dial with its greeting (lockd: the NetworkTransport's, 10 s).
	Timeout time.Duration
	// Logger gets the reasons connections end; nil discards them.
	Logger *slog.Logger
	// MaxInFlight bounds the requests a pipeline has sent and not yet had
	// answered (at least 2; 0: DefaultMaxInFlight). While that many are out,
	// the leader's next append waits, and the entries arriving meanwhile go
	// out together in the one after.
	MaxInFlight int
	// Acks, when set, is told what each of this Transport's own pipelines
	// learns of its follower's log (not the wrapped transport's pipelines,
	// nor single AppendEntries).
	Acks AckObserver
	// Version is the byte this node's pipe server greets with (0: 1). A
	// version above 1 tells the leaders that dial it something of the
	// owner's choosing about this node (PeerVersion).
	Version byte
}

// AckObserver hears, from a leader's pipelines, which followers stored what:
// raftstore counts the followers that hold an entry on disk (parallelsync.go).
// Its methods are called on a pipeline's goroutines and must not block.
type AckObserver interface {
	// Stored: the follower id answered success to args in args.Term, so its
	// log holds every entry of args, and the leader's log up to them; on
	// disk, as a follower answers only once its write is (hashicorp/raft's
	// appendEntries over lockd's logstore). pipe names the pipeline (a
	// serial, higher for each pipeline the Transport opens).
	Stored(id raft.ServerID, pipe uint64, args *raft.AppendEntriesRequest)
	// Ended: pipe failed or closed, and what it reported of id may no
	// longer hold (the follower may have restarted with another log). No
	// Stored from pipe follows it.
	Ended(id raft.ServerID, pipe uint64)
}

// Transport is a raft.Transport whose pipelined AppendEntries use this
// package's connections. Its methods are safe for concurrent use.
type Transport struct {
	Inner
	cfg      Config
	log      *slog.Logger
	consumer chan raft.RPC

	shutdown  chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{} // served connections, closed by Close

	// hbMu guards hbClosed and is held (read) by every heartbeat in Raft's
	// handler, so that Close waits for them (SetHeartbeatHandler).
	hbMu     sync.RWMutex
	hbClosed bool

	// versions: each target's greeting at this Transport's last dial that
	// connected (PeerVersion); 0 when that dial read none.
	versions sync.Map // raft.ServerAddress → byte

	pipes     atomic.Uint64 // pipelines opened (each one's serial)
	sent      atomic.Uint64 // requests sent on pipes
	served    atomic.Uint64 // requests served from pipes
	fallbacks atomic.Uint64 // pipelines that went to Inner
}

// New starts serving cfg.Listener and relaying cfg.Inner's RPCs; Close stops
// both.
func New(cfg Config) *Transport {
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxInFlight < 2 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	cfg.Version = max(cfg.Version, minVersion)
	t := &Transport{Inner: cfg.Inner, cfg: cfg, log: lg, consumer: make(chan raft.RPC),
		shutdown: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	t.wg.Add(2)
	go t.relay()
	go t.accept()
	return t
}

// Stats reports the requests sent and served on pipes and the pipelines
// that fell back to the wrapped transport, since New.
func (t *Transport) Stats() (sent, served, fallbacks uint64) {
	return t.sent.Load(), t.served.Load(), t.fallbacks.Load()
}

// PeerVersion returns the version target's pipe server greeted this
// Transport with when a pipeline last connected to it (one per leadership
// of a follower, and again after a pipeline breaks): 0 when that connection
// read no greeting (a node from before this package) or none has connected
// yet. A dial that does not connect (the target is down) leaves it as it
// was. Safe for concurrent use; does not block.
func (t *Transport) PeerVersion(target raft.ServerAddress) byte {
	v, _ := t.versions.Load(target)
	b, _ := v.(byte)
	return b
}

// Consumer returns the channel of every RPC for this node: the wrapped
// transport's and the pipes'.
func (t *Transport) Consumer() <-chan raft.RPC { return t.consumer }

// relay moves the wrapped transport's RPCs onto the consumer channel.
func (t *Transport) relay() {
	defer t.wg.Done()
	in := t.Inner.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.consumer <- rpc:
			case <-t.shutdown:
				return
			}
		case <-t.shutdown:
			return
		}
	}
}

// SetHeartbeatHandler gives the wrapped transport cb behind a guard: once
// Close has begun, a heartbeat is refused (raft.ErrTransportShutdown) instead
// of reaching cb, and Close waits for the heartbeats already in cb.
// hashicorp/raft answers heartbeats on the transport's connection goroutines,
// which its Shutdown does not wait for: a heartbeat that passed Raft's own
// shutdown check could write a new term to a log store its owner closed after
// Shutdown, and Raft panics when that write fails (the raftstore tests met it
// once, closing a node while its peers sent heartbeats). Called by
// raft.NewRaft.
func (t *Transport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		t.Inner.SetHeartbeatHandler(nil)
		return
	}
	t.Inner.SetHeartbeatHandler(func(rpc raft.RPC) {
		t.hbMu.RLock()
		defer t.hbMu.RUnlock()
		if t.hbClosed {
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		cb(rpc)
	})
}

// Close stops serving, closes every served connection and the wrapped
// transport, after the heartbeats in Raft's handler returned (later ones are
// refused). Pipelines already open keep their connections until closed.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.hbMu.Lock()
		t.hbClosed = true
		t.hbMu.Unlock()
		close(t.shutdown)
		t.cfg.Listener.Close()
		t.mu.Lock()
		for c := range t.conns {
			c.Close()
		}
		t.mu.Unlock()
	})
	err := t.Inner.Close()
	t.wg.Wait()
	return err
}

func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		conn, err := t.cfg.Listener.Accept()
		if err != nil {
			select {
			case <-t.shutdown:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Debug("appendpipe: accept", "err", err)
			continue
		}
		t.mu.Lock()
		select {
		case <-t.shutdown:
			t.mu.Unlock()
			conn.Close()
			return
		default:
		}
		t.conns[conn] = struct{}{}
		t.mu.Unlock()
		t.wg.Add(1)
		go t.serve(conn)
	}
}

// serve answers one connection's requests in order until it ends.
func (t *Transport) serve(conn net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.conns, conn)
		t.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriterSize(conn, 16<<10)
	if err := w.WriteByte(t.cfg.Version); err != nil {
		return
	}
	if err := w.Flush(); err != nil {
		return
	}
	respCh := make(chan raft.RPCResponse, 1)
	var out []byte
	var held *raft.AppendEntriesRequest // read while merging, and not merged
	for {
		req := held
		held = nil
		if req == nil {
			var err error
			if req, err = t.readRequest(conn, r); err != nil {
				return
			}
		}
		// The requests that came in behind req while Raft wrote the one
		// before (the leader pipelines up to MaxInFlight) go to Raft with
		// it as one: one log write, one fsync, instead of one each after
		// another.
		n := 1
		for len(req.Entries) < MaxMergedEntries && frameBuffered(r) {
			next, err := t.readRequest(conn, r)
			if err != nil {
				return
			}
			if !follows(req, next) {
				held = next
				break
			}
			req.Entries = append(req.Entries, next.Entries...)
			req.LeaderCommitIndex = max(req.LeaderCommitIndex, next.LeaderCommitIndex)
			n++
		}
		select {
		case t.consumer <- raft.RPC{Command: req, RespChan: respCh}:
		case <-t.shutdown:
			return
		}
		var resp raft.RPCResponse
		select {
		case resp = <-respCh:
		case <-t.shutdown:
			return
		}
		ae, _ := resp.Response.(*raft.AppendEntriesResponse)
		if ae == nil { // not one raft gives; a zero answer is a failure to the leader
			ae = &raft.AppendEntriesResponse{}
		}
		// Each request merged gets the merged one's answer: stored together,
		// or refused together (a request that follows a refused one would
		// have been refused too: its previous entry is not in the log).
		out = appendResponse(out[:0], ae, resp.Error)
		for range n {
			if err := writeFrame(w, out); err != nil {
				return
			}
		}
		// Each answer leaves at once, even with the next request already
		// read: holding it for the next one would make this commit wait
		// out the next batch's fsync.
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// MaxMergedEntries bounds a merged request (serve): a follower's pipe adds no
// further request to one that carries this many entries, so one request
// carries at most this many plus one leader request's (hashicorp/raft sends
// at most MaxAppendEntries per request).
const MaxMergedEntries = 4 * 512

// readRequest reads and decodes the next request on a served connection; an
// error ends the connection (it is logged when it is not the connection's
// end).
func (t *Transport) readRequest(conn net.Conn, r *bufio.Reader) (*raft.AppendEntriesRequest, error) {
	p, err := readFrame(r)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			t.log.Debug("appendpipe: reading a request", "remote", conn.RemoteAddr().String(), "err", err)
		}
		return nil, err
	}
	req, err := decodeRequest(p)
	if err != nil {
		t.log.Warn("appendpipe: closing a connection", "remote", conn.RemoteAddr().String(), "err", err)
		return nil, err
	}
	t.served.Add(1)
	return req, nil
}

// frameBuffered reports whether r already holds a whole frame, so that
// reading it does not wait for the network.
func frameBuffered(r *bufio.Reader) bool {
	b, _ := r.Peek(min(r.Buffered(), binary.MaxVarintLen64))
	n, k := binary.Uvarint(b)
	return k > 0 && n <= uint64(r.Buffered()-k)
}

// follows reports whether b continues a: the same leader and term, and b's
// previous entry is a's last (a's previous one when a carries none), so that
// one request carrying both asks of the follower what the two did in turn.
func follows(a, b *raft.AppendEntriesRequest) bool {
	lastIndex, lastTerm := a.PrevLogEntry, a.PrevLogTerm
	if n := len(a.Entries); n > 0 {
		lastIndex, lastTerm = a.Entries[n-1].Index, a.Entries[n-1].Term
	}
	return b.Term == a.Term && bytes.Equal(b.Leader, a.Leader) &&
		b.ProtocolVersion == a.ProtocolVersion && bytes.Equal(b.ID, a.ID) && bytes.Equal(b.Addr, a.Addr) &&
		b.PrevLogEntry == lastIndex && b.PrevLogTerm == lastTerm
}

// AppendEntriesPipeline opens a pipeline to target on this package's
// connection, or the wrapped transport's when target does not serve one.
func (t *Transport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	conn, err := t.dial(target)
	if err != nil {
		t.fallbacks.Add(1)
		t.log.Debug("appendpipe: falling back to the raft transport's pipeline", "target", string(target), "err", err)
		p, err := t.Inner.AppendEntriesPipeline(id, target)
		if err != nil {
			return nil, err
		}
		return guard(p), nil
	}
	return newPipeline(t, conn, id), nil
}

// ends reports whether hashicorp/raft stops reading a pipeline's answers at
// f: its pipelineDecode returns on an answer that is not a success (a
// follower that refuses or fails answers Success false, and a lost
// connection leaves the response zero) or that carries a newer term. It
// reads only the response: hashicorp/raft's own futures answer Error once.
//
// Past that answer nothing reads the pipeline's Consumer, while the sending
// loop may still hand the pipeline one more request before it notices (it
// selects between the decoder's exit and a new trigger). With two requests
// in flight both of the pipeline's channels are unbuffered, so that send
// parks until the decoder delivers an answer nobody takes, and the decoder
// parks delivering it: replication to that follower stops for good while its
// heartbeats go on, so no election heals it (hashicorp/raft issue 612;
// grafana/pyroscope#5518 traced the same in its NetworkTransport pipeline;
// lockd's chaos campaign met it as a follower that never caught up). A
// pipeline therefore fails every send once an answer ends it.
func ends(f raft.AppendFuture) bool {
	resp := f.Response()
	return !resp.Success || resp.Term > f.Request().Term
}

// deliver hands the answer f to hashicorp/raft on done, unless stop closes
// first, and reports whether the pipeline goes on. An answer that ends it
// (ends) first closes broken, on which every later send fails.
func deliver(f raft.AppendFuture, done chan<- raft.AppendFuture, broken chan struct{}, stop <-chan struct{}) bool {
	end := ends(f)
	if end {
		close(broken)
	}
	select {
	case done <- f:
		return !end
	case <-stop:
		return false
	}
}

// guarded is a pipeline of the wrapped transport with the same rule
// (deliver); the answer that ends it also closes it, which fails a send
// already parked inside it.
type guarded struct {
	p         raft.AppendPipeline
	done      chan raft.AppendFuture
	broken    chan struct{}
	stop      chan struct{}
	closeOnce sync.Once
}

func guard(p raft.AppendPipeline) *guarded {
	g := &guarded{p: p, done: make(chan raft.AppendFuture), broken: make(chan struct{}), stop: make(chan struct{})}
	go g.relay()
	return g
}

func (g *guarded) relay() {
	for {
		select {
		case f := <-g.p.Consumer():
			if !deliver(f, g.done, g.broken, g.stop) {
				g.p.Close() // fails a send parked inside it
				return
			}
		case <-g.stop:
			return
		}
	}
}

func (g *guarded) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	select {
	case <-g.broken:
		return nil, raft.ErrPipelineShutdown
	default:
	}
	return g.p.AppendEntries(args, resp)
}

func (g *guarded) Consumer() <-chan raft.AppendFuture { return g.done }

func (g *guarded) Close() error {
	g.closeOnce.Do(func() { close(g.stop) })
	return g.p.Close()
}

// dial connects to target's pipe listener and reads its greeting.
func (t *Transport) dial(target raft.ServerAddress) (net.Conn, error) {
	conn, err := t.cfg.Dial(target, t.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if t.cfg.Timeout > 0 {
		_ = conn.SetReadDeadline(time.Now().Add(t.cfg.Timeout))
	}
	var b [1]byte
	_, err = io.ReadFull(conn, b[:])
	t.versions.Store(target, b[0]) // 0 when nothing was read
	if err != nil {
		conn.Close()
		return nil, err
	}
	if b[0] < minVersion {
		conn.Close()
		return nil, errors.New("appendpipe: unknown greeting")
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn, nil
}

// pipeline is one leader→follower pipe: AppendEntries writes each request,
// decodeResponses reads the answers in order.
type pipeline struct {
	t        *Transport
	conn     net.Conn
	w        *bufio.Writer
	r        *bufio.Reader
	buf      []byte
	inflight chan *future
	done     chan raft.AppendFuture
	broken   chan struct{} // closed once an answer ends the pipeline (deliver)

	shutdown  chan struct{}
	closeOnce sync.Once

	// The follower and this pipeline's serial, for Config.Acks; ackMu
	// orders an answer's Stored against Close's Ended, so none follows it.
	id     raft.ServerID
	serial uint64
	ackMu  sync.Mutex
	ended  bool
}

func newPipeline(t *Transport, conn net.Conn, id raft.ServerID) *pipeline {
	p := &pipeline{t: t, conn: conn, w: bufio.NewWriterSize(conn, 64<<10), r: bufio.NewReaderSize(conn, 4<<10),
		id: id, serial: t.pipes.Add(1),
		// As in hashicorp/raft's own pipeline: decodeResponses takes one
		// request off the channel while it waits for its answer, and one
		// more may be sent meanwhile, so a buffer of MaxInFlight-2 lets
		// MaxInFlight be out.
		inflight: make(chan *future, t.cfg.MaxInFlight-2), done: make(chan raft.AppendFuture, t.cfg.MaxInFlight-2),
		broken: make(chan struct{}), shutdown: make(chan struct{})}
	go p.decodeResponses()
	return p
}

// AppendEntries sends one request; it blocks while Config.MaxInFlight
// requests await their answers. hashicorp/raft calls it from one goroutine.
func (p *pipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	select {
	case <-p.broken:
		return nil, raft.ErrPipelineShutdown
	default:
	}
	f := &future{start: time.Now(), args: args, resp: resp, ready: make(chan struct{})}
	if d := p.t.cfg.Timeout; d > 0 {
		_ = p.conn.SetWriteDeadline(time.Now().Add(d))
	}
	p.buf = appendRequest(p.buf[:0], args)
	if err := writeFrame(p.w, p.buf); err != nil {
		return nil, err
	}
	if err := p.w.Flush(); err != nil {
		return nil, err
	}
	if cap(p.buf) > 1<<20 { // one large batch does not pin its buffer
		p.buf = nil
	}
	p.t.sent.Add(1)
	select {
	case p.inflight <- f:
		return f, nil
	case <-p.broken:
		return nil, raft.ErrPipelineShutdown
	case <-p.shutdown:
		return nil, raft.ErrPipelineShutdown
	}
}

// decodeResponses answers the futures in the order their requests went out,
// until an answer ends the pipeline: it delivers that one and stops.
func (p *pipeline) decodeResponses() {
	for {
		select {
		case f := <-p.inflight:
			if d := p.t.cfg.Timeout; d > 0 {
				_ = p.conn.SetReadDeadline(time.Now().Add(d))
			}
			err := p.readResponse(f.resp)
			p.observe(f, err)
			f.respond(err)
			if !deliver(f, p.done, p.broken, p.shutdown) {
				return
			}
		case <-p.shutdown:
			return
		}
	}
}

func (p *pipeline) readResponse(resp *raft.AppendEntriesResponse) error {
	b, err := readFrame(p.r)
	if err != nil {
		return err
	}
	rpcErr, err := decodeResponse(b, resp)
	if err != nil {
		p.conn.Close() // the stream is lost: nothing after this decodes
		return err
	}
	return rpcErr
}

// observe tells Config.Acks of f's answer (err: the connection's or the
// follower's error) before hashicorp/raft sees it: Stored for a success in
// the request's own term, else Ended (the pipeline ends with such an answer:
// ends).
func (p *pipeline) observe(f *future, err error) {
	acks := p.t.cfg.Acks
	if acks == nil {
		return
	}
	p.ackMu.Lock()
	defer p.ackMu.Unlock()
	if p.ended {
		return
	}
	if err == nil && f.resp.Success && f.resp.Term == f.args.Term {
		acks.Stored(p.id, p.serial, f.args)
		return
	}
	p.endAcks()
}

// endAcks tells Config.Acks, once, that the pipeline ended; p.ackMu is held.
func (p *pipeline) endAcks() {
	if acks := p.t.cfg.Acks; acks != nil && !p.ended {
		p.ended = true
		acks.Ended(p.id, p.serial)
	}
}

// Consumer returns the answered futures, in order.
func (p *pipeline) Consumer() <-chan raft.AppendFuture { return p.done }

// Close closes the connection; requests without an answer get none.
func (p *pipeline) Close() error {
	p.closeOnce.Do(func() {
		close(p.shutdown)
		p.conn.Close()
		p.ackMu.Lock()
		p.endAcks()
		p.ackMu.Unlock()
	})
	return nil
}

// future is one pipelined request's raft.AppendFuture.
type future struct {
	start time.Time
	args  *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	err   error
	ready chan struct{}
}

func (f *future) respond(err error) {
	f.err = err
	close(f.ready)
}

// Error blocks until the response has been read, and returns the
// follower's error or the connection's.
func (f *future) Error() error {
	<-f.ready
	return f.err
}

func (f *future) Start() time.Time                      { return f.start }
func (f *future) Request() *raft.AppendEntriesRequest   { return f.args }
func (f *future) Response() *raft.AppendEntriesResponse { return f.resp }

var _ Inner = (*Transport)(nil)
