package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// untilInLoop writes with c until the event loop serves a client: a new
// connection starts with its own goroutine (go-redis opens with commands the
// loop does not serve) and moves to the loop after enough plain batches.
func untilInLoop(t *testing.T, s *Server, c *redis.Client) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for infoField(t, s, "clients", "event_loop_clients") == "0" {
		if time.Now().After(end) {
			t.Fatal("no client moved to the event loop")
		}
		if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
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
	untilInLoop(t, s, c)
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

// groupTokens reads every group's applied_token from INFO raft.
func groupTokens(t *testing.T, s *Server, groups int) []int64 {
	t.Helper()
	out := make([]int64, groups)
	for g := range groups {
		line := infoField(t, s, "raft", fmt.Sprintf("raft_group_%d", g))
		for _, kv := range strings.Split(line, ",") {
			if v, ok := strings.CutPrefix(kv, "applied_token="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("raft_group_%d: %q", g, line)
				}
				out[g] = n
			}
		}
	}
	return out
}

// -event-loop auto serves a node of several groups with the loop too: a
// client in the loop pipelines locks and writes whose keys span every group,
// and each reply is the one its own command gets (a token from its group, the
// values read back), every group having applied its part.
func TestEventLoopSeveralGroups(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the event loop is Linux only") // the CI runs on Linux
	}
	const groups = 4
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: t.TempDir(), Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := infoField(t, s, "server", "multiplexing_api"); got != "epoll" {
		t.Fatalf("%d groups: multiplexing_api = %q, want epoll", groups, got)
	}
	ctx := context.Background()
	c := client(t, s, 2)
	untilInLoop(t, s, c)
	before := groupTokens(t, s, groups)
	const n = 100
	p := c.Pipeline()
	locks := make([]*redis.Cmd, n)
	sets := make([]*redis.StatusCmd, n)
	for i := range n {
		locks[i] = p.Do(ctx, "LOCK.ACQUIRE", fmt.Sprintf("several/lock/%d", i), "me", "PX", "60000")
		sets[i] = p.Set(ctx, fmt.Sprintf("several/key/%d", i), fmt.Sprintf("v%d", i), 0)
	}
	again := p.Do(ctx, "LOCK.ACQUIRE", "several/lock/0", "other", "PX", "60000") // held: nil
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	for i := range n {
		if tok, err := locks[i].Int64(); err != nil || tok <= 0 {
			t.Fatalf("LOCK.ACQUIRE several/lock/%d = %d, %v", i, tok, err)
		}
		if err := sets[i].Err(); err != nil {
			t.Fatalf("SET several/key/%d: %v", i, err)
		}
	}
	if err := again.Err(); err != redis.Nil {
		t.Fatalf("a second holder of several/lock/0: %v, want nil", again.Val())
	}
	after := groupTokens(t, s, groups)
	for g := range groups {
		if after[g] <= before[g] {
			t.Errorf("group %d applied nothing of the pipeline: applied_token %d then %d", g, before[g], after[g])
		}
	}
	for i := range n {
		if v, err := c.Get(ctx, fmt.Sprintf("several/key/%d", i)).Result(); err != nil || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("GET several/key/%d = %q, %v", i, v, err)
		}
		tok := locks[i].Val()
		if r, err := c.Do(ctx, "LOCK.VALIDATE", fmt.Sprintf("several/lock/%d", i), tok).Int64(); err != nil || r != 1 {
			t.Fatalf("LOCK.VALIDATE several/lock/%d %v = %d, %v", i, tok, r, err)
		}
	}
	if got := infoField(t, s, "clients", "event_loop_clients"); got == "0" {
		t.Fatal("the client left the loop")
	}
}
