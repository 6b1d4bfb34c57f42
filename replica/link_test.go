package replica

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slaveOffset returns the offset and state INFO replication lists for the
// replica announcing port, or ok false if none does.
func slaveOffset(t *testing.T, c *redis.Client, port int) (offset int64, state string, ok bool) {
	for k, v := range info(t, c, "replication") {
		if !strings.HasPrefix(k, "slave") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(kv, "="); ok {
				f[a] = b
			}
		}
		if f["port"] != strconv.Itoa(port) {
			continue
		}
		off, _ := strconv.ParseInt(f["offset"], 10, 64)
		return off, f["state"], true
	}
	return 0, "", false
}

// waitAcked waits until the master lists the replica announcing port as
// online with an acknowledged offset equal to master_repl_offset, and the
// link reports that offset too.
func waitAcked(t *testing.T, c *redis.Client, l *Link, port int) {
	t.Helper()
	var last string
	deadline := time.Now().Add(waitFor)
	for {
		master, _ := strconv.ParseInt(info(t, c, "replication")["master_repl_offset"], 10, 64)
		off, state, ok := slaveOffset(t, c, port)
		st := l.Status()
		if ok && state == "online" && off == master && st.Offset == master {
			return
		}
		last = "master_repl_offset " + strconv.FormatInt(master, 10) + ", replica " + state +
			" acked " + strconv.FormatInt(off, 10) + ", link " + strconv.FormatInt(st.Offset, 10)
		if time.Now().After(deadline) {
			t.Fatalf("the master's view of the link did not settle within %v: %s", waitFor, last)
		}
		time.Sleep(pollEvery)
	}
}

func connected(l *Link) func() bool {
	return func() bool { return l.Status().State == StateConnected }
}

// TestFollow follows a Redis through a full sync (disk-based and diskless)
// and the command stream: every key of the RDB, then writes, SELECT,
// MULTI/EXEC and a script's effects, in order, acknowledged.
func TestFollow(t *testing.T) {
	for _, diskless := range []string{"no", "yes"} {
		t.Run("diskless="+diskless, func(t *testing.T) {
			addr := startRedis(t, "--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0")
			ctx := context.Background()
			c := client(t, addr)
			c1 := client(t, addr, func(o *redis.Options) { o.DB = 1 })
			c.Set(ctx, "str", "v", 0)
			c.Set(ctx, "ttl", "v", time.Hour)
			c.RPush(ctx, "list", "a", "b")
			c.SAdd(ctx, "set", "x", "y")
			c.ZAdd(ctx, "zset", redis.Z{Score: 1, Member: "m"})
			c.HSet(ctx, "hash", "f", "v")
			c.XAdd(ctx, &redis.XAddArgs{Stream: "stream", Values: []string{"f", "v"}})
			c1.Set(ctx, "one", "1", 0)

			sink := newMemSink()
			const port = 7001
			l := New(Config{Addr: addr, ListenPort: port}, sink)
			run(t, l)
			eventually(t, "the link follows the stream", connected(l))
			checkLoaded(t, sink)
			if st := l.Status(); st.FullSyncs != 1 || st.PartialSyncs != 0 || st.ReplID == "" || st.Port == 0 ||
				st.SyncInProgress || time.Since(st.LastIO) > waitFor || st.Err != "" {
				t.Fatalf("status after the first sync: %+v", st)
			}

			c.Set(ctx, "a", "1", 0)
			c1.Set(ctx, "b", "1", 0)
			c.Incr(ctx, "n")
			if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "n")
				p.Set(ctx, "t", "1", 0)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			c.Eval(ctx, "redis.call('incr', KEYS[1]); redis.call('incr', KEYS[1])", []string{"n"})
			eventually(t, "the writes arrive", func() bool { return sink.counter(0, "n") == 4 })
			if !sink.has(0, "a") || !sink.has(1, "b") || sink.has(0, "b") || !sink.has(0, "t") {
				t.Fatal("a write arrived in the wrong database or not at all")
			}
			txs := 0
			for _, cmd := range sink.commands() {
				if cmd.Tx != nil {
					txs++
				}
				if cmd.Tx == nil && strings.EqualFold(string(cmd.Args[0]), "SET") && string(cmd.Args[1]) == "b" && cmd.DB != 1 {
					t.Errorf("SET b in DB %d, want 1", cmd.DB)
				}
			}
			if txs != 2 {
				t.Errorf("%d transactions, want 2 (MULTI/EXEC and the script)", txs)
			}
			sink.check(t)

			// WAIT asks for an ACK (REPLCONF GETACK) and counts this replica.
			if n, err := c.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
				t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
			}
			waitAcked(t, c, l, port)
		})
	}
}

