package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/tlsconf"
	"github.com/redis/go-redis/v9"
)

// testCA is a throwaway certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for 127.0.0.1 named cn, good for
// both server and client authentication.
func (ca *testCA) issue(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	return ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}})
}

// sign issues tmpl (its subject, usages and names; sign fills in the serial,
// an hour of validity either side of now and the key usage) with a new key,
// and returns the PEM certificate and key.
func (ca *testCA) sign(t *testing.T, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber, _ = rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeTLS writes ca.pem, and cert.pem/key.pem for cn, into dir and returns
// the options naming them.
func writeTLS(t *testing.T, dir string, ca *testCA, cn string) tlsconf.Options {
	t.Helper()
	o := tlsconf.Options{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), CAFile: filepath.Join(dir, "ca.pem")}
	c, k := ca.issue(t, cn)
	for f, b := range map[string][]byte{o.CAFile: ca.pem, o.CertFile: c, o.KeyFile: k} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func startTLS(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.RESPAddr, cfg.PeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// servedName dials addr over TLS and returns the common name of the
// certificate it presents.
func servedName(t *testing.T, addr string, ca *testCA) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("tls dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestTLSClientPorts(t *testing.T) {
	ca := newTestCA(t, "ca")
	dir := t.TempDir()
	opts := writeTLS(t, dir, ca, "node1")
	s := startTLS(t, Config{HTTPAddr: "127.0.0.1:0", TLS: opts})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"}})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET over TLS = %q, %v", v, err)
	}
	// Plain TCP gets no service on a TLS port.
	plain := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("plain PING on the TLS port succeeded")
	}
	// HTTPS on the HTTP port.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}}
	res, err := hc.Get("https://" + s.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("https healthz: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("https healthz: %s", res.Status)
	}
	// redis-cli --tls, as an operator would use it.
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is required (make deps installs it): %v", err)
	}
	_, port, _ := net.SplitHostPort(s.RESPAddr())
	cmd := exec.CommandContext(ctx, "redis-cli", "--tls", "--cacert", opts.CAFile, "-h", "127.0.0.1", "-p", port, "GET", "k")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "v" {
		t.Fatalf("redis-cli --tls GET k = %q, %v", out, err)
	}
}

func TestTLSClientAuth(t *testing.T) {
	ca := newTestCA(t, "ca")
	opts := writeTLS(t, t.TempDir(), ca, "node1")
	opts.ClientAuth = true
	s := startTLS(t, Config{TLS: opts})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	anon := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"}})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("PING without a client certificate succeeded")
	}
	cp, kp := ca.issue(t, "client")
	pair, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}}})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with a client certificate: %v", err)
	}
}

