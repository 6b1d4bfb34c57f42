package server

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// infoField reads one field of INFO section.
func infoField(t *testing.T, s *Server, section, field string) string {
	t.Helper()
	c := client(t, s, 2)
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, field, info)
	return ""
}

// -event-loop: a single node (one group) serves its clients with the event
// loop by default, a goroutine each with "off"; anything else is refused.
func TestEventLoopModes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the event loop is Linux only") // the CI runs on Linux
	}
	ctx := context.Background()
	s := start(t, t.TempDir())
	defer s.Close()
	if got := infoField(t, s, "server", "multiplexing_api"); got != "epoll" {
		t.Fatalf("multiplexing_api = %q, want epoll", got)
	}
	c := client(t, s, 3) // go-redis opens with HELLO 3: served by the connection's goroutine
	end := time.Now().Add(5 * time.Second)
	for infoField(t, s, "clients", "event_loop_clients") == "0" {
		if time.Now().After(end) {
			t.Fatal("no client moved to the event loop")
		}
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}

	off, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(), EventLoop: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if got := infoField(t, off, "server", "multiplexing_api"); got != "goroutine" {
		t.Fatalf("-event-loop off: multiplexing_api = %q", got)
	}
	oc := client(t, off, 2)
	for range 40 {
		if err := oc.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := infoField(t, off, "clients", "event_loop_clients"); got != "0" {
		t.Fatalf("-event-loop off: event_loop_clients = %s", got)
	}

	dir := filepath.Join(t.TempDir(), "data")
	if _, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: dir, EventLoop: "sometimes"}); err == nil ||
		!strings.Contains(err.Error(), `-event-loop "sometimes"`) {
		t.Fatalf("-event-loop sometimes: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused -event-loop touched the data directory: %v", err)
	}
}
