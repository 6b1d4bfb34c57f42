package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/lockd/lockd/internal/readn"
)

// Handler answers one request payload with one response payload. It is
// called concurrently, from one goroutine per request, and may block: other
// requests on the same connection go on meanwhile. Its ctx ends when the
// request's connection closes or Serve stops (the response is then dropped),
// or when the caller gives up on the request with a cancel frame
// (Client.CallCancelable): context.Cause(ctx) is then ErrCanceledByCaller, and
// a response the handler still returns is sent, and discarded by the client.
// A handler that waits (for a lock, for a list) should withdraw and return
// when ctx ends. req is the handler's to keep. A response above
// DefaultMaxFrame is not sent: the caller gets an error wrapping ErrUnknown
// and ErrFrameTooLarge.
type Handler func(ctx context.Context, req []byte) []byte

// ErrCanceledByCaller is the cause (context.Cause) of a Handler's ctx that
// ended because the client sent a cancel frame for its request: the caller
// gave up waiting for the response (its ctx ended; see
// Client.CallCancelable).
var ErrCanceledByCaller = errors.New("forward: request canceled by the caller")

// maxInFlightPerConn bounds the handler calls one connection may have
// running; the server stops reading that connection while at the bound.
const maxInFlightPerConn = 1024

// Serve accepts connections on ln and answers their requests with h until ln
// is closed or ctx ends (Serve then closes ln itself). It runs the accept
// loop on the calling goroutine and one goroutine per connection, which
// reads requests and starts one goroutine per request to call h; responses
// are written as handlers return, so requests on one connection may be
// answered out of order (each response carries its request's id).
//
// A connection runs at most 1024 handlers at once; at that bound Serve stops
// reading it (after the next request frame's header) until one returns, so a
// cancel frame behind that request waits too. A cancel frame (type 4) ends
// the ctx of its request's handler if that still runs, with cause
// ErrCanceledByCaller, and is otherwise ignored. Frames above
// DefaultMaxFrame, frames of the wrong type, a cancel frame with a payload
// and a wrong preamble close the connection. Temporary accept errors are
// logged and retried with backoff.
//
// Before returning, Serve closes every connection it accepted, cancels the
// handlers' ctx and waits for them to return: requests still in flight are
// not answered (their callers get ErrUnknown). It returns nil when stopped by
// ln's closing or ctx, else the accept error. A nil log discards output.
func Serve(ctx context.Context, ln net.Listener, h Handler, log *slog.Logger) error {
	return serve(ctx, ln, h, log, DefaultMaxFrame)
}

type server struct {
	h        Handler
	log      *slog.Logger
	maxFrame uint64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func serve(ctx context.Context, ln net.Listener, h Handler, log *slog.Logger, maxFrame int) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{h: h, log: log, maxFrame: uint64(maxFrame), conns: make(map[net.Conn]struct{})}
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { ln.Close() })

	var err error
	var backoff time.Duration
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() != nil || errors.Is(aerr, net.ErrClosed) {
				break
			}
			var te interface{ Temporary() bool }
			if errors.As(aerr, &te) && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				log.Warn("forward: accept failed; retrying", "err", aerr, "backoff", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				continue
			}
			err = fmt.Errorf("forward: accept: %w", aerr)
			break
		}
		backoff = 0
		s.mu.Lock()
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(sctx, nc)
	}

	stop()
	ln.Close()
	cancel()
	s.mu.Lock()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// serveConn reads the requests of one connection and starts their handlers.
