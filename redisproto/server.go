// Package redisproto is lockd's Redis front door: it reads RESP2/RESP3 and inline
// requests, answers the protocol plumbing (HELLO, CLIENT, INFO, COMMAND, ...)
// itself, parses keyspace commands into typed operations and hands them to the
// Store in pipeline batches. It imports no Raft: the Store it needs is declared
// here and satisfied by raftstore.
package redisproto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Store is what the front door needs from the replicated keyspace.
type Store interface {
	// Do executes one connection's batch of keyspace commands in order and
	// returns one reply per request. It may block until the writes commit.
	Do(ctx context.Context, reqs []command.Request) []resp.Value
	// Replicas is the number of replicas guaranteed to hold acknowledged writes
	// (what WAIT answers).
	Replicas() int
	// Stats are name/value pairs for INFO's raft section.
	Stats() [][2]string
	// KeyspaceInfo is INFO's db0 line ("keys=N,expires=M,avg_ttl=0"), or "".
	KeyspaceInfo() string
	// LockInfo are name/value pairs for INFO's locks section (lock records,
	// holders, waiters, sessions, blocked clients, lock counters).
	LockInfo() [][2]string
	// KillScripts stops the scripts in a dry run; false when there are none.
	KillScripts() bool
}

// Config configures the front door.
type Config struct {
	Addr   string // listen address, e.g. "127.0.0.1:6379"
	Limits Limits
	// RequirePass is the default user's password ("": nopass, no
	// authentication needed) until ACL SETUSER default replicates a definition.
	RequirePass string
	// MaxClients bounds the connected clients (0: 10000, Redis's default); one
	// more is answered "-ERR max number of clients reached" and closed.
	MaxClients int
	// MaxOutputBuffer bounds the bytes of replies and messages produced for
	// one client and not yet written to its socket (0: 64 MiB). It is
	// enforced while replies are produced (output.go): a client past it is
	// disconnected before a reply that would cross it is rendered, and a
	// pipeline is answered in batches whose replies fit it.
	MaxOutputBuffer int64
	// OutputStall disconnects a client that takes none of the replies
	// waiting for it for this long (0: 60 s; output.go).
	OutputStall time.Duration
	// MaxValueBytes is the largest value a reply may carry, as far as the
	// store allows one to be written (its -max-write-bytes; 0: 4 MiB). It
	// sizes the batches a pipeline of reads is cut into (output.go).
	MaxValueBytes int64
	// IdleTimeout closes a client that has sent nothing for this long
	// (Redis's timeout; 0: never). Subscribers, MONITOR clients and clients
	// blocked in a command are not idle, as in Redis.
	IdleTimeout time.Duration
	// AuthTimeout closes a client that has not authenticated this long after
	// it connected, while authentication is required (0: never).
	AuthTimeout time.Duration
	// AuthFailDelay slows down password guessing (authlimit.go): once one
	// address has failed authentication authFailFree times within
	// authFailWindow, its further AUTH attempts are answered at most one per
	// AuthFailDelay (0: no slow-down; failures are still counted and logged).
	AuthFailDelay time.Duration
	Logger        *slog.Logger
	Version       string // lockd's version, shown in INFO
	// ObserveCommand, if set, is told about every command answered (metrics).
	ObserveCommand CommandObserver
	// EnableMonitor allows MONITOR (every command of every client, to whoever
	// asks: an admin tool, off by default).
	EnableMonitor bool
	// TLS, when set, makes the port speak TLS only (as redis-server with
	// tls-port and port 0); nil is plain TCP.
	TLS *tls.Config
	// Redirect makes every connection cluster-aware from its first command:
	// a key whose group another node leads is answered -MOVED (moved.go)
	// instead of being forwarded. Only for deployments whose every client
	// follows redirects; off, a connection becomes cluster-aware when it
	// sends CLUSTER SLOTS|SHARDS|NODES, READONLY, READWRITE or ASKING.
	Redirect bool
}

// Server accepts RESP connections.
type Server struct {
	cfg Config
	// defaultUser is the "default" user Config.RequirePass makes, built once
	// (a password hash per command otherwise); read-only, shared.
	defaultUser command.User
	store       Store
	log         *slog.Logger
	ln          net.Listener
	start       time.Time

	nextID    atomic.Int64
	mu        sync.Mutex
	conns     map[*conn]struct{}
	closed    bool
	wg        sync.WaitGroup
	stats     stats
	pubsub    *broker
	tracking  atomic.Pointer[tracker] // CLIENT TRACKING's table (tracking.go), made on first use
	notify    atomic.Pointer[string]  // notify-keyspace-events (CONFIG SET)
	slowlog   slowlog
	monitors  monitors
	views     viewCache     // the cluster View for -MOVED (moved.go)
	authLimit *authLimiter  // failed authentications by address (authlimit.go)
	loop      *loop         // the event loop (loop.go), or nil: a goroutine per connection
	closing   chan struct{} // closed when Shutdown begins
	ctx       context.Context
	cancelCtx context.CancelFunc
}

