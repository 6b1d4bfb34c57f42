package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// SLOWLOG, CLIENT KILL and MONITOR, as an operator uses them.
func TestSlowlogClientKillMonitor(t *testing.T) {
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(), EnableMonitor: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 2)
	// Every command is slower than 0 µs.
	if err := c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		t.Fatal(err)
	}
	c.SlowLogReset(ctx)
	c.Set(ctx, "slow-key", strings.Repeat("x", 300), 0)
	c.Do(ctx, "AUTH", "secret-password") // an error, and redacted
	logs, err := c.SlowLogGet(ctx, 10).Result()
	if err != nil || len(logs) < 2 {
		t.Fatalf("SLOWLOG GET = %v, %v", logs, err)
	}
	var set, auth bool
	for _, l := range logs {
		switch strings.ToLower(l.Args[0]) {
		case "set":
			set = l.Args[1] == "slow-key" && strings.HasSuffix(l.Args[2], "... (172 more bytes)")
		case "auth":
			auth = len(l.Args) == 1
		}
	}
	if !set || !auth {
		t.Fatalf("SLOWLOG entries %+v: want the SET truncated and AUTH without its password", logs)
	}
	if n, _ := c.Do(ctx, "SLOWLOG", "LEN").Int64(); n < 2 {
		t.Fatalf("SLOWLOG LEN = %d", n)
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
	c.SlowLogReset(ctx)
	if n, _ := c.Do(ctx, "SLOWLOG", "LEN").Int64(); n != 0 {
		t.Fatalf("SLOWLOG LEN after RESET = %d", n)
	}

	// MONITOR sees the other clients' commands.
	mon, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	fmt.Fprint(mon, "MONITOR\r\n")
	rd := bufio.NewReader(mon)
	mon.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := rd.ReadString('\n'); line != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", line)
	}
	c.Set(ctx, "watched", "v", 0)
	line, _ := rd.ReadString('\n')
	if !strings.HasPrefix(line, "+") || !strings.HasSuffix(line, `"set" "watched" "v"`+"\r\n") {
		t.Fatalf("MONITOR line = %q", line)
	}

	// CLIENT KILL ID closes that client only.
	victim := client(t, s, 2)
	id, err := victim.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "CLIENT", "KILL", "ID", id).Int64(); n != 1 || err != nil {
		t.Fatalf("CLIENT KILL ID = %d, %v", n, err)
	}
	if n, _ := c.Do(ctx, "CLIENT", "KILL", "ID", id).Int64(); n != 0 {
		t.Fatalf("second CLIENT KILL ID = %d", n)
	}
	if err := c.Do(ctx, "CLIENT", "KILL", "127.0.0.1:1").Err(); err == nil || err.Error() != "ERR No such client" {
		t.Fatalf("CLIENT KILL of an unknown address: %v", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the killer was killed: %v", err)
	}

	// Off by default.
	s2 := start(t, t.TempDir())
	defer s2.Close()
	if err := client(t, s2, 2).Do(ctx, "MONITOR").Err(); err == nil || !strings.Contains(err.Error(), "-enable-monitor") {
		t.Fatalf("MONITOR without -enable-monitor: %v", err)
	}
}