// checkLoaded checks the sink holds every key TestFollow wrote before the
// sync, with its expiry.
func checkLoaded(t *testing.T, sink *memSink) {
	t.Helper()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.begins != 1 || sink.ends != 1 {
		t.Errorf("BeginFull %d times, EndFull %d times; want 1, 1", sink.begins, sink.ends)
	}
	for _, k := range []string{"0/str", "0/ttl", "0/list", "0/set", "0/zset", "0/hash", "0/stream", "1/one"} {
		if _, ok := sink.keys[k]; !ok {
			t.Errorf("key %s not loaded; loaded %d keys", k, len(sink.keys))
		}
	}
	if e := sink.keys["0/ttl"]; e.ExpireMs <= time.Now().UnixMilli() {
		t.Errorf("ttl loaded with expiry %d", e.ExpireMs)
	}
	if e := sink.keys["0/str"]; e.ExpireMs != 0 {
		t.Errorf("str loaded with expiry %d", e.ExpireMs)
	}
	if e := sink.keys["0/stream"]; e.Skipped == "" {
		t.Errorf("the stream key was not marked Skipped: %+v", e)
	}
}

// TestResume stops a link, writes on the master, and starts another link
// from the sink's Position: the master continues (+CONTINUE) and every INCR
// arrives exactly once, in the database selected before the stop. A sink
// that fails makes the link reconnect and continue the same way.
func TestResume(t *testing.T) {
	addr := startRedis(t, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0")
	ctx := context.Background()
	c := client(t, addr)
	c1 := client(t, addr, func(o *redis.Options) { o.DB = 1 })
	sink := newMemSink()
	cfg := Config{Addr: addr, ListenPort: 7002}

	l := New(cfg, sink)
	stop := run(t, l)
	eventually(t, "the first link follows the stream", connected(l))
	for range 10 {
		c.Incr(ctx, "ctr")
	}
	c1.Incr(ctx, "c1") // the stream's last SELECT is 1
	eventually(t, "the INCRs arrive", func() bool { return sink.counter(0, "ctr") == 10 && sink.counter(1, "c1") == 1 })
	stop()

	for range 3 {
		c1.Incr(ctx, "c1") // no SELECT before these in the backlog
	}
	for range 5 {
		c.Incr(ctx, "ctr")
	}
	l2 := New(cfg, sink)
	run(t, l2)
	eventually(t, "the second link catches up", func() bool {
		return sink.counter(0, "ctr") == 15 && sink.counter(1, "c1") == 4
	})
	if st := l2.Status(); st.PartialSyncs != 1 || st.FullSyncs != 0 {
		t.Fatalf("status after resuming: %+v; want one partial sync, no full one", st)
	}

	sink.mu.Lock()
	sink.failNext = errors.New("no quorum")
	sink.mu.Unlock()
	c.Incr(ctx, "ctr")
	c.IncrBy(ctx, "ctr", 10)
	eventually(t, "the link reconnects after the sink's error", func() bool {
		return l2.Status().PartialSyncs == 2 && l2.Status().State == StateConnected
	})
	eventually(t, "the INCRs after the error arrive", func() bool { return sink.counter(0, "ctr") == 26 })
	if got, err := c.Get(ctx, "ctr").Int64(); err != nil || got != 26 {
		t.Fatalf("GET ctr = %d, %v", got, err)
	}
	if st := l2.Status(); st.FullSyncs != 0 || sink.begins != 1 {
		t.Fatalf("a full sync happened: %+v, BeginFull %d times", st, sink.begins)
	}
	sink.check(t)
	waitAcked(t, c, l2, cfg.ListenPort)
}

// TestUnknownPosition starts from positions the master cannot continue: a
// replication id it never had, and its own id at an offset past its own.
// Both get a full resync.
func TestUnknownPosition(t *testing.T) {
	addr := startRedis(t, "--repl-diskless-sync-delay", "0")
	ctx := context.Background()
	c := client(t, addr)
	c.Set(ctx, "k", "v", 0)
	follow := func(pos Position) {
		t.Helper()
		sink := newMemSink()
		sink.pos = pos
		l := New(Config{Addr: addr, ListenPort: 7003}, sink)
		stop := run(t, l)
		defer stop()
		eventually(t, "the link follows the stream", connected(l))
		st := l.Status()
		if st.FullSyncs != 1 || st.PartialSyncs != 0 || sink.begins != 1 {
			t.Fatalf("from %+v: %+v, BeginFull %d times; want a full sync", pos, st, sink.begins)
		}
		// The master's id changes when its first replica connects.
		if got, want := sink.Position().ReplID, info(t, c, "replication")["master_replid"]; got != want {
			t.Fatalf("from %+v: the sink follows replid %s, want %s", pos, got, want)
		}
	}
	follow(Position{ReplID: strings.Repeat("0", 40), Offset: 100})
	follow(Position{ReplID: info(t, c, "replication")["master_replid"], Offset: 1 << 40})
}

// TestAuth follows masters that need a password and an ACL user, and shows
// a wrong password in Status.Err.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	t.Run("requirepass", func(t *testing.T) {
		addr := startRedis(t, "--requirepass", "pw", "--repl-diskless-sync-delay", "0")
		sink := newMemSink()
		l := New(Config{Addr: addr, Password: "pw", ListenPort: 7004}, sink)
		run(t, l)
		eventually(t, "the link follows the stream", connected(l))
		c := client(t, addr, func(o *redis.Options) { o.Password = "pw" })
		c.Incr(ctx, "n")
		eventually(t, "the INCR arrives", func() bool { return sink.counter(0, "n") == 1 })
	})
	t.Run("acl user", func(t *testing.T) {
		addr := startRedis(t, "--user", "default", "off", "--user", "repl", "on", ">secret", "~*", "&*", "+@all", "--repl-diskless-sync-delay", "0")
		sink := newMemSink()
		l := New(Config{Addr: addr, User: "repl", Password: "secret", ListenPort: 7005}, sink)
		run(t, l)
		eventually(t, "the link follows the stream", connected(l))
		c := client(t, addr, func(o *redis.Options) { o.Username, o.Password = "repl", "secret" })
		c.Incr(ctx, "n")
		eventually(t, "the INCR arrives", func() bool { return sink.counter(0, "n") == 1 })
	})
	t.Run("wrong password", func(t *testing.T) {
		addr := startRedis(t, "--requirepass", "pw")
		l := New(Config{Addr: addr, Password: "nope"}, newMemSink())
		run(t, l)
		eventually(t, "the refusal shows", func() bool {
			st := l.Status()
			return st.State != StateConnected && strings.Contains(st.Err, "AUTH") && strings.Contains(st.Err, "WRONGPASS")
		})
	})
}

