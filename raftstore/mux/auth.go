package mux

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Cluster-secret authentication (lockd's -cluster-secret). With a Secret,
// every connection opens with a mutual challenge-response before its header
// reaches a Layer, so nothing that does not hold the key gets a byte of Raft,
// appendpipe or forwarding traffic read. The dialer speaks first:
//
//	dialer   → listener  AuthHeader, version (1), header, dialer nonce (32 bytes)
//	listener → dialer    listener nonce (32 bytes)
//	dialer   → listener  HMAC-SHA256(key, "lockd peer v1 dialer"   | header | dialer nonce | listener nonce)
//	listener → dialer    HMAC-SHA256(key, "lockd peer v1 listener" | header | dialer nonce | listener nonce)
//
// The listener checks the dialer's proof before it sends its own, so a
// party that merely reaches the port learns no value keyed by the secret
// (nothing to guess the secret against offline); the two labels keep
// either side's proof from being replayed as the other's. Both sides compare
// in constant time (hmac.Equal), and the listener's side runs under the
// Mux's header timeout. The handshake authenticates the connection's start
// only: without TLS its later bytes are neither secret nor protected from
// an attacker on the path (SECURITY.md).

// AuthHeader is the header byte that opens a cluster-secret handshake. No
// Layer may use it; a Mux without a Secret closes connections that send it,
// as a lockd from before cluster secrets does (that is how an Optional
// dialer recognises one).
const AuthHeader byte = 0x7F

// MinSecretLen is the shortest key a Secret may hold, in bytes. The key is
// as strong as its entropy: use random bytes (openssl rand -hex 32).
const MinSecretLen = 16

const (
	authVersion = 1
	nonceLen    = 32
	proofLen    = sha256.Size
	helloLen    = 2 + nonceLen // version, header, nonce (after AuthHeader)

	labelDialer   = "lockd peer v1 dialer"
	labelListener = "lockd peer v1 listener"
)

var (
	// ErrShortSecret: a Secret's key is shorter than MinSecretLen.
	ErrShortSecret = fmt.Errorf("mux: the cluster secret must be at least %d bytes", MinSecretLen)
	// ErrPeerAuth: the peer failed the cluster-secret handshake (its proof
	// was wrong), or refused this node's proof (it holds another secret).
	ErrPeerAuth = errors.New("mux: peer authentication failed")
	// ErrPeerHasNoSecret: the peer closed the connection at AuthHeader
	// without answering: it runs without a cluster secret.
	ErrPeerHasNoSecret = errors.New("mux: the peer closed the connection at the cluster-secret header (it has no secret)")
)

// Secret authenticates every connection of the peer port, inbound and
// outbound, with a key shared by the cluster's nodes.
type Secret struct {
	// Key is the shared secret, at least MinSecretLen bytes.
	Key []byte
	// Optional is the first step of turning a secret on in a running
	// cluster (docs/operations.md): inbound connections that do not
	// authenticate are accepted too (and counted:
	// Counters.Unauthenticated), and a dial whose peer closes the
	// connection at AuthHeader (a node without the secret) is made again
	// without the handshake. A dial whose peer answers it must still
	// complete it.
	Optional bool
}

// check validates s (nil: no secret).
func (s *Secret) check() error {
	if s != nil && len(s.Key) < MinSecretLen {
		return ErrShortSecret
	}
	return nil
}

// proof is the HMAC one side sends: label, header and both nonces.
func proof(key []byte, label string, header byte, dialerNonce, listenerNonce []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(label))
	h.Write([]byte{header})
	h.Write(dialerNonce)
	h.Write(listenerNonce)
	return h.Sum(nil)
}

// authError is a listener-side handshake failure: the dialer does not hold
// the key, or does not speak the handshake.
type authError struct{ err error }

func (e *authError) Error() string { return "cluster secret: " + e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// listenerAuth runs the listener's side of the handshake on conn, whose
// AuthHeader has been read, and returns the header the dialer
// authenticated. The caller bounds it with a deadline. Every failure is an
// *authError.
func listenerAuth(conn net.Conn, key []byte) (byte, error) {
	var hello [helloLen]byte
	if _, err := io.ReadFull(conn, hello[:]); err != nil {
		return 0, &authError{fmt.Errorf("reading the hello: %w", err)}
	}
	if hello[0] != authVersion {
		return 0, &authError{fmt.Errorf("unknown handshake version %d", hello[0])}
	}
	header, dialerNonce := hello[1], hello[2:]
	listenerNonce := make([]byte, nonceLen)
	rand.Read(listenerNonce) // never fails (crypto/rand)
	if _, err := conn.Write(listenerNonce); err != nil {
		return 0, &authError{fmt.Errorf("sending the nonce: %w", err)}
	}
	got := make([]byte, proofLen)
	if _, err := io.ReadFull(conn, got); err != nil {
		return 0, &authError{fmt.Errorf("reading the proof: %w", err)}
	}
	if !hmac.Equal(got, proof(key, labelDialer, header, dialerNonce, listenerNonce)) {
		return 0, &authError{errors.New("wrong proof (another secret)")}
	}
	if _, err := conn.Write(proof(key, labelListener, header, dialerNonce, listenerNonce)); err != nil {
		return 0, &authError{fmt.Errorf("sending the proof: %w", err)}
	}
	return header, nil
}

// dialerAuth runs the dialer's side of the handshake for header on conn (in
// place of sending the header). It returns ErrPeerHasNoSecret when the peer
// closes the connection before answering, ErrPeerAuth (wrapped) when the
// peer's proof is wrong or it closes after seeing this side's, and the
// connection's error otherwise.
func dialerAuth(conn net.Conn, header byte, key []byte) error {
	hello := make([]byte, 1+helloLen)
	hello[0], hello[1], hello[2] = AuthHeader, authVersion, header
	dialerNonce := hello[3:]
	rand.Read(dialerNonce)
	if _, err := conn.Write(hello); err != nil {
		return err
	}
	listenerNonce := make([]byte, nonceLen)
	if n, err := io.ReadFull(conn, listenerNonce); err != nil {
		if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return ErrPeerHasNoSecret
		}
		return err
	}
	if _, err := conn.Write(proof(key, labelDialer, header, dialerNonce, listenerNonce)); err != nil {
		return err
	}
	got := make([]byte, proofLen)
	if _, err := io.ReadFull(conn, got); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("%w: the peer refused this node's proof (another secret?)", ErrPeerAuth)
		}
		return err
	}
	if !hmac.Equal(got, proof(key, labelListener, header, dialerNonce, listenerNonce)) {
		return fmt.Errorf("%w: the peer's proof is wrong (another secret)", ErrPeerAuth)
	}
	return nil
}
