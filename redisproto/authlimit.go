package redisproto

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/lockd/lockd/command"
)

// Password guessing. Redis answers a wrong AUTH at once, as often as a client
// asks (a probe saw 425,000 guesses a second on one connection). lockd counts
// failed authentications — AUTH, HELLO … AUTH and the HTTP door's credentials
// — per client address, logs them (at most one line a second, never the
// password, the user's name only when that user exists), and slows an
// address down: once it has failed authFailFree times within
// authFailWindow, its further attempts are answered at most one per
// Config.AuthFailDelay, across all its connections, the password checked
// only when the attempt's turn comes (a right password is not answered
// sooner than a wrong one). An attempt whose turn is more than authWaitMax
// away is refused at once, unchecked (errAuthThrottled). The waiting is done
// by the connection's own goroutine (AUTH never runs on the event loop), so
// other clients do not wait.
//
// An address is the client's IP; IPv6 clients are grouped by their /64, the
// block one host is usually given.

const (
	authFailFree   = 10               // failures an address may make per window at full speed
	authFailWindow = time.Minute      // the counting window, from an address's first failure
	authWaitMax    = 10 * time.Second // the longest an attempt waits for its turn
	authAddrsMax   = 1 << 16          // addresses tracked at once (authLimiter.forget)
	authLogEvery   = time.Second      // at most one failure log line per interval
)

// ErrAuthThrottled is the reply to an authentication attempt refused
// unchecked because its address has failed too often (see above).
const ErrAuthThrottled = command.Error("ERR too many failed authentication attempts from this address; try again later")

// AuthThrottledError is the error AuthenticateFrom returns for an attempt
// refused unchecked; RetryAfter says when the address may try again.
type AuthThrottledError struct{ After time.Duration }

func (e AuthThrottledError) Error() string { return string(ErrAuthThrottled) }

// RetryAfter is how long the address should wait before it tries again.
func (e AuthThrottledError) RetryAfter() time.Duration { return e.After }

// ErrAuthFailed is AuthenticateFrom's error for a wrong user or password.
var ErrAuthFailed = errors.New(string(command.ErrWrongPass))

// authLimiter is the server's count of failed authentications by address.
type authLimiter struct {
	delay time.Duration
	log   *slog.Logger
	now   func() time.Time // time.Now; tests move it

	mu         sync.Mutex
	addrs      map[string]*authAddr
	lastLog    time.Time
	suppressed int64 // failures not logged since lastLog
}

// authAddr is one address's window.
type authAddr struct {
	start    time.Time // the window's first failure
	failures int       // in the window
	next     time.Time // the earliest an attempt is answered once throttled
}

func newAuthLimiter(delay time.Duration, lg *slog.Logger) *authLimiter {
	return &authLimiter{delay: delay, log: lg, now: time.Now, addrs: map[string]*authAddr{}}
}

// addrKey is the limiter's key for a client address ("ip:port").
func addrKey(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// entry is addr's window, started afresh when the last one ended; nil when
// the address has no failures in a current window. l.mu is held.
func (l *authLimiter) entry(key string, now time.Time) *authAddr {
	a := l.addrs[key]
	if a != nil && now.Sub(a.start) >= authFailWindow && !now.Before(a.next) {
		delete(l.addrs, key)
		return nil
	}
	return a
}

// admit is called before a password is checked for addr: how long to wait
// for the attempt's turn, or refused (with the time to retry after) when the
// turn is more than authWaitMax away.
func (l *authLimiter) admit(addr string) (wait time.Duration, refused bool) {
	if l.delay <= 0 {
		return 0, false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.entry(addrKey(addr), now)
	if a == nil || a.failures < authFailFree {
		return 0, false
	}
	turn := a.next
	if turn.Before(now) {
		turn = now
	}
	if wait = turn.Sub(now); wait > authWaitMax {
		return wait, true
	}
	a.next = turn.Add(l.delay)
	return wait, false
}

// fail counts a failed authentication from addr (user: the name given, kept
// for the log only when such a user exists) and logs it, rate-limited.
func (l *authLimiter) fail(addr, user string, known bool) {
	now := l.now()
	key := addrKey(addr)
	l.mu.Lock()
	a := l.entry(key, now)
	if a == nil {
		if len(l.addrs) >= authAddrsMax {
			l.forget(now)
		}
		a = &authAddr{start: now}
		l.addrs[key] = a
	}
	a.failures++
	n := a.failures
	logIt := now.Sub(l.lastLog) >= authLogEvery
	suppressed := l.suppressed
	if logIt {
		l.lastLog, l.suppressed = now, 0
	} else {
		l.suppressed++
	}
	l.mu.Unlock()
	if !logIt {
		return
	}
	attrs := []any{"addr", addr, "failures_in_window", n, "window", authFailWindow, "unlogged_failures", suppressed}
	if known {
		attrs = append(attrs, "user", user)
	}
	if n >= authFailFree && l.delay > 0 {
		attrs = append(attrs, "slowed_to_one_per", l.delay)
	}
	l.log.Warn("authentication failed", attrs...)
}

// forget makes room in a full table: the ended windows go first, then
// arbitrary entries (an attacker with this many addresses is not slowed by
// counting per address anyway). l.mu is held.
func (l *authLimiter) forget(now time.Time) {
	for k, a := range l.addrs {
		if now.Sub(a.start) >= authFailWindow && !now.Before(a.next) {
			delete(l.addrs, k)
		}
	}
	for k := range l.addrs {
		if len(l.addrs) < authAddrsMax*7/8 {
			break
		}
		delete(l.addrs, k)
	}
}

// authenticate checks user and password for a client at addr, waiting for
// the attempt's turn if the address is slowed down (ctx ends the wait early:
// refused). It is the one path of AUTH, HELLO … AUTH and the HTTP door.
func (s *Server) authenticate(ctx context.Context, addr string, t *command.ACLTable, user string, pass []byte) (*command.User, error) {
	wait, refused := s.authLimit.admit(addr)
	if refused {
		s.stats.authThrottled.Add(1)
		return nil, AuthThrottledError{After: wait}
	}
	if wait > 0 {
		s.stats.authThrottled.Add(1)
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return nil, AuthThrottledError{After: wait}
		case <-s.closing:
			tm.Stop()
			return nil, AuthThrottledError{After: wait}
		}
		t = s.aclTable() // the table as it is now
	}
	u, ok := s.lookupUser(t, user)
	if !ok || !u.CheckPassword(pass) {
		s.stats.authFailures.Add(1)
		s.authLimit.fail(addr, user, ok)
		return nil, ErrAuthFailed
	}
	return u, nil
}

// AuthenticateFrom is Authenticate for a client at addr ("ip:port"): its
// failures are counted and logged, and it waits its turn (or is refused with
// an AuthThrottledError) when addr is slowed down. The HTTP door uses it.
func (s *Server) AuthenticateFrom(ctx context.Context, addr, user, pass string) (*command.User, error) {
	return s.authenticate(ctx, addr, s.aclTable(), user, []byte(pass))
}
