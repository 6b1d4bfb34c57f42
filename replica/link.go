// Package replica is the replica side of Redis's replication protocol: a Link
// follows one Redis master as a Redis 7 replica does (handshake, PSYNC, the RDB
// transfer, then the command stream and REPLCONF ACK) and feeds what it reads
// to a Sink, which commits it (lockd: through Raft). The Link holds no data of
// its own: where to resume is the Sink's Position, so a restart resumes from
// what was committed, and the master is told (ACK) only what was committed.
// See DESIGN.md.
package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/rdb"
)

// Position is where a replica stands in a master's replication stream: the
// master's replication id and the offset of the next byte to read, counting
// from 0 — Redis's master_repl_offset as a replica reports it (INFO's
// slave_repl_offset, REPLCONF ACK); PSYNC asks for Offset+1, Redis numbering
// the backlog's bytes from 1. DB is the database the stream has selected at
// Offset (Redis keeps it in the cached master and in the RDB's repl-stream-db):
// commands after Offset run in DB until the stream sends a SELECT.
// The zero value means never synced: the link asks for a full resync.
type Position struct {
	ReplID string
	Offset int64
	DB     int
}

// Command is one command of the stream with the offset just after it.
// A MULTI … EXEC block is one Command with Tx set (Args nil) and End the
// offset after EXEC; TxDB[i] is the database Tx[i] runs in (a transaction
// may SELECT between its commands) and DB the database selected at EXEC.
// For a single command DB is the database it runs in. The slices are the
// Sink's: the Link does not touch them after Apply returns.
type Command struct {
	DB   int
	Args [][]byte
	Tx   [][][]byte
	TxDB []int
	End  int64
}

// Position returns where the stream stands after c: the sink records it
// (with the replication id it holds) when it commits c.
func (c Command) Position(replID string) Position {
	return Position{ReplID: replID, Offset: c.End, DB: c.DB}
}

// Sink is what the link feeds. Every method may block (it commits through
// Raft) and gets the context of Run; an error stops the session, and the link
// reconnects (with backoff) and resumes from Sink.Position(). The methods are
// called from one goroutine at a time, in stream order.
type Sink interface {
	// Position is where to PSYNC from: durable, as committed. Between
	// BeginFull and EndFull it must not report the position of data the
	// sink has dropped (report the zero Position, or the old one if the old
	// data is still there).
	Position() Position
	// BeginFull says a full resync starts at at (the master's +FULLRESYNC):
	// the sink drops what it replicated before, if it wants.
	BeginFull(ctx context.Context, at Position) error
	// Load is one key of the RDB, also a Skipped one, so the sink can count
	// them. Entries arrive in file order.
	Load(ctx context.Context, e rdb.Entry) error
	// EndFull says the RDB is loaded; the stream starts at at.Offset, in
	// at.DB. The sink records at.
	EndFull(ctx context.Context, at Position) error
	// Apply is commands in stream order; the sink commits each with its End
	// (Command.Position). It returns once they are committed: the master is
	// then told (REPLCONF ACK) that it may count them as replicated.
	Apply(ctx context.Context, cmds []Command) error
	// Advance says the stream moved past bytes that carry no command (PING,
	// REPLCONF GETACK, SELECT) or switched replication id (+CONTINUE with a
	// new id): the sink may record at (optional durability; a sink that
	// does not resumes a little earlier and reads those bytes again).
	Advance(ctx context.Context, at Position) error
}

// Config says which master to follow and how.
type Config struct {
	// Addr is the master's host:port.
	Addr string
	// User and Password authenticate (AUTH [user] password) when Password
	// is set, as masteruser and masterauth do.
	User, Password string
	// TLS, when set, wraps the connection (ServerName defaults to the host).
	TLS *tls.Config
	// ListenPort is sent as REPLCONF listening-port: the port the master's
	// INFO lists for this replica.
	ListenPort int
	// Dial opens the connection; nil uses a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger gets the link's events; nil discards them.
	Logger *slog.Logger
	// MaxBatch is the most commands one Apply carries (default 512).
	MaxBatch int
	// HandshakeTimeout bounds the dial and each reply of the handshake;
	// ReadTimeout is the longest the master may stay silent during the
	// transfer and the stream (it PINGs every 10 s and sends newlines while
	// it prepares the RDB). Both default to 60 s, Redis's repl-timeout.
	HandshakeTimeout, ReadTimeout time.Duration
}

