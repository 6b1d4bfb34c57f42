package redisproto

import (
	"errors"
	"os"
	"time"
)

// Client timeouts (Config.IdleTimeout, Config.AuthTimeout), as Redis's
// `timeout`: a client that has sent nothing for IdleTimeout is closed without
// a reply; subscribers, MONITOR clients and a client blocked in a command
// (LOCK.ACQUIRE … WAIT) are not idle. lockd adds a login deadline: while
// authentication is required, a client that has not authenticated
// AuthTimeout after it connected is closed, so that connections nobody
// authenticates do not hold descriptors for ever.
//
// A connection served by its goroutine reads with a deadline (armRead, before
// every blocking read, the reader's arm); the event loop, which reads only
// what is there, sweeps its connections once a second (loop_linux.go) — a
// client is closed up to a second late there, as Redis checks its clients
// from a cron.

// sweepEvery is how often the event loop looks for expired clients.
const sweepEvery = time.Second

// timeoutsOn reports whether any client timeout is configured.
func (s *Server) timeoutsOn() bool { return s.cfg.IdleTimeout > 0 || s.cfg.AuthTimeout > 0 }

// waitsForPushes reports whether c waits for messages rather than sends
// requests: a subscriber or a MONITOR client, never idle.
func (c *conn) waitsForPushes() bool {
	return c.subCount() > 0 || c.srv.monitors.has(c)
}

// armRead sets the deadline of the read c's goroutine is about to make: the
// idle timeout from now, or the login deadline if that comes first. It is
// installed as the reader's arm only when a timeout is configured, and does
// nothing on a connection the event loop owns (swept instead).
func (c *conn) armRead() {
	if c.nc == nil {
		return
	}
	var dl time.Time
	login := false
	if d := c.srv.cfg.IdleTimeout; d > 0 && !c.waitsForPushes() {
		dl = time.Now().Add(d)
	}
	if d := c.srv.cfg.AuthTimeout; d > 0 && c.mustAuthenticate() {
		if at := c.created.Add(d); dl.IsZero() || at.Before(dl) {
			dl, login = at, true
		}
	}
	if dl.IsZero() && c.readDL.IsZero() {
		return
	}
	c.readDL, c.loginDL = dl, login
	c.nc.SetReadDeadline(dl)
	select {
	case <-c.srv.closing: // Shutdown may have stopped the reads before this
		c.stopReading()
	default:
	}
}

// disarmRead clears a deadline armRead set, before c's goroutine reads ahead
// while a command blocks (watchClose): a blocked client is not idle.
func (c *conn) disarmRead() {
	if !c.readDL.IsZero() {
		c.readDL = time.Time{}
		c.nc.SetReadDeadline(time.Time{})
	}
}

// timedOut counts and logs a connection whose read ended at the deadline
// armRead set (err: what ended the read), and reports whether it did.
func (c *conn) timedOut(err error) bool {
	if c.readDL.IsZero() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	select {
	case <-c.srv.closing: // Shutdown's drain, not a timeout
		return false
	default:
	}
	c.expire(c.loginDL)
	return true
}

// expire counts and logs a client closed by a timeout: the login deadline
// (login) or the idle timeout.
func (c *conn) expire(login bool) {
	if login {
		c.srv.stats.authTimeouts.Add(1)
		c.srv.log.Debug("closing a client that did not authenticate in time", "addr", c.addr, "id", c.id, "auth_timeout", c.srv.cfg.AuthTimeout)
		return
	}
	c.srv.stats.idleTimeouts.Add(1)
	c.srv.log.Debug("closing an idle client", "addr", c.addr, "id", c.id, "timeout", c.srv.cfg.IdleTimeout)
}

// expired reports whether a client the event loop owns is past a timeout at
// now (authRequired: whether the server requires authentication now), and
// which (login: the login deadline). The loop's connections are plain: no
// subscriber, MONITOR or blocked client among them.
func (c *conn) expired(now time.Time, authRequired bool) (expired, login bool) {
	if d := c.srv.cfg.AuthTimeout; d > 0 && authRequired && !c.auth.authed && now.Sub(c.created) >= d {
		return true, true
	}
	if d := c.srv.cfg.IdleTimeout; d > 0 && now.Sub(c.lastRead) >= d {
		return true, false
	}
	return false, false
}
