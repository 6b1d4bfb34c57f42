package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Session is a lockd session: locks acquired WithSession live as long as it
// does, and one keepalive every third of its TTL (no log write on the
// server) keeps all of them.
//
// Its local deadline is the send time of the last acknowledged keepalive (or
// of SESSION.OPEN) plus its TTL, less the safety margin. When keepalives fail
// — the server is unreachable, or slow — the session keeps trying until that
// deadline and then ends with ErrSessionExpired, cancelling every lock's
// Context: disconnected is not expired, but the holder acts as if it were.
// A session never renews itself after it ended; Reopen (or OpenSession)
// starts a new one, whose locks get new tokens.
type Session struct {
	l      *Locker
	id     int64
	opts   sessionOpts
	ttl    time.Duration // as granted by the server
	every  time.Duration // keepalive interval
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	once   sync.Once

	mu sync.Mutex
	dl deadlineTimer
}

// SessionOption configures OpenSession.
type SessionOption func(*sessionOpts)

type sessionOpts struct {
	ttl       time.Duration
	name      string
	namespace string
}

// WithSessionTTL asks for a session TTL (the server clamps it into its
// bounds, 5–60 s by default; the session uses the TTL the server grants).
func WithSessionTTL(ttl time.Duration) SessionOption {
	return func(o *sessionOpts) { o.ttl = ttl }
}

// WithSessionName names the client in the server's session table.
func WithSessionName(name string) SessionOption {
	return func(o *sessionOpts) { o.name = name }
}

// WithSessionNamespace opens the session in a lockd namespace (its
// DEFAULTTTL and MAXTTL bound the session's TTL).
func WithSessionNamespace(prefix string) SessionOption {
	return func(o *sessionOpts) { o.namespace = prefix }
}

