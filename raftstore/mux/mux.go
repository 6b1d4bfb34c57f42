package mux

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// DefaultHeaderTimeout bounds how long an inbound connection may take to
	// send its header byte before it is closed.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultQueueLen is how many routed connections may wait in one Layer
	// for its owner to Accept them before further ones are refused.
	DefaultQueueLen = 64
)

// Errors returned by this package. ErrClosed wraps net.ErrClosed, so
// errors.Is(err, net.ErrClosed) holds for it, as callers of a net.Listener
// (hashicorp/raft's NetworkTransport among them) expect.
var (
	// ErrClosed: the Layer or the Mux has been closed.
	ErrClosed = fmt.Errorf("mux: %w", net.ErrClosed)
	// ErrUnspecifiedAddr: the address peers would be told to dial is a
	// wildcard (0.0.0.0, ::, or an empty host). Raft stores every member's
	// address in its configuration, so it must be one that other nodes can
	// reach; give an advertise address when binding to all interfaces.
	ErrUnspecifiedAddr = errors.New("mux: no advertisable address: the bind address is unspecified and no advertise address was given")
	// ErrServing: Serve was called a second time.
	ErrServing = errors.New("mux: Serve already called")
)

// errQueueFull is the reason a routed connection is refused by a Layer whose
// owner is not accepting; it is only logged.
var errQueueFull = errors.New("layer queue full")

// Option tunes a Mux at Listen time.
type Option func(*options)

type options struct {
	headerTimeout time.Duration
	queueLen      int
	tls           *TLS
	secret        *Secret
}

// WithHeaderTimeout sets how long an inbound connection may take to send its
// header byte (DefaultHeaderTimeout if d <= 0).
func WithHeaderTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.headerTimeout = d
		}
	}
}

// WithQueueLen sets how many routed connections each Layer holds for its
// owner before refusing new ones (DefaultQueueLen if n <= 0).
func WithQueueLen(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.queueLen = n
		}
	}
}

// Mux owns one TCP listener and hands every inbound connection to the Layer
// registered for the header byte that the dialer sent first.
//
// The accept loop (Serve) never reads from a connection: each one is handed
// to its own goroutine that reads the header under a deadline and queues the
// connection on its Layer without blocking, so neither a silent dialer nor a
// slow Layer owner can stall the port for the others.
type Mux struct {
	ln   net.Listener
	addr net.Addr // advertised
	log  *slog.Logger
	opts options

	counters counters   // refused and unauthenticated connections
	refusals refusalLog // rate-limits their Warn lines

	mu      sync.Mutex
	layers  map[byte]*Layer
	pending map[net.Conn]struct{} // accepted, header not yet read
	serving bool
	closed  bool
	wg      sync.WaitGroup // handshake goroutines
}

// Listen binds the peer port at addr (host:port) and advertises the bound
// address, so addr must name a specific interface (127.0.0.1:7379, not
// :7379 or 0.0.0.0:7379). A nil log discards output. Connections are not
// accepted until Serve is called.
func Listen(addr string, log *slog.Logger, opts ...Option) (*Mux, error) {
	return ListenAdvertise(addr, "", log, opts...)
}

// ListenAdvertise binds the peer port at bind and reports advertise (a
// host:port that other nodes can dial; a host name is allowed) as its
// address. An empty advertise means the bound address. A nil log discards
// output. Connections are not accepted until Serve is called. A Secret
// whose key is too short fails with ErrShortSecret.
func ListenAdvertise(bind, advertise string, log *slog.Logger, opts ...Option) (*Mux, error) {
	o := options{headerTimeout: DefaultHeaderTimeout, queueLen: DefaultQueueLen}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.secret.check(); err != nil {
		return nil, err
	}
	o.tls = withCheck(o.tls)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	var adv net.Addr
	if advertise != "" {
		a, err := checkAdvertise(advertise)
		if err != nil {
			return nil, fmt.Errorf("peer port %s: advertise address %q: %w", bind, advertise, err)
		}
		adv = a
	}
	if adv == nil && isWildcard(bind) {
		return nil, fmt.Errorf("peer port %s: %w", bind, ErrUnspecifiedAddr)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("peer port %s: %w", bind, err)
	}
	if o.tls != nil && o.tls.Listen != nil {
		ln = tls.NewListener(ln, o.tls.Listen)
	}
	if adv == nil {
		adv = ln.Addr()
		if tcp, ok := adv.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
			ln.Close()
			return nil, fmt.Errorf("peer port %s: %w", bind, ErrUnspecifiedAddr)
		}
	}
	return &Mux{
		ln:      ln,
		addr:    adv,
		log:     log.With("component", "mux"),
		opts:    o,
		layers:  make(map[byte]*Layer),
		pending: make(map[net.Conn]struct{}),
	}, nil
}