// Defaults.
const (
	defaultMaxBatch = 512
	defaultTimeout  = 60 * time.Second
	// ackEvery is how often the link sends REPLCONF ACK (a Redis replica's
	// replicationCron period) and, during a full sync, a newline.
	ackEvery = time.Second
	// retryFirst and retryMax bound the pause between sessions: a Redis
	// replica retries every second; a master that stays away is tried
	// every 10 s at most.
	retryFirst = time.Second
	retryMax   = 10 * time.Second
)

// State is the link's state in Redis's words (INFO's master_link_status
// and ROLE).
type State string

// The states a link goes through.
const (
	StateConnect    State = "connect"    // between sessions, waiting to dial
	StateConnecting State = "connecting" // dialing and handshaking
	StateSync       State = "sync"       // receiving and loading the RDB
	StateConnected  State = "connected"  // following the command stream
)

// Status is a snapshot of the link for INFO replication.
type Status struct {
	State State
	Host  string
	Port  int
	// SyncInProgress is true while an RDB is received and loaded.
	SyncInProgress bool
	// Offset is the offset the link acknowledges: every byte before it is
	// committed by the Sink or carries no command.
	Offset int64
	// ReplID is the master's replication id the link follows.
	ReplID string
	// LastIO is the time of the last read from the master.
	LastIO time.Time
	// SyncLeftBytes is how much of the RDB is still to come, -1 when the
	// master streams it without announcing its size (diskless); SyncReadBytes
	// how much has arrived.
	SyncLeftBytes, SyncReadBytes int64
	// FullSyncs and PartialSyncs count +FULLRESYNC and +CONTINUE replies.
	FullSyncs, PartialSyncs int64
	// Err is the error that ended the last session, "" once a session
	// follows the stream again.
	Err string
}

// Errors a session ends with (wrapped with detail).
var (
	// ErrProtocol is a reply or stream byte a Redis master does not send.
	ErrProtocol = errors.New("replica: protocol error from master")
	// ErrTooLarge is a bulk above MaxBulk, an array above MaxArgs or a
	// command above MaxCommand in the stream.
	ErrTooLarge = errors.New("replica: command too large")
	// ErrRefused is an error reply to the handshake (AUTH, PING, PSYNC).
	ErrRefused = errors.New("replica: master refused")
	// ErrNotReady is -LOADING or -NOMASTERLINK to PSYNC: retry later.
	ErrNotReady = errors.New("replica: master not ready")
	// ErrTimeout is a master silent for longer than the timeout.
	ErrTimeout = errors.New("replica: master timed out")
)

// Link is a replication link to one Redis master. Create it with New, run it
// with Run; Status may be called from any goroutine.
type Link struct {
	cfg  Config
	sink Sink
	log  *slog.Logger
	host string
	port int

	lastIO    atomic.Int64 // unix nanoseconds of the last read
	acked     atomic.Int64 // the offset the next ACK reports
	streaming atomic.Bool  // ACKs (true) or newlines (false) on the ticker
	syncLeft  atomic.Int64
	syncRead  atomic.Int64

	mu      sync.Mutex
	state   State
	replID  string
	full    int64
	partial int64
	err     string
}

// New returns a link that follows cfg.Addr into sink; nothing happens until
// Run.
func New(cfg Config, sink Sink) *Link {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = defaultMaxBatch
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = defaultTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = defaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Link{cfg: cfg, sink: sink, log: log.With("master", cfg.Addr), state: StateConnect}
	if h, p, err := net.SplitHostPort(cfg.Addr); err == nil {
		l.host = h
		l.port, _ = strconv.Atoi(p)
	}
	return l
}

