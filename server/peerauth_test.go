package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/tlsconf"
	"github.com/redis/go-redis/v9"
)

// issueClient returns a RESP client certificate named cn, as an operator
// issues for -tls-client-auth: client authentication only, no host names.
func (ca *testCA) issueClient(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	c, k := ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return pairOf(t, c, k)
}

// pairOf parses a PEM pair.
func pairOf(t *testing.T, c, k []byte) tls.Certificate {
	t.Helper()
	p, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// forwardFrame is a forwarded batch of one command as a follower sends it to
// the leader's peer port (raftstore/forward's codec): the preamble, then a
// request frame (length, type 1, id) around command's encoding.
func forwardFrame(t *testing.T, args ...string) []byte {
	t.Helper()
	var a [][]byte
	for _, s := range args {
		a = append(a, []byte(s))
	}
	op, spec, err := command.Parse(a)
	if err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	payload := command.EncodeRequests([]command.Request{{Args: a, Op: op, Spec: spec}})
	b := []byte("LKF1")
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, 1)
	return append(b, payload...)
}

// forwardRaw sends a forwarded ACL SETUSER to the peer port at addr over a
// connection dialed with t and s (plain TCP when both are nil; the forward
// header 'F', group 0's) and reports what came back: "" when the port closed
// the connection (or refused the dial) without a reply, else the reply's
// first bytes.
func forwardRaw(t *testing.T, addr string, tc *mux.TLS, s *mux.Secret) string {
	t.Helper()
	conn, err := mux.DialAuth(addr, 'F', 5*time.Second, tc, s)
	if err != nil {
		t.Logf("peer port refused the dial: %v", err)
		return ""
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write(forwardFrame(t, "ACL", "SETUSER", "payouts", "on", ">pw", "~*", "+@all"))
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if n > 0 {
		return string(buf[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the peer port neither answered nor closed the connection in 10s")
	}
	t.Logf("peer port closed the connection: %v", err)
	return ""
}

// userExists reports whether ACL GETUSER knows name.
func userExists(ctx context.Context, t *testing.T, c *redis.Client, name string) bool {
	t.Helper()
	err := c.Do(ctx, "ACL", "GETUSER", name).Err()
	if errors.Is(err, redis.Nil) {
		return false
	}
	if err != nil {
		t.Fatalf("ACL GETUSER %s: %v", name, err)
	}
	return true
}

// Issue 44, item 2: with -tls-ca alone, the CA that signs the nodes'
// certificates also signs the RESP client certificates -tls-client-auth
// asks for. Such a client certificate is refused on the peer port, and a
// forwarded ACL SETUSER over it never runs; before, the peer port accepted
// any certificate the CA signed and ran the request with no ACL.
func TestPeerPortRefusesClientCertificate(t *testing.T) {
	ca := newTestCA(t, "shared-ca")
	opts := writeTLS(t, t.TempDir(), ca, "n1")
	opts.ClientAuth = true
	s := startTLS(t, Config{TLS: opts, RequirePass: "admin-pw"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client := ca.issueClient(t, "payouts")
	// The certificate is a good RESP client certificate...
	c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "admin-pw", MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{client}}})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with the client certificate: %v", err)
	}
	// ...and nothing on the peer port.
	attack := &mux.TLS{Dial: &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{client}}}
	if got := forwardRaw(t, s.Store().PeerAddr(), attack, nil); got != "" {
		t.Fatalf("the peer port answered a forwarded ACL SETUSER over a client certificate: %q", got)
	}
	if userExists(ctx, t, c, "payouts") {
		t.Fatal("the forwarded ACL SETUSER ran: user payouts exists")
	}
	if n := countedSoon(func() uint64 { return s.Store().PeerCounters().NotMember }, 1); n == 0 {
		t.Fatalf("the refusal was not counted: %+v", s.Store().PeerCounters())
	}
	// The node's own certificate still passes (it names the member's host).
	node := pairOf(t, mustRead(t, opts.CertFile), mustRead(t, opts.KeyFile))
	conn, err := mux.DialTLS(s.Store().PeerAddr(), 'F', 5*time.Second, &mux.TLS{Dial: &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{node}}})
	if err != nil {
		t.Fatalf("dial with a member's certificate: %v", err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write(forwardFrame(t, "PING"))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		t.Fatalf("a member's forwarded PING got no reply: %v", err)
	}
	conn.Close()
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With -peer-tls-ca the peer port trusts that CA alone: nodes whose
// certificates it signed form a cluster (a -join included), and a
// certificate from -tls-ca, even one naming a member's host, is refused.
func TestPeerTLSCA(t *testing.T) {
	peerCA, clientCA := newTestCA(t, "peer-ca"), newTestCA(t, "client-ca")
	node := func(id string) tlsconf.Options {
		dir := t.TempDir()
		o := writeTLS(t, dir, peerCA, id) // ca.pem, cert.pem, key.pem of the peer CA
		o.PeerCAFile = o.CAFile
		o.CAFile = filepath.Join(dir, "client-ca.pem")
		if err := os.WriteFile(o.CAFile, clientCA.pem, 0o600); err != nil {
			t.Fatal(err)
		}
		o.ClientAuth = true
		return o
	}
	n1 := startTLS(t, Config{NodeID: "n1", TLS: node("n1")})
	n2 := startTLS(t, Config{NodeID: "n2", TLS: node("n2"), Join: n1.RESPAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := clientCA.issueClient(t, "app")
	dialNode := func(s *Server) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1,
			TLSConfig: &tls.Config{RootCAs: peerCA.pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{client}}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c1, c2 := dialNode(n1), dialNode(n2)
	if n, err := raftMembers(ctx, c1); err != nil || n != 2 {
		t.Fatalf("RAFT MEMBERS: %d, %v; want 2", n, err)
	}
	if err := c2.Set(ctx, "k", "v", 0).Err(); err != nil { // forwarded to the leader
		t.Fatalf("SET on the follower: %v", err)
	}
	if v, err := c1.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on the leader = %q, %v", v, err)
	}
	// A certificate of the client CA that names 127.0.0.1, the members'
	// host: refused all the same.
	cp, kp := clientCA.issue(t, "impostor")
	attack := &mux.TLS{Dial: &tls.Config{RootCAs: peerCA.pool(), Certificates: []tls.Certificate{pairOf(t, cp, kp)}}}
	if got := forwardRaw(t, n1.Store().PeerAddr(), attack, nil); got != "" {
		t.Fatalf("the peer port answered over a -tls-ca certificate: %q", got)
	}
	if userExists(ctx, t, c1, "payouts") {
		t.Fatal("the forwarded ACL SETUSER ran")
	}
	if n := countedSoon(func() uint64 { return n1.Store().PeerCounters().TLS }, 1); n == 0 {
		t.Fatalf("the refusal was not counted: %+v", n1.Store().PeerCounters())
	}
}

const (
	clusterSecret = "an-example-cluster-secret-0123456789"
	otherSecret   = "another-cluster-secret-9876543210xx"
)

// Without TLS, -cluster-secret: three nodes that share it elect a leader and
// replicate (joins and forwarding over authenticated connections); a
// forwarded request sent raw over plain TCP gets no reply and does not run;
// a node with another secret cannot join, and the cluster keeps its three
// members. Before, the peer port answered anyone who reached it.
func TestClusterSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nodes []*Server
	for i, id := range []string{"n1", "n2", "n3"} {
		cfg := Config{NodeID: id, RequirePass: "admin-pw", ClusterSecret: clusterSecret}
		if i > 0 {
			cfg.Join = nodes[0].RESPAddr()
		}
		nodes = append(nodes, startTLS(t, cfg))
	}
	dialNode := func(s *Server) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "admin-pw", MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c1, c3 := dialNode(nodes[0]), dialNode(nodes[2])
	if n, err := raftMembers(ctx, c1); err != nil || n != 3 {
		t.Fatalf("RAFT MEMBERS: %d, %v; want 3", n, err)
	}
	if err := c3.Set(ctx, "k3", "v3", 0).Err(); err != nil {
		t.Fatalf("SET on a follower (forwarded): %v", err)
	}
	if v, err := c1.Get(ctx, "k3").Result(); err != nil || v != "v3" {
		t.Fatalf("GET k3 on the leader = %q, %v", v, err)
	}

	leader := nodes[0].Store().PeerAddr()
	for _, s := range nodes {
		if s.Store().IsLeader() {
			leader = s.Store().PeerAddr()
		}
	}
	if got := forwardRaw(t, leader, nil, nil); got != "" {
		t.Fatalf("the peer port answered a raw forwarded request without the secret: %q", got)
	}
	if got := forwardRaw(t, leader, nil, &mux.Secret{Key: []byte(otherSecret)}); got != "" {
		t.Fatalf("the peer port answered a forwarded request with another secret: %q", got)
	}
	if userExists(ctx, t, c1, "payouts") {
		t.Fatal("a forwarded ACL SETUSER ran")
	}
	refused := countedSoon(func() uint64 {
		var n uint64
		for _, s := range nodes {
			pc := s.Store().PeerCounters()
			n += pc.NoSecret + pc.BadSecret
		}
		return n
	}, 2)
	if refused < 2 {
		t.Fatalf("refusals counted: %d, want at least 2", refused)
	}

	odd, err := New(Config{NodeID: "odd", RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		RequirePass: "admin-pw", ClusterSecret: otherSecret, Join: nodes[0].RESPAddr(), ReadyTimeout: 5 * time.Second})
	if err == nil {
		odd.Close()
		t.Fatal("a node with another cluster secret joined")
	}
	if !strings.Contains(err.Error(), "cluster-secret") {
		t.Errorf("the odd node's error does not name the secret: %v", err)
	}
	if n, err := raftMembers(ctx, c1); err != nil || n != 3 {
		t.Fatalf("RAFT MEMBERS after the odd node: %d, %v; want 3", n, err)
	}
}

// The attack -cluster-secret answers, shown without it: a node with
// -requirepass and no TLS answers a forwarded request from anyone who
// reaches its peer port (SECURITY.md documents this default, which start
// logs at Error on a non-loopback peer address).
func TestOpenPeerPortWithoutSecret(t *testing.T) {
	s := startTLS(t, Config{RequirePass: "admin-pw"})
	if got := forwardRaw(t, s.Store().PeerAddr(), nil, nil); got == "" {
		t.Fatal("the open peer port did not answer (the default changed: update SECURITY.md)")
	}
}

// The rolling walk's first step: a node with -cluster-secret-mode accept
// joins and serves beside a node without any secret (its dials fall back,
// it accepts theirs), and counts the unauthenticated connections it let in.
func TestClusterSecretOptionalBesideOldNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old := startTLS(t, Config{NodeID: "old"})
	upgraded := startTLS(t, Config{NodeID: "new", ClusterSecret: clusterSecret, ClusterSecretOptional: true, Join: old.RESPAddr()})
	c := redis.NewClient(&redis.Options{Addr: upgraded.RESPAddr(), MaxRetries: -1})
	defer c.Close()
	if n, err := raftMembers(ctx, c); err != nil || n != 2 {
		t.Fatalf("RAFT MEMBERS: %d, %v; want 2", n, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on the upgraded follower: %v", err)
	}
	pollUntil(t, "the old leader's connections to be counted", func() bool {
		return upgraded.Store().PeerCounters().Unauthenticated > 0
	})
}

// A node that asks for a password with a peer port open on a non-loopback
// address says so at Error when it starts; loopback, TLS or a required
// secret keep it quiet.
func TestWarnOpenPeerPort(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		secret *mux.Secret
		warn   bool
	}{
		{Config{RequirePass: "pw", PeerAddr: "10.0.0.5:7379"}, nil, true},
		{Config{RequirePass: "pw", PeerAddr: "0.0.0.0:7379"}, nil, true},
		{Config{RequirePass: "pw", PeerAddr: "10.0.0.5:7379"}, &mux.Secret{Key: []byte(clusterSecret), Optional: true}, true},
		{Config{RequirePass: "pw", PeerAddr: "10.0.0.5:7379"}, &mux.Secret{Key: []byte(clusterSecret)}, false},
		{Config{RequirePass: "pw", PeerAddr: "127.0.0.1:7379"}, nil, false},
		{Config{RequirePass: "pw", PeerAddr: "localhost:7379"}, nil, false},
		{Config{PeerAddr: "10.0.0.5:7379"}, nil, false},
	} {
		var buf bytes.Buffer
		s := &Server{cfg: tc.cfg, log: slog.New(slog.NewTextHandler(&buf, nil))}
		s.warnOpenPeerPort(tc.secret)
		if got := strings.Contains(buf.String(), "level=ERROR"); got != tc.warn {
			t.Errorf("%+v secret %v: warned %v, want %v (%s)", tc.cfg.PeerAddr, tc.secret != nil, got, tc.warn, buf.String())
		}
	}
	if _, err := New(Config{DataDir: t.TempDir(), ClusterSecret: "short"}); !errors.Is(err, mux.ErrShortSecret) {
		t.Errorf("a short -cluster-secret: %v, want ErrShortSecret", err)
	}
}