// isWildcard reports whether bind names all interfaces (an empty host,
// 0.0.0.0 or ::), so its bound address cannot be advertised.
func isWildcard(bind string) bool {
	host, _, err := net.SplitHostPort(bind)
	if err != nil {
		return false // net.Listen reports it
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// checkAdvertise validates an advertise address without resolving it: a
// name that only resolves inside the cluster's network is fine.
func checkAdvertise(s string) (net.Addr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, err
	}
	if host == "" {
		return nil, ErrUnspecifiedAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil, ErrUnspecifiedAddr
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p == 0 {
		return nil, fmt.Errorf("port %q is not a usable port", port)
	}
	return advertiseAddr(s), nil
}

// advertiseAddr is an advertise address as given, host names unresolved.
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }

// Addr returns the advertised address: the address other nodes dial and
// the one Raft records for this node.
func (m *Mux) Addr() net.Addr { return m.addr }

// BindAddr returns the address the listener is bound to.
func (m *Mux) BindAddr() net.Addr { return m.ln.Addr() }

// Serve runs the accept loop on the calling goroutine until Close, then
// returns nil. It returns ErrServing if called twice, and the listener's
// error if the listener fails for a reason other than Close. Transient
// accept errors (such as running out of file descriptors) are logged and
// retried with backoff.
func (m *Mux) Serve() error {
	m.mu.Lock()
	if m.serving {
		m.mu.Unlock()
		return ErrServing
	}
	m.serving = true
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil
	}
	m.log.Info("peer port serving", "bind", m.ln.Addr().String(), "advertise", m.addr.String())

	var delay time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			if m.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("peer port %s: %w", m.ln.Addr(), err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("accept failed; retrying", "err", err, "backoff", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0

		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			conn.Close()
			continue // the next Accept fails and the loop returns
		}
		m.pending[conn] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.handshake(conn)
	}
}

func (m *Mux) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// handshake authenticates conn (TLS, then the cluster secret, each as
// configured), reads its header byte under the header deadline and queues
// conn on the matching Layer, closing it on any failure. A connection that
// fails authentication is counted and logged (refuse) and never reaches a
// Layer: none of its bytes past the handshake is read.
func (m *Mux) handshake(conn net.Conn) {
	defer m.wg.Done()
	remote := conn.RemoteAddr().String()
	var header byte
	refused := ""
	err := handshakeServer(conn, m.opts.headerTimeout)
	if err != nil {
		refused = tlsRefusal(err)
	} else {
		header, refused, err = m.authenticate(conn)
	}

	m.mu.Lock()
	delete(m.pending, conn) // from here on Close no longer closes conn for us
	l := m.layers[header]
	m.mu.Unlock()

	switch {
	case refused != "":
		conn.Close()
		m.refuse(remote, refused, err)
	case err != nil:
		conn.Close()
		m.log.Debug("peer connection dropped before its header", "remote", remote, "err", err)
	case l == nil:
		conn.Close()
		m.log.Debug("peer connection with unknown header closed", "remote", remote, "header", header)
	default:
		if err := l.deliver(conn); err != nil {
			conn.Close()
			if errors.Is(err, errQueueFull) {
				m.log.Warn("peer connection refused: layer is not accepting fast enough",
					"remote", remote, "header", header, "queue", cap(l.queue))
			} else {
				m.log.Debug("peer connection for a closed layer closed", "remote", remote, "header", header)
			}
		}
	}
}