// TestSelectInTransaction writes in two databases in one transaction: the
// Tx command says each command's database and the database after EXEC.
func TestSelectInTransaction(t *testing.T) {
	addr := startRedis(t, "--repl-diskless-sync-delay", "0")
	ctx := context.Background()
	c := client(t, addr)
	sink := newMemSink()
	l := New(Config{Addr: addr, ListenPort: 7006}, sink)
	run(t, l)
	eventually(t, "the link follows the stream", connected(l))

	cn := c.Conn()
	defer cn.Close()
	if _, err := cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "x")
		p.Select(ctx, 1)
		p.Incr(ctx, "y")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cn.Incr(ctx, "z") // in database 1, after the transaction
	eventually(t, "the writes arrive", func() bool {
		return sink.counter(0, "x") == 1 && sink.counter(1, "y") == 1 && sink.counter(1, "z") == 1
	})
	cmds := sink.commands()
	if len(cmds) != 2 || len(cmds[0].Tx) != 2 || cmds[0].DB != 1 || cmds[0].TxDB[0] != 0 || cmds[0].TxDB[1] != 1 ||
		cmds[1].Tx != nil || cmds[1].DB != 1 {
		for _, cmd := range cmds {
			t.Logf("DB %d Args %q Tx %q TxDB %v End %d", cmd.DB, cmd.Args, cmd.Tx, cmd.TxDB, cmd.End)
		}
		t.Fatal("want the transaction (INCR x in 0, INCR y in 1, DB 1 after) then INCR z in 1")
	}
	sink.check(t)
}

// TestTLS follows a master that listens only with TLS.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, certFile, keyFile := writeCert(t, dir)
	addr := startRedis(t, "--port", "0", "--tls-port", "$PORT", "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no",
		"--repl-diskless-sync-delay", "0")
	tc := &tls.Config{RootCAs: ca}
	sink := newMemSink()
	l := New(Config{Addr: addr, TLS: tc, ListenPort: 7007}, sink)
	run(t, l)
	eventually(t, "the link follows the stream", connected(l))
	c := client(t, addr, func(o *redis.Options) { o.TLSConfig = tc })
	if err := c.Incr(context.Background(), "n").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the INCR arrives", func() bool { return sink.counter(0, "n") == 1 })
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files in dir, and returns a pool holding it.
func writeCert(t *testing.T, dir string) (pool *x509.CertPool, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "replica test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pool, certFile, keyFile
}
