package mux

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

var (
	testSecret  = &Secret{Key: []byte("0123456789abcdef0123456789abcdef")}
	otherSecret = &Secret{Key: []byte("fedcba9876543210fedcba9876543210")}
)

// dialSecret dials header on m with secret s (and no TLS).
func dialSecret(t *testing.T, m *Mux, header byte, s *Secret) (net.Conn, error) {
	t.Helper()
	c, err := DialAuth(m.Addr().String(), header, waitTimeout, nil, s)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// echo checks that bytes flow both ways between a dialed and an accepted
// connection.
func echo(t *testing.T, dialed, accepted net.Conn) {
	t.Helper()
	dialed.SetDeadline(time.Now().Add(waitTimeout))
	accepted.SetDeadline(time.Now().Add(waitTimeout))
	buf := make([]byte, 4)
	if _, err := dialed.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(accepted, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("accepted side read %q, %v", buf, err)
	}
	if _, err := accepted.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(dialed, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("dialed side read %q, %v", buf, err)
	}
}

// pollCounters waits until cond holds of m's counters.
func pollCounters(t *testing.T, m *Mux, what string, cond func(Counters) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond(m.Counters()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: counters %+v after %v", what, m.Counters(), waitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With a secret, a dialer that holds it reaches its Layer, bytes intact both
// ways; the handshake leaves nothing behind in the stream.
func TestSecretAdmitsItsHolders(t *testing.T) {
	m := serve(t, WithSecret(testSecret))
	l := m.Handle(1)
	c, err := dialSecret(t, m, 1, testSecret)
	if err != nil {
		t.Fatalf("dial with the secret: %v", err)
	}
	echo(t, c, accept(t, l))
	// Mux.Dial and Layer.Dial use the Mux's own secret.
	c2, err := l.Dial(raft.ServerAddress(m.Addr().String()), waitTimeout)
	if err != nil {
		t.Fatalf("Layer.Dial: %v", err)
	}
	defer c2.Close()
	echo(t, c2, accept(t, l))
	if got := m.Counters(); got != (Counters{}) {
		t.Fatalf("counters after two good dials: %+v, want none", got)
	}
}

// Without the handshake, with another secret, with garbage in its place or
// too slowly, a connection is closed before its header reaches a Layer, and
// counted; the Layer receives none of them.
func TestSecretRefusesOthers(t *testing.T) {
	m := serve(t, WithSecret(testSecret), WithHeaderTimeout(500*time.Millisecond))
	l := m.Handle(1)

	// A plain dialer (the forward header and a frame, as an attacker sends).
	plain := dialHeader(t, m, 1)
	plain.Write([]byte("LKF1 a forwarded request"))
	expectClosedByPeer(t, plain, "plain connection")
	pollCounters(t, m, "plain", func(c Counters) bool { return c.NoSecret == 1 })

	// Another secret: the dial fails on the listener's refusal.
	if _, err := dialSecret(t, m, 1, otherSecret); !errors.Is(err, ErrPeerAuth) {
		t.Fatalf("dial with another secret: %v, want ErrPeerAuth", err)
	}
	pollCounters(t, m, "other secret", func(c Counters) bool { return c.BadSecret == 1 })

	// The handshake's header with a wrong proof, by hand.
	raw := dialRaw(t, m)
	raw.Write(append([]byte{AuthHeader, authVersion, 1}, make([]byte, nonceLen)...))
	raw.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(raw, make([]byte, nonceLen)); err != nil {
		t.Fatalf("reading the listener's nonce: %v", err)
	}
	raw.Write(make([]byte, proofLen))
	expectClosedByPeer(t, raw, "wrong proof")
	pollCounters(t, m, "wrong proof", func(c Counters) bool { return c.BadSecret == 2 })

	// A hello, then silence: closed at the header timeout.
	slow := dialRaw(t, m)
	slow.Write([]byte{AuthHeader, authVersion})
	expectClosedByPeer(t, slow, "stalled handshake")
	pollCounters(t, m, "stalled", func(c Counters) bool { return c.BadSecret == 3 })

	// An unknown handshake version.
	bad := dialRaw(t, m)
	bad.Write(append([]byte{AuthHeader, 9, 1}, make([]byte, nonceLen)...))
	expectClosedByPeer(t, bad, "unknown version")
	pollCounters(t, m, "version", func(c Counters) bool { return c.BadSecret == 4 })

	if n := len(l.queue); n != 0 {
		t.Fatalf("%d connections that did not authenticate reached the layer", n)
	}
	// A holder still gets in.
	c, err := dialSecret(t, m, 1, testSecret)
	if err != nil {
		t.Fatalf("dial with the secret after the refusals: %v", err)
	}
	echo(t, c, accept(t, l))
}

// A dialer checks the listener's proof too: a listener with another secret
// that (wrongly) let the dialer in is still refused by the dialer.
func TestSecretDialerChecksListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitTimeout))
		var b [1]byte
		io.ReadFull(c, b[:])
		listenerAuthAnyProof(c, otherSecret.Key)
	}()
	_, err = DialAuth(ln.Addr().String(), 1, waitTimeout, nil, testSecret)
	if !errors.Is(err, ErrPeerAuth) {
		t.Fatalf("dial to a listener with another secret: %v, want ErrPeerAuth", err)
	}
}