// authenticate reads conn's header byte and, with a Secret, runs the
// listener's side of the cluster-secret handshake first, all within the
// header timeout; it then clears the deadline, which from then on belongs
// to the Layer's owner. A connection that fails the secret is refused with
// a reason ("no_secret", "bad_secret"); one that sends nothing in time, or
// closes first, is not (err alone).
func (m *Mux) authenticate(conn net.Conn) (header byte, refused string, err error) {
	if err := conn.SetDeadline(time.Now().Add(m.opts.headerTimeout)); err != nil {
		return 0, "", err
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return 0, "", err
	}
	header = b[0]
	switch s := m.opts.secret; {
	case s == nil:
	case header == AuthHeader:
		if header, err = listenerAuth(conn, s.Key); err != nil {
			return 0, "bad_secret", err
		}
	case s.Optional:
		m.counters.unauthenticated.Add(1)
		m.log.Debug("peer connection accepted without the cluster secret (optional)", "remote", conn.RemoteAddr().String(), "header", header)
	default:
		return 0, "no_secret", fmt.Errorf("header %d sent without the cluster-secret handshake", header)
	}
	return header, "", conn.SetDeadline(time.Time{})
}

// Handle registers and returns the Layer for header. Register every header
// before Serve, or at least before any peer may dial it: a connection whose
// header has no Layer is closed. Handle panics if header already has an open
// Layer, or is AuthHeader; once a Layer is closed its header may be
// registered again. On a closed Mux it returns a closed Layer.
func (m *Mux) Handle(header byte) *Layer {
	if header == AuthHeader {
		panic(fmt.Sprintf("mux: header %d is reserved for the cluster-secret handshake", header))
	}
	l := &Layer{
		mux:    m,
		header: header,
		queue:  make(chan net.Conn, m.opts.queueLen),
		done:   make(chan struct{}),
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		l.Close()
		return l
	}
	if _, dup := m.layers[header]; dup {
		m.mu.Unlock()
		panic(fmt.Sprintf("mux: header %d already has a layer", header))
	}
	m.layers[header] = l
	m.mu.Unlock()
	return l
}

// Close stops Serve, closes the listener, every connection still sending its
// header and every Layer (closing the connections queued on them), and waits
// for the handshake goroutines to finish. Connections already returned by
// Accept belong to the Layers' owners and are left alone. Close is
// idempotent; it returns the listener's close error, if any.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	layers := make([]*Layer, 0, len(m.layers))
	for _, l := range m.layers {
		layers = append(layers, l)
	}
	pending := make([]net.Conn, 0, len(m.pending))
	for c := range m.pending {
		pending = append(pending, c)
	}
	m.mu.Unlock()

	err := m.ln.Close()
	for _, c := range pending {
		c.Close()
	}
	for _, l := range layers {
		l.Close()
	}
	m.wg.Wait()
	return err
}

// Layer is one header's share of the peer port. On the inbound side it is a
// net.Listener for the connections that arrive with its header (the header
// byte already consumed); on the outbound side Dial opens connections that
// carry its header. It satisfies raft.StreamLayer, so a Raft group's
// NetworkTransport can run on it unchanged.
type Layer struct {
	mux    *Mux
	header byte
	queue  chan net.Conn // routed connections awaiting Accept; bounded
	done   chan struct{} // closed by Close

	mu     sync.Mutex // orders deliver against Close so no conn is stranded
	closed bool
}

var _ raft.StreamLayer = (*Layer)(nil)

// Header returns the header byte this Layer serves and dials with.
func (l *Layer) Header() byte { return l.header }

// deliver queues conn for Accept without blocking. It fails with ErrClosed
// after Close and with errQueueFull when the owner has fallen behind; the
// caller then closes conn.
func (l *Layer) deliver(conn net.Conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	select {
	case l.queue <- conn:
		return nil
	default:
		return errQueueFull
	}
}

