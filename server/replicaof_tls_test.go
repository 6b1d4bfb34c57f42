package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/tlsconf"
	"github.com/redis/go-redis/v9"
)

// TestReplicaOfOverTLS: a node with the master TLS configuration that
// -master-tls builds (tlsconf.DialConfig: the CA, and the node's own
// certificate) follows a redis-server that speaks only TLS and requires
// client certificates.
func TestReplicaOfOverTLS(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ca := newTestCA(t, "test-ca")
	srcTLS := writeTLS(t, dir, ca, "redis")
	srcAddr, _ := clustertest.StartRedis(t, "--port", "0", "--tls-port", "$PORT",
		"--tls-cert-file", srcTLS.CertFile, "--tls-key-file", srcTLS.KeyFile, "--tls-ca-cert-file", srcTLS.CAFile,
		"--tls-auth-clients", "yes", "--repl-diskless-sync-delay", "0")
	_, port, _ := strings.Cut(srcAddr, ":")

	nodeDir := filepath.Join(dir, "node")
	nodeTLS := writeTLS(t, t.TempDir(), ca, "lockd")
	mt, err := tlsconf.DialConfig(nodeTLS.CAFile, nodeTLS.CertFile, nodeTLS.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	src := redis.NewClient(&redis.Options{Addr: srcAddr, TLSConfig: mt.Clone()})
	defer src.Close()
	for end := time.Now().Add(10 * time.Second); src.Set(ctx, "k", "over-tls", 0).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the TLS redis-server did not answer")
		}
	}
	s := startTLS(t, Config{DataDir: nodeDir, MasterTLS: mt})
	dst := redis.NewClient(&redis.Options{Addr: s.RESPAddr()})
	defer dst.Close()
	if err := dst.Do(ctx, "REPLICAOF", "127.0.0.1", port).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	for end := time.Now().Add(30 * time.Second); dst.Get(ctx, "k").Val() != "over-tls"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			info, _ := dst.Info(ctx, "replication").Result()
			t.Fatalf("k did not arrive over TLS:\n%s", info)
		}
	}
}
