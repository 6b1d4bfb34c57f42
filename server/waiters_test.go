package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// queueLength polls LOCK.INFO for the number of waiters on name.
func queueLength(t *testing.T, c *redis.Client, name string) int64 {
	t.Helper()
	v, err := c.Do(context.Background(), "LOCK.INFO", name).Result()
	if err == redis.Nil {
		return 0
	}
	if err != nil {
		t.Fatalf("LOCK.INFO: %v", err)
	}
	m, _ := v.(map[any]any)
	n, _ := m["queue_length"].(int64)
	return n
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client blocked in LOCK.ACQUIRE … WAIT that closes its connection leaves
// the queue; the next release goes to the waiter behind it. Other clients are
// served while one blocks, and commands pipelined behind a blocking acquire
// wait for it.
func TestBlockingAcquireOverRESP(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 3)
	tok, err := c.Do(ctx, "LOCK.ACQUIRE", "job", "holder", "PX", "60000").Int64()
	if err != nil {
		t.Fatal(err)
	}
	// A raw connection blocks, with a PING pipelined behind the acquire.
	raw, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(raw, "*5\r\n$12\r\nLOCK.ACQUIRE\r\n$3\r\njob\r\n$4\r\ngone\r\n$4\r\nWAIT\r\n$5\r\n60000\r\n*1\r\n$4\r\nPING\r\n")
	pollUntil(t, "the raw client to queue", func() bool { return queueLength(t, c, "job") == 1 })
	raw.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _ := raw.Read(make([]byte, 64)); n != 0 {
		t.Fatal("the pipelined PING was answered while the acquire before it blocks")
	}
	// A second waiter, through go-redis, behind it.
	second := make(chan int64, 1)
	go func() {
		c2 := client(t, s, 2)
		v, _ := c2.Do(ctx, "LOCK.ACQUIRE", "job", "next", "WAIT", "10000").Int64()
		second <- v
	}()
	pollUntil(t, "the second waiter to queue", func() bool { return queueLength(t, c, "job") == 2 })
	raw.Close()
	pollUntil(t, "the disconnected waiter to leave", func() bool { return queueLength(t, c, "job") == 1 })
	if err := c.Do(ctx, "LOCK.RELEASE", "job", tok).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-second:
		if v <= tok {
			t.Fatalf("second waiter got %d, want a token above %d", v, tok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter behind a disconnected one was not granted")
	}
}

// The pipelined reply order: a blocking acquire's reply, then what followed it.
func TestBlockingAcquirePipeline(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	c := client(t, s, 2)
	if err := c.Do(context.Background(), "LOCK.ACQUIRE", "p", "holder", "PX", "200").Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fmt.Fprint(raw, "LOCK.ACQUIRE p w WAIT 5000\r\nPING\r\n")
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(raw)
	first, _ := rd.ReadString('\n')
	second, _ := rd.ReadString('\n')
	if !strings.HasPrefix(first, ":") || second != "+PONG\r\n" {
		t.Fatalf("replies %q %q, want a token then PONG", first, second)
	}
}