func TestTLSReload(t *testing.T) {
	ca := newTestCA(t, "ca")
	dir := t.TempDir()
	opts := writeTLS(t, dir, ca, "v1")
	s := startTLS(t, Config{TLS: opts, TLSWatchInterval: 20 * time.Millisecond})
	if got := servedName(t, s.RESPAddr(), ca); got != "v1" {
		t.Fatalf("served %q, want v1", got)
	}
	replace := func(cn string) {
		c, k := ca.issue(t, cn)
		// Written beside and renamed in, as cert managers do.
		for f, b := range map[string][]byte{opts.CertFile: c, opts.KeyFile: k} {
			if err := os.WriteFile(f+".new", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".new", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	// SIGHUP's path: an explicit reload.
	replace("v2")
	if err := s.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS: %v", err)
	}
	if got := servedName(t, s.RESPAddr(), ca); got != "v2" {
		t.Fatalf("after reload served %q, want v2", got)
	}
	// A broken pair keeps the previous one.
	if err := os.WriteFile(opts.KeyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.ReloadTLS(); err == nil {
		t.Fatal("ReloadTLS of a broken key succeeded")
	}
	if got := servedName(t, s.RESPAddr(), ca); got != "v2" {
		t.Fatalf("after a failed reload served %q, want v2", got)
	}
	// The watcher: no call at all.
	replace("v3")
	deadline := time.Now().Add(10 * time.Second)
	for servedName(t, s.RESPAddr(), ca) != "v3" {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not load the new certificate within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// raftMembers returns the number of members RAFT MEMBERS lists.
func raftMembers(ctx context.Context, c *redis.Client) (int, error) {
	v, err := c.Do(ctx, "RAFT", "MEMBERS").Slice()
	return len(v), err
}

func TestTLSPeerMutual(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nodes []*Server
	for i, id := range []string{"n1", "n2", "n3"} {
		cfg := Config{NodeID: id, TLS: writeTLS(t, t.TempDir(), ca, id)}
		if i > 0 {
			cfg.Join = nodes[0].RESPAddr()
		}
		nodes = append(nodes, startTLS(t, cfg))
	}
	ctls := &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"}
	c1 := redis.NewClient(&redis.Options{Addr: nodes[0].RESPAddr(), MaxRetries: -1, TLSConfig: ctls})
	defer c1.Close()
	if n, err := raftMembers(ctx, c1); err != nil || n != 3 {
		t.Fatalf("RAFT MEMBERS: %d members, %v; want 3", n, err)
	}
	// A write on the leader is committed through the mTLS peer port and
	// readable on a follower (forwarded over it too).
	if err := c1.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	c3 := redis.NewClient(&redis.Options{Addr: nodes[2].RESPAddr(), MaxRetries: -1, TLSConfig: ctls})
	defer c3.Close()
	if err := c3.Set(ctx, "k3", "v3", 0).Err(); err != nil {
		t.Fatalf("SET on a follower (forwarded): %v", err)
	}
	if v, err := c1.Get(ctx, "k3").Result(); err != nil || v != "v3" {
		t.Fatalf("GET k3 on the leader = %q, %v", v, err)
	}

	// A node whose certificate another CA signed cannot join...
	rogue := newTestCA(t, "rogue-ca")
	ropts := writeTLS(t, t.TempDir(), rogue, "rogue")
	bad, err := New(Config{NodeID: "rogue", RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		TLS: ropts, Join: nodes[0].RESPAddr(), ReadyTimeout: 2 * time.Second})
	if err == nil {
		bad.Close()
		t.Fatal("a node with a rogue certificate joined")
	}
	// ...nor reach a peer port with its certificate (its Raft traffic is
	// refused), nor with none at all.
	rl, err := tlsconf.Load(ropts, nil)
	if err != nil {
		t.Fatal(err)
	}
	listen, dial := rl.PeerConfigs()
	peer := nodes[0].Store().PeerAddr()
	for name, tt := range map[string]*mux.TLS{"rogue certificate": {Listen: listen, Dial: dial}, "plain TCP": nil} {
		conn, err := mux.DialTLS(peer, 'R', 2*time.Second, tt)
		if err != nil {
			continue // refused during the handshake
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write([]byte("more"))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: the peer port answered", name)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: the peer port kept the connection open", name)
		}
		conn.Close()
	}
	// The cluster still counts three members.
	if n, err := raftMembers(ctx, c1); err != nil || n != 3 {
		t.Fatalf("RAFT MEMBERS after the rogue node: %d members, %v; want 3", n, err)
	}
}

// A blocking LOCK.ACQUIRE … WAIT over TLS is woken by the release, and a TLS
// client that disconnects while blocked leaves the queue (the door's read-ahead
// works under TLS).
func TestTLSBlockingAcquire(t *testing.T) {
	ca := newTestCA(t, "ca")
	opts := writeTLS(t, t.TempDir(), ca, "node1")
	s := startTLS(t, Config{TLS: opts})
	ctx := context.Background()
	dial := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1, ReadTimeout: -1,
			TLSConfig: &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	tok, err := c.Do(ctx, "LOCK.ACQUIRE", "job", "a", "PX", "60000").Int64()
	if err != nil {
		t.Fatal(err)
	}
	gone := dial()
	go gone.Do(ctx, "LOCK.ACQUIRE", "job", "gone", "WAIT", "30000")
	pollUntil(t, "the first waiter to queue", func() bool { return queueLength(t, c, "job") == 1 })
	gone.Close()
	pollUntil(t, "the disconnected waiter to leave", func() bool { return queueLength(t, c, "job") == 0 })
	got := make(chan int64, 1)
	go func() {
		v, _ := dial().Do(ctx, "LOCK.ACQUIRE", "job", "b", "WAIT", "10000").Int64()
		got <- v
	}()
	pollUntil(t, "the second waiter to queue", func() bool { return queueLength(t, c, "job") == 1 })
	c.Do(ctx, "LOCK.RELEASE", "job", tok)
	select {
	case v := <-got:
		if v <= tok {
			t.Fatalf("waiter got %d, want a token above %d", v, tok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter over TLS was not woken")
	}
}