// Accept blocks until a connection with this Layer's header arrives or the
// Layer is closed, in which case it returns ErrClosed (errors.Is(err,
// net.ErrClosed) holds). The caller owns the returned connection; its header
// byte has been consumed and its read deadline cleared.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close stops the Layer: pending and future Accept calls return ErrClosed,
// queued connections are closed, and the header is unregistered so that
// later connections carrying it are closed by the Mux. Connections already
// returned by Accept are left alone. Close is idempotent and always returns
// nil; it does not close the Mux.
func (l *Layer) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	for drained := false; !drained; {
		select {
		case c := <-l.queue:
			c.Close()
		default:
			drained = true
		}
	}
	l.mu.Unlock()

	m := l.mux
	m.mu.Lock()
	if m.layers[l.header] == l {
		delete(m.layers, l.header)
	}
	m.mu.Unlock()
	return nil
}

// Addr returns the Mux's advertised address.
func (l *Layer) Addr() net.Addr { return l.mux.addr }

// Dial connects to the peer port at address and sends this Layer's header,
// so the connection reaches the Layer with the same header there, with the
// Mux's TLS and Secret (Mux.Dial). It blocks for at most about timeout (no
// limit if timeout is 0). It works whether or not the Layer is closed.
func (l *Layer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.mux.Dial(string(address), l.header, timeout)
}

// Dial connects to the peer port at address as this Mux's peers expect: over
// its TLS, authenticated with its Secret, then header, for callers that dial
// a header without serving it. It blocks for at most about timeout (no limit
// if timeout is 0).
func (m *Mux) Dial(address string, header byte, timeout time.Duration) (net.Conn, error) {
	return DialAuth(address, header, timeout, m.opts.tls, m.opts.secret)
}

// Dial connects to the peer port at address and sends header as the first
// byte, over plain TCP without a secret (tests, tools). It blocks for at
// most about timeout (no limit if timeout is 0).
func Dial(address string, header byte, timeout time.Duration) (net.Conn, error) {
	return dial(address, header, timeout, nil, nil)
}

// DialAuth is Dial over TLS with t.Dial (plain TCP when t or t.Dial is nil),
// with the cluster-secret handshake when s is set (see Secret.Optional for a
// peer without one): all within about timeout. A peer that fails the
// handshake gives an error wrapping ErrPeerAuth, one without a secret
// (unless s is Optional) ErrPeerHasNoSecret.
func DialAuth(address string, header byte, timeout time.Duration, t *TLS, s *Secret) (net.Conn, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cfg := t.dialConfig(address)
	conn, err := dial(address, header, timeout, cfg, s)
	if errors.Is(err, ErrPeerHasNoSecret) && s.Optional {
		return dial(address, header, timeout, cfg, nil)
	}
	return conn, err
}

// Probe authenticates to the peer port at address as DialAuth does (TLS,
// the secret s) and closes the connection before it reaches a Layer (its
// header is AuthHeader, which none serves): whether that node would take
// this one's connections. A node about to join checks its secret so.
func Probe(address string, timeout time.Duration, t *TLS, s *Secret) error {
	c, err := DialAuth(address, AuthHeader, timeout, t, s)
	if err == nil {
		c.Close()
	}
	return err
}

// dial is Dial, over TLS when cfg is not nil, authenticated when s is not.
func dial(address string, header byte, timeout time.Duration, cfg *tls.Config, s *Secret) (net.Conn, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	conn, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		if err := conn.SetDeadline(deadline); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if cfg != nil {
		tc := tls.Client(conn, cfg)
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mux: tls handshake with %s: %w", address, err)
		}
		conn = tc
	}
	if s != nil {
		if err := dialerAuth(conn, header, s.Key); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mux: cluster-secret handshake with %s: %w", address, err)
		}
	} else if _, err := conn.Write([]byte{header}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("mux: send header to %s: %w", address, err)
	}
	if timeout > 0 {
		if err := conn.SetDeadline(time.Time{}); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}
