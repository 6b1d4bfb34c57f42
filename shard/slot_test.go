package shard

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSlotTable(t *testing.T) {
	// Values from the Redis Cluster specification and redis-cli.
	for _, c := range []struct {
		key  string
		slot uint16
	}{
		{"123456789", 12739}, // the CRC16 check value 0x31C3 & 16383
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", Slot([]byte("foo{}{bar}"))},
		{"foo{{bar}}zap", Slot([]byte("{bar"))},
		{"foo{bar}{zap}", Slot([]byte("bar"))},
	} {
		if got := Slot([]byte(c.key)); got != c.slot {
			t.Errorf("Slot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
	if HashPart([]byte("foo{}{bar}")) == nil || string(HashPart([]byte("foo{}{bar}"))) != "foo{}{bar}" {
		t.Errorf("an empty tag must hash the whole key")
	}
}

// TestSlotMatchesRedis compares Slot with CLUSTER KEYSLOT of a real
// redis-server started with cluster mode on.
func TestSlotMatchesRedis(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required (make deps installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--dir", dir, "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	keys := []string{"", "a", "{", "}", "{}", "{a}", "a{b}c", "a{}b{c}", "{{a}}", "{a", "lock:payouts/48213", "\x00\xff\x10", "{user1000}.following"}
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("key:%d", i), fmt.Sprintf("{tag%d}x%d", i%7, i), fmt.Sprintf("x{%d", i))
	}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := Slot([]byte(k)); int64(got) != want {
			t.Errorf("Slot(%q) = %d, redis says %d", k, got, want)
		}
	}
}