type stats struct {
	connections atomic.Int64
	commands    atomic.Int64
	rejected    atomic.Int64
	// Security counters (auth.go, limits.go).
	noAuth            atomic.Int64 // commands refused NOAUTH
	noPerm            atomic.Int64 // commands refused NOPERM
	authFailures      atomic.Int64 // AUTH / HELLO AUTH / HTTP credentials refused
	maxClients        atomic.Int64 // connections refused at MaxClients
	outputDisconnects atomic.Int64 // clients disconnected past MaxOutputBuffer
	protocolErrors    atomic.Int64 // malformed requests and requests over Limits
	acceptErrors      atomic.Int64 // failed accepts, retried (Serve)
	idleTimeouts      atomic.Int64 // clients closed idle past IdleTimeout
	authTimeouts      atomic.Int64 // clients closed unauthenticated past AuthTimeout
	authThrottled     atomic.Int64 // AUTH attempts slowed down or refused (authlimit.go)
}

// Listen binds cfg.Addr. Serve must be called to accept connections.
func Listen(cfg Config, store Store) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("RESP port %s: %w", cfg.Addr, err)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, authLimit: newAuthLimiter(cfg.AuthFailDelay, cfg.Logger), defaultUser: command.DefaultUser(cfg.RequirePass), store: store, log: cfg.Logger, ln: ln, start: time.Now(),
		conns: map[*conn]struct{}{}, closing: make(chan struct{}), ctx: ctx, cancelCtx: cancel, pubsub: newBroker()}, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until Close. It returns nil after Close, and an
// error only when the listener was closed by something else. Every other
// accept error — out of descriptors (EMFILE, ENFILE), out of memory, a
// connection reset before it was accepted — is counted, logged at most once
// per acceptLogEvery, and retried after a pause that starts at
// acceptBackoffMin and doubles to acceptBackoffMax while the errors go on, as
// net/http's server does: a node out of descriptors goes on serving the
// connections it has and accepts again once some close.
func (s *Server) Serve() error {
	var backoff time.Duration
	var lastLog time.Time
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			s.stats.acceptErrors.Add(1)
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			if now := time.Now(); now.Sub(lastLog) >= acceptLogEvery {
				lastLog = now
				s.log.Warn("RESP accept failed; retrying", "err", err, "retry_in", backoff,
					"accept_errors_total", s.stats.acceptErrors.Load())
			}
			s.sleep(backoff)
			continue
		}
		backoff = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		if len(s.conns) >= s.maxClients() { // limits.go
			s.mu.Unlock()
			s.refuse(nc)
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.stats.connections.Add(1)
		c.initAuth()
		if s.loop != nil && s.loop.take(c) {
			continue
		}
		go s.serveConn(c)
	}
}

// The accept loop's pause after an error (Serve).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	acceptLogEvery   = 10 * time.Second
)

// sleep waits d, or less if Shutdown begins.
func (s *Server) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closing:
	}
}

// serveConn serves c on this goroutine until it ends or the loop takes it.
func (s *Server) serveConn(c *conn) {
	if !c.serve() {
		s.endConn(c)
	}
}

// endConn closes c and forgets it; its owner (its goroutine or the loop) calls
// it once, when it stops serving c.
func (s *Server) endConn(c *conn) {
	s.monitors.remove(c)
	c.dropSubscriptions()
	s.dropTracking(c)
	c.closeSocket()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *Server) Close() error {
	return s.Shutdown(0)
}

// Shutdown stops accepting connections and drains the open ones: no further
// request is read, the requests already read are answered (their writes may be
// committing), then the connections close. After drain (0: at once) the
// remaining connections are closed even if they are still waiting for the
// store. The store must stay open until Shutdown returns, so that nothing a
// client never hears about is applied after its connection closed.
func (s *Server) Shutdown(drain time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	err := s.ln.Close()
	for c := range s.conns {
		if drain > 0 {
			c.stopReading() // answer what was read
		} else {
			c.kill()
		}
	}
	s.mu.Unlock()
	if s.loop != nil {
		s.loop.wake() // it ends its connections after the turn it is in
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	if drain > 0 {
		select {
		case <-done:
		case <-time.After(drain):
			s.mu.Lock()
			for c := range s.conns {
				c.kill()
			}
			s.mu.Unlock()
		}
	}
	s.cancelCtx()
	<-done
	return err
}

// shuttingDown reports whether Shutdown has begun.
func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// clients returns a snapshot of the connected clients, ordered by id.
func (s *Server) clients() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].id < out[j-1].id; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// SetStore sets the store before Serve is called (the assembly binds the RESP port
// before it opens the store, so that a busy port is reported first).
func (s *Server) SetStore(st Store) { s.store = st }

// Counters are the front door's running totals, for metrics.
type Counters struct {
	Connections int64 // accepted since start
	Commands    int64 // processed since start
	Clients     int   // connected now
}

// Counters reads the running totals.
func (s *Server) Counters() Counters {
	return Counters{Connections: s.stats.connections.Load(), Commands: s.stats.commands.Load(), Clients: len(s.clients())}
}