// issueHost is ca.issue for a node on host ip alone (server and client
// authentication, that IP as its only name).
func (ca *testCA) issueHost(t *testing.T, cn, ip string) (certPEM, keyPEM []byte) {
	return ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)}})
}

// With -tls-ca alone and each node on a host of its own (127.0.0.1, .2, .3,
// each certificate naming its own), nodes join one by one: a joining node,
// with no configuration yet, lets in the members its -join member named
// (RAFT MEMBERS), so the leader's connections reach it; then it and the
// others know it from the configuration. A certificate of the same CA for a
// host that is no member's (127.0.0.4) is refused by every node.
func TestPeerTLSMembersOnSeparateHosts(t *testing.T) {
	ca := newTestCA(t, "shared-ca")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nodes []*Server
	for i, id := range []string{"n1", "n2", "n3"} {
		host := "127.0.0." + string(rune('1'+i))
		dir := t.TempDir()
		o := tlsconf.Options{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), CAFile: filepath.Join(dir, "ca.pem")}
		c, k := ca.issueHost(t, id, host)
		for f, b := range map[string][]byte{o.CAFile: ca.pem, o.CertFile: c, o.KeyFile: k} {
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg := Config{NodeID: id, RESPAddr: host + ":0", PeerAddr: host + ":0", DataDir: t.TempDir(), TLS: o}
		if i > 0 {
			cfg.Join = nodes[0].RESPAddr()
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatalf("start %s on %s: %v", id, host, err)
		}
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	c3 := redis.NewClient(&redis.Options{Addr: nodes[2].RESPAddr(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.3"}})
	defer c3.Close()
	if n, err := raftMembers(ctx, c3); err != nil || n != 3 {
		t.Fatalf("RAFT MEMBERS on n3: %d, %v; want 3", n, err)
	}
	if err := c3.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on n3: %v", err)
	}
	cp, kp := ca.issueHost(t, "stranger", "127.0.0.4")
	attack := &mux.TLS{Dial: &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{pairOf(t, cp, kp)}}}
	for _, s := range nodes {
		if got := forwardRaw(t, s.Store().PeerAddr(), attack, nil); got != "" {
			t.Fatalf("%s answered a certificate naming no member: %q", s.Store().PeerAddr(), got)
		}
		if n := countedSoon(func() uint64 { return s.Store().PeerCounters().NotMember }, 1); n != 1 {
			t.Errorf("%s counted %d refusals as not a member, want 1 (the stranger's)", s.Store().PeerAddr(), n)
		}
	}
}

// countedSoon polls count until it reaches want, for at most 5 s, and returns
// its last value. A node counts a refused peer connection as it ends the
// handshake, which the dialer may see before the count moves.
func countedSoon(count func() uint64, want uint64) uint64 {
	n := count()
	for deadline := time.Now().Add(5 * time.Second); n < want && time.Now().Before(deadline); n = count() {
		time.Sleep(5 * time.Millisecond)
	}
	return n
}