// listenerAuthAnyProof is listenerAuth without checking the dialer's proof.
func listenerAuthAnyProof(conn net.Conn, key []byte) {
	var hello [helloLen]byte
	io.ReadFull(conn, hello[:])
	ns := bytes.Repeat([]byte{7}, nonceLen)
	conn.Write(ns)
	io.ReadFull(conn, make([]byte, proofLen))
	conn.Write(proof(key, labelListener, hello[1], hello[2:], ns))
}

// An Optional secret is the rolling walk's first step: the listener lets in
// plain dialers too (counted) as well as holders; its dials reach a node
// without a secret (falling back to plain) and one with it; and a required
// dialer does not fall back.
func TestSecretOptional(t *testing.T) {
	optional := &Secret{Key: testSecret.Key, Optional: true}
	m := serve(t, WithSecret(optional))
	l := m.Handle(1)
	echo(t, dialHeader(t, m, 1), accept(t, l))
	pollCounters(t, m, "plain into optional", func(c Counters) bool { return c.Unauthenticated == 1 })
	c, err := dialSecret(t, m, 1, testSecret)
	if err != nil {
		t.Fatalf("required dialer into optional: %v", err)
	}
	echo(t, c, accept(t, l))

	old := serve(t) // a node without a secret
	ol := old.Handle(1)
	c, err = dialSecret(t, old, 1, optional)
	if err != nil {
		t.Fatalf("optional dialer into a node without a secret: %v", err)
	}
	echo(t, c, accept(t, ol))
	if _, err := dialSecret(t, old, 1, testSecret); err == nil {
		t.Fatal("a required dialer reached a node without a secret")
	}
	// Optional never falls back from a listener that holds another secret.
	other := serve(t, WithSecret(otherSecret))
	other.Handle(1)
	if _, err := dialSecret(t, other, 1, optional); !errors.Is(err, ErrPeerAuth) {
		t.Fatalf("optional dialer into another secret: %v, want ErrPeerAuth", err)
	}
}

// A key shorter than MinSecretLen is refused, by Listen and by dials; the
// handshake's header cannot be given to a Layer.
func TestSecretChecks(t *testing.T) {
	short := &Secret{Key: []byte("short")}
	if _, err := Listen("127.0.0.1:0", nil, WithSecret(short)); !errors.Is(err, ErrShortSecret) {
		t.Fatalf("Listen with a short secret: %v, want ErrShortSecret", err)
	}
	if _, err := DialAuth("127.0.0.1:1", 1, time.Second, nil, short); !errors.Is(err, ErrShortSecret) {
		t.Fatalf("dial with a short secret: %v, want ErrShortSecret", err)
	}
	m := serve(t)
	defer func() {
		if recover() == nil {
			t.Fatal("Handle(AuthHeader) did not panic")
		}
	}()
	m.Handle(AuthHeader)
}

// BenchmarkDial measures a peer dial, accepted by its Layer, without and
// with the cluster-secret handshake (one more round trip, two HMACs a side).
func BenchmarkDial(b *testing.B) {
	for _, tc := range []struct {
		name   string
		secret *Secret
	}{{"plain", nil}, {"secret", testSecret}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := Listen("127.0.0.1:0", nil, WithSecret(tc.secret))
			if err != nil {
				b.Fatal(err)
			}
			go m.Serve()
			defer m.Close()
			l := m.Handle(1)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			for b.Loop() {
				c, err := m.Dial(m.Addr().String(), 1, waitTimeout)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