// OpenSession opens a session (SESSION.OPEN) and starts keeping it alive. It
// needs lockd. Close it when done: that releases its locks at once.
func (l *Locker) OpenSession(ctx context.Context, opts ...SessionOption) (*Session, error) {
	if l.plain {
		return nil, fmt.Errorf("%w: sessions need lockd", ErrNotSupported)
	}
	var o sessionOpts
	for _, f := range opts {
		f(&o)
	}
	args := []any{"SESSION.OPEN"}
	if o.ttl > 0 {
		args = append(args, "TTL", o.ttl.Milliseconds())
	}
	if o.name != "" {
		args = append(args, "NAME", o.name)
	}
	if o.namespace != "" {
		args = append(args, "NAMESPACE", o.namespace)
	}
	var v any
	var err error
	var sent time.Time
	for attempt := 1; ; attempt++ {
		sent = l.clock.Now()
		v, err = l.do(ctx, 0, args...).Result()
		c := classify(err)
		if c == outOK {
			break
		}
		if unknownCommand(err) {
			return nil, fmt.Errorf("%w: the server does not know SESSION.OPEN (plain Redis?): %v", ErrNotSupported, err)
		}
		if c == outFinal {
			return nil, fmt.Errorf("client: SESSION.OPEN: %w", err)
		}
		// An unknown outcome may leave a session open on the server: it
		// holds nothing and lapses after its TTL, so opening another is safe.
		if ctx.Err() != nil || attempt >= maxUnknown {
			if c == outRetry {
				return nil, fmt.Errorf("%w: SESSION.OPEN: %v", ErrUnavailable, err)
			}
			return nil, fmt.Errorf("%w: SESSION.OPEN: %v", ErrUnknownOutcome, err)
		}
		l.sleep(ctx, 50*time.Millisecond)
	}
	m, ok := asMap(v)
	if !ok {
		return nil, fmt.Errorf("client: SESSION.OPEN answered %T", v)
	}
	s := &Session{l: l, id: asInt(m["session_id"]), opts: o,
		ttl:   time.Duration(asInt(m["ttl_ms"])) * time.Millisecond,
		every: time.Duration(asInt(m["keepalive_ms"])) * time.Millisecond,
		stop:  make(chan struct{})}
	if s.id <= 0 || s.ttl <= 0 || s.every <= 0 {
		return nil, fmt.Errorf("client: SESSION.OPEN answered %v", v)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	s.dl = deadlineTimer{clock: l.clock, fire: s.fire}
	s.mu.Lock()
	s.dl.set(l.safeDeadline(sent, s.ttl))
	s.mu.Unlock()
	if s.Remaining() <= 0 {
		s.Close(ctx)
		return nil, fmt.Errorf("%w: SESSION.OPEN was answered after the session's local deadline", ErrSessionExpired)
	}
	go s.keepalive()
	return s, nil
}

// ID is the server's session id.
func (s *Session) ID() int64 { return s.id }

// TTL is the session TTL the server granted.
func (s *Session) TTL() time.Duration { return s.ttl }

// Context is cancelled when the session ends (ErrSessionExpired as its
// cause): at its local deadline, on NOSESSION, or on Close.
func (s *Session) Context() context.Context { return s.ctx }

// Remaining is the time left before the session's local deadline, read from
// the clock now (0 once the session has ended).
func (s *Session) Remaining() time.Duration {
	if s.ctx.Err() != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.dl.deadline.Sub(s.l.clock.Now())
	if r <= 0 {
		s.dl.stop()
		s.cancel(fmt.Errorf("%w: no keepalive was acknowledged before its local deadline", ErrSessionExpired))
		return 0
	}
	return r
}

// Err is nil while the session lives, else why it ended (ErrSessionExpired).
func (s *Session) Err() error {
	if s.Remaining() > 0 {
		return nil
	}
	return context.Cause(s.ctx)
}

func (s *Session) fire(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dl.due(gen) {
		s.cancel(fmt.Errorf("%w: no keepalive was acknowledged before its local deadline", ErrSessionExpired))
	}
}

// expire ends the session locally with cause.
func (s *Session) expire(cause error) {
	s.mu.Lock()
	s.dl.stop()
	s.mu.Unlock()
	s.cancel(cause)
}

// renew moves the deadline after a keepalive sent at sent was acknowledged
// with ttl. An acknowledgement after the local deadline renews nothing.
func (s *Session) renew(sent time.Time, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil || !s.l.clock.Now().Before(s.dl.deadline) {
		return // fire (or Remaining) ends it
	}
	s.dl.set(s.l.safeDeadline(sent, ttl))
}

// keepalive sends SESSION.KEEPALIVE every third of the TTL and, after a
// failure, every fifteenth, until the session ends or is closed.
func (s *Session) keepalive() {
	next := s.every
	for {
		if !s.pause(next) {
			return
		}
		left := s.Remaining()
		if left <= 0 {
			return
		}
		sent := s.l.clock.Now()
		ctx, cancel := context.WithTimeout(s.ctx, left)
		ttl, err := s.l.do(ctx, 0, "SESSION.KEEPALIVE", s.id).Int64()
		cancel()
		switch {
		case err == nil:
			s.renew(sent, time.Duration(ttl)*time.Millisecond)
			next = s.every
		case serverErr(err, "NOSESSION"):
			s.expire(fmt.Errorf("%w: %v", ErrSessionExpired, err))
			return
		default:
			next = max(s.every/5, time.Millisecond)
		}
	}
}

// pause waits d on the Locker's clock; false when the session ended or was
// closed meanwhile.
func (s *Session) pause(d time.Duration) bool {
	ch := make(chan struct{})
	t := s.l.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-s.stop:
		return false
	case <-s.ctx.Done():
		return false
	}
}

// Close stops the keepalives and ends the session on the server
// (SESSION.CLOSE), which releases all its locks; their Contexts are
// cancelled. It answers the session's error when it had ended before.
func (s *Session) Close(ctx context.Context) error {
	s.once.Do(func() { close(s.stop) })
	ended := s.Err()
	err := s.l.do(ctx, 0, "SESSION.CLOSE", s.id).Err()
	if err != nil && !serverErr(err, "NOSESSION") && err != redis.Nil {
		err = fmt.Errorf("client: SESSION.CLOSE: %w", err)
	} else {
		err = nil
	}
	s.expire(fmt.Errorf("%w: closed", ErrSessionExpired))
	if ended != nil {
		return ended
	}
	return err
}

// Reopen opens a new session with the same options. Locks of the old one
// are not carried over: acquire them again for new tokens.
func (s *Session) Reopen(ctx context.Context) (*Session, error) {
	return s.l.OpenSession(ctx, func(o *sessionOpts) { *o = s.opts })
}