// Run follows the master until ctx ends, and returns ctx's error. A session
// that fails (the master goes away, refuses, times out, sends what a master
// does not, or the Sink fails) is logged, shown in Status.Err, and followed
// by another after a pause that doubles from 1 s to at most 10 s and starts
// again at 1 s once a session has reached the stream.
func (l *Link) Run(ctx context.Context) error {
	wait := retryFirst
	for {
		reached, err := l.session(ctx)
		if ctx.Err() != nil {
			l.setState(StateConnect)
			return ctx.Err()
		}
		if reached {
			wait = retryFirst
		}
		if err == nil { // a session ends with an error; be safe
			err = errors.New("replica: session ended")
		}
		l.mu.Lock()
		l.state = StateConnect
		l.err = err.Error()
		l.mu.Unlock()
		l.log.Warn("replication session ended", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// Status returns the link's state now.
func (l *Link) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{
		State:          l.state,
		Host:           l.host,
		Port:           l.port,
		SyncInProgress: l.state == StateSync,
		Offset:         l.acked.Load(),
		ReplID:         l.replID,
		FullSyncs:      l.full,
		PartialSyncs:   l.partial,
		Err:            l.err,
	}
	if ns := l.lastIO.Load(); ns != 0 {
		st.LastIO = time.Unix(0, ns)
	}
	if st.SyncInProgress {
		st.SyncLeftBytes, st.SyncReadBytes = l.syncLeft.Load(), l.syncRead.Load()
	}
	return st
}

func (l *Link) setState(s State) {
	l.mu.Lock()
	l.state = s
	if s == StateConnected {
		l.err = ""
	}
	l.mu.Unlock()
}

// session is one connection: dial, handshake, PSYNC, the RDB if the master
// wants a full resync, then the stream until it fails. reached says whether
// it got to the stream.
func (l *Link) session(ctx context.Context) (reached bool, err error) {
	l.setState(StateConnecting)
	conn, err := l.dial(ctx)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()

	rd := newReader(conn, &l.lastIO)
	w := &writer{conn: conn, timeout: l.cfg.ReadTimeout}
	done := make(chan struct{})
	defer close(done)

	rd.timeout = l.cfg.HandshakeTimeout
	w.timeout = l.cfg.HandshakeTimeout
	pos := l.sink.Position()
	l.acked.Store(pos.Offset)
	res, err := l.handshake(rd, w, pos)
	if err != nil {
		return false, ctxErr(ctx, err)
	}
	rd.timeout = l.cfg.ReadTimeout
	w.timeout = l.cfg.ReadTimeout
	l.streaming.Store(false)
	go l.ticker(w, done)

	switch {
	case res.full:
		l.mu.Lock()
		l.full++
		l.replID = res.at.ReplID
		l.mu.Unlock()
		l.log.Info("full resync", "replid", res.at.ReplID, "offset", res.at.Offset)
		l.setState(StateSync)
		if pos, err = l.transfer(ctx, rd, res.at); err != nil {
			return false, ctxErr(ctx, err)
		}
	default:
		l.mu.Lock()
		l.partial++
		l.replID = res.at.ReplID
		l.mu.Unlock()
		l.log.Info("partial resync", "replid", res.at.ReplID, "offset", res.at.Offset)
		if res.at.ReplID != pos.ReplID {
			if err := l.sink.Advance(ctx, res.at); err != nil {
				return false, ctxErr(ctx, err)
			}
		}
		pos = res.at
	}
	l.acked.Store(pos.Offset)
	l.streaming.Store(true)
	// The first ACK at once: a diskless master starts the stream on it.
	if err := w.ack(pos.Offset); err != nil {
		return false, ctxErr(ctx, err)
	}
	l.setState(StateConnected)
	return true, ctxErr(ctx, l.follow(ctx, rd, w, pos))
}

// ctxErr prefers ctx's error to the I/O error closing the connection caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (l *Link) dial(ctx context.Context) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, l.cfg.HandshakeTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if l.cfg.Dial != nil {
		conn, err = l.cfg.Dial(dctx, "tcp", l.cfg.Addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(dctx, "tcp", l.cfg.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("replica: dial %s: %w", l.cfg.Addr, err)
	}
	if l.cfg.TLS == nil {
		return conn, nil
	}
	tc := l.cfg.TLS
	if tc.ServerName == "" {
		tc = tc.Clone()
		tc.ServerName = l.host
	}
	t := tls.Client(conn, tc)
	if err := t.HandshakeContext(dctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("replica: tls with %s: %w", l.cfg.Addr, err)
	}
	return t, nil
}

// ticker sends, every second until done, REPLCONF ACK with the acknowledged
// offset while the link follows the stream, or a newline while it receives
// and loads an RDB (as a loading Redis replica does, so the master sees it
// alive). A failed write closes the connection: the session's read fails.
func (l *Link) ticker(w *writer, done <-chan struct{}) {
	t := time.NewTicker(ackEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var err error
		if l.streaming.Load() {
			err = w.ack(l.acked.Load())
		} else {
			err = w.newline()
		}
		if err != nil {
			w.conn.Close()
			return
		}
	}
}
