package mux

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"
)

// TLS secures the peer port below the header byte: Listen is the inbound
// side's configuration (mutual TLS: it should require and verify client
// certificates), Dial the outbound side's. A connection that fails the
// handshake never reaches a Layer.
type TLS struct {
	Listen, Dial *tls.Config
	// Check, when set, is asked about the verified certificate of every
	// inbound connection at the end of its handshake; an error fails the
	// handshake (counted as Counters.NotMember). lockd: whether the
	// certificate names a member of the cluster, when the CA also signs
	// certificates that are not nodes'. It may be called concurrently.
	Check func(leaf *x509.Certificate) error
}

// WithTLS runs the peer port over TLS (nil: plain TCP). The handshake of an
// inbound connection must finish within the header timeout.
func WithTLS(t *TLS) Option {
	return func(o *options) { o.tls = t }
}

// WithSecret makes every connection of the peer port, inbound and outbound
// (Layer.Dial, Mux.Dial), open with the cluster-secret handshake (nil: none).
// Inbound, it runs after TLS and before the header reaches a Layer, within
// the header timeout.
func WithSecret(s *Secret) Option {
	return func(o *options) { o.secret = s }
}

// dialConfig returns t's dial configuration for address, with ServerName
// set to the host being dialed when the configuration names none.
func (t *TLS) dialConfig(address string) *tls.Config {
	if t == nil || t.Dial == nil {
		return nil
	}
	c := t.Dial
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(address); err == nil {
			c = c.Clone()
			c.ServerName = host
		}
	}
	return c
}

// handshakeServer completes the TLS handshake of an inbound conn within
// timeout (a no-op for plain TCP).
func handshakeServer(conn net.Conn, timeout time.Duration) error {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("tls handshake: %w", err)
	}
	return conn.SetDeadline(time.Time{})
}

// DialTLS is Dial over TLS with t.Dial (plain TCP when t or t.Dial is nil): the
// handshake, then the header, all within about timeout. The ServerName
// defaults to address's host.
func DialTLS(address string, header byte, timeout time.Duration, t *TLS) (net.Conn, error) {
	return DialAuth(address, header, timeout, t, nil)
}