func (s *server) serveConn(ctx context.Context, nc net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	var handlers sync.WaitGroup
	log := s.log
	if ra := nc.RemoteAddr(); ra != nil {
		log = log.With("remote", ra.String())
	}
	defer func() {
		cancel()
		nc.Close()
		handlers.Wait()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		s.wg.Done()
	}()

	br := bufio.NewReaderSize(nc, 64<<10)
	var pre [len(preamble)]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		log.Debug("forward: connection closed before its preamble", "err", err)
		return
	}
	if pre != preamble {
		log.Warn("forward: bad preamble; closing connection", "preamble", fmt.Sprintf("%q", pre[:]))
		return
	}
	log.Debug("forward: connection open")

	out := &responses{nc: nc, log: log}
	respond := out.send

	sem := make(chan struct{}, maxInFlightPerConn)
	run := &running{m: make(map[uint64]*runningCall)}
	var hdr [headerLen]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				log.Debug("forward: connection lost", "err", err)
			}
			return
		}
		typ, n, id := parseHeader(&hdr)
		switch typ {
		case typeRequest:
		case typeCancel:
			if n != 0 {
				log.Warn("forward: cancel frame with a payload; closing connection", "bytes", n)
				return
			}
			run.cancel(id)
			continue
		default:
			log.Warn("forward: unexpected frame type; closing connection", "type", typ)
			return
		}
		if n > s.maxFrame {
			log.Warn("forward: request frame too large; closing connection", "bytes", n, "max", s.maxFrame)
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		// Memory follows the bytes received, not the length announced.
		req, err := readn.Read(br, int(n))
		if err != nil {
			log.Debug("forward: connection lost in a request", "err", err)
			return
		}
		hctx, hcancel := context.WithCancelCause(ctx)
		rc := run.add(id, hcancel)
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			defer func() { <-sem }()
			resp := s.h(hctx, req)
			run.done(id, rc)
			hcancel(nil)
			if ctx.Err() != nil {
				return // the connection is closing: nobody to answer
			}
			if uint64(len(resp)) > s.maxFrame {
				log.Warn("forward: response too large; sending an error instead", "bytes", len(resp), "max", s.maxFrame)
				msg := fmt.Sprintf("response of %d bytes exceeds the server's max frame of %d", len(resp), s.maxFrame)
				respond(typeError, id, append([]byte{codeTooLarge}, msg...))
				return
			}
			respond(typeResponse, id, resp)
		}()
	}
}

// running holds the cancel funcs of a connection's running handlers, by
// request id: at most one entry per running handler (an entry is removed
// when its handler returns), so it never outgrows maxInFlightPerConn.
type running struct {
	mu sync.Mutex
	m  map[uint64]*runningCall
}

// runningCall is one handler's entry; its identity tells a handler's entry
// from a later request's that reused the id (a client never does, on one
// connection).
type runningCall struct {
	cancel context.CancelCauseFunc
}

// add records the cancel of the handler about to run for request id and
// returns its entry, for done. A running handler's entry for the same id is
// replaced: a cancel frame then reaches the newer request only.
func (r *running) add(id uint64, cancel context.CancelCauseFunc) *runningCall {
	rc := &runningCall{cancel: cancel}
	r.mu.Lock()
	r.m[id] = rc
	r.mu.Unlock()
	return rc
}

// done removes rc, whose handler has returned, unless a later request with
// its id replaced it.
func (r *running) done(id uint64, rc *runningCall) {
	r.mu.Lock()
	if r.m[id] == rc {
		delete(r.m, id)
	}
	r.mu.Unlock()
}

// cancel ends the ctx of request id's handler with ErrCanceledByCaller if it
// still runs; otherwise (finished, or never seen) it does nothing.
func (r *running) cancel(id uint64) {
	r.mu.Lock()
	rc := r.m[id]
	r.mu.Unlock()
	if rc != nil {
		rc.cancel(ErrCanceledByCaller)
	}
}

// responses writes a connection's response frames. Handlers that finish
// together (their batches committed in one Raft round) share a write: a
// handler queues its frame, and the one that finds no write under way writes
// everything queued, its own and what the others queue meanwhile (one
// vectored write, payloads not copied), until the queue is empty. With a
// write per response, the leader's forwarding connections cost a system call
// per forwarded batch.
type responses struct {
	nc  net.Conn
	log *slog.Logger

	mu      sync.Mutex
	pending net.Buffers // headers and payloads queued for the next write
	writing bool        // a handler is writing (and will write what is queued)
	broken  bool        // a write failed: the connection is closed, nothing more is sent
}

// send queues one response frame and, unless another handler is writing,
// writes the queue. Called by the handlers' goroutines; blocks while it
// writes. A failed write closes the connection (the read loop then ends and
// cleans up).
func (r *responses) send(typ byte, id uint64, payload []byte) {
	h := new([headerLen]byte)
	putHeader(h, typ, len(payload), id)
	r.mu.Lock()
	if r.broken {
		r.mu.Unlock()
		return
	}
	r.pending = append(r.pending, h[:])
	if len(payload) > 0 {
		r.pending = append(r.pending, payload)
	}
	if r.writing {
		r.mu.Unlock()
		return
	}
	r.writing = true
	for len(r.pending) > 0 && !r.broken {
		bufs := r.pending
		r.pending = nil
		r.mu.Unlock()
		_, err := bufs.WriteTo(r.nc)
		r.mu.Lock()
		if err != nil {
			r.broken = true
			r.pending = nil
			r.log.Debug("forward: writing responses failed; closing connection", "err", err)
			r.nc.Close()
		}
	}
	r.writing = false
	r.mu.Unlock()
}
