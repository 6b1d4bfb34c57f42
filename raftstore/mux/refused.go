package mux

import (
	"crypto/tls"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are the inbound connections a Mux refused for want of
// authentication, by reason, and those it let in unauthenticated, since
// Listen.
type Counters struct {
	// TLS: the TLS handshake failed (no certificate, one the CA did not
	// sign, not TLS at all); connections closed before sending anything are
	// not counted.
	TLS uint64
	// NotMember: the certificate verified but TLS.Check refused it (lockd:
	// it names no member of the cluster).
	NotMember uint64
	// NoSecret: the connection did not open with the cluster-secret
	// handshake, which the Mux requires.
	NoSecret uint64
	// BadSecret: the cluster-secret handshake failed (another secret, a
	// malformed or a too slow handshake).
	BadSecret uint64
	// Unauthenticated: connections accepted without the handshake because
	// the Secret is Optional (0 on every node: the secret can be required).
	Unauthenticated uint64
}

// counters is Counters, updated atomically.
type counters struct {
	tls, notMember, noSecret, badSecret, unauthenticated atomic.Uint64
}

// Counters reports the Mux's authentication counters.
func (m *Mux) Counters() Counters {
	c := &m.counters
	return Counters{TLS: c.tls.Load(), NotMember: c.notMember.Load(), NoSecret: c.noSecret.Load(),
		BadSecret: c.badSecret.Load(), Unauthenticated: c.unauthenticated.Load()}
}

// refusalLogEvery is how often at most a refused connection is logged at
// Warn; the others in between go to Debug and are counted into the next
// Warn line.
const refusalLogEvery = 10 * time.Second

// refusalLog rate-limits the Warn lines of refused connections, so that a
// flood of them cannot flood the log.
type refusalLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// warn reports whether this refusal is logged at Warn, and how many were
// logged at Debug since the last one that was.
func (r *refusalLog) warn(now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < refusalLogEvery {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return true, n
}

// notMemberError is TLS.Check's refusal, as the handshake returns it.
type notMemberError struct{ err error }

func (e *notMemberError) Error() string { return "certificate refused: " + e.err.Error() }
func (e *notMemberError) Unwrap() error { return e.err }

// errNoCertificate: the handshake verified no certificate for TLS.Check.
var errNoCertificate = errors.New("no verified client certificate")

// refuse counts and logs an inbound connection refused for reason (a
// counter of m.counters) with err; it does not close conn.
func (m *Mux) refuse(remote, reason string, err error) {
	c := &m.counters
	switch reason {
	case "tls":
		c.tls.Add(1)
	case "not_member":
		c.notMember.Add(1)
	case "no_secret":
		c.noSecret.Add(1)
	case "bad_secret":
		c.badSecret.Add(1)
	}
	if ok, suppressed := m.refusals.warn(time.Now()); ok {
		m.log.Warn("peer connection refused: not authenticated as a peer",
			"remote", remote, "reason", reason, "err", err, "refusals_logged_at_debug_since_last", suppressed)
		return
	}
	m.log.Debug("peer connection refused: not authenticated as a peer", "remote", remote, "reason", reason, "err", err)
}

// tlsRefusal classifies a failed TLS handshake: "" when the dialer closed
// without sending anything (a port probe: not counted).
func tlsRefusal(err error) string {
	var nm *notMemberError
	switch {
	case errors.As(err, &nm):
		return "not_member"
	case errors.Is(err, io.EOF):
		return ""
	}
	return "tls"
}

// withCheck returns cfg's listen configuration with check run on the
// verified leaf certificate at the end of every handshake (cfg unchanged
// when check is nil).
func withCheck(t *TLS) *TLS {
	if t == nil || t.Listen == nil || t.Check == nil {
		return t
	}
	c := *t
	c.Listen = t.Listen.Clone()
	prev, check := t.Listen.VerifyConnection, t.Check
	c.Listen.VerifyConnection = func(cs tls.ConnectionState) error {
		if prev != nil {
			if err := prev(cs); err != nil {
				return err
			}
		}
		if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
			return &notMemberError{errNoCertificate}
		}
		if err := check(cs.PeerCertificates[0]); err != nil {
			return &notMemberError{err}
		}
		return nil
	}
	return &c
}
