package clustertest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawDo sends one command as a RESP array on c and returns the first line
// of the reply (a bulk reply's length line).
func rawDo(t *testing.T, c net.Conn, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// StartRedis returns a server that answers on its address and works in its
// dir, and the server is gone once the test that started it has ended.
func TestStartRedis(t *testing.T) {
	var addr, dir string
	t.Run("running", func(t *testing.T) {
		addr, dir = StartRedis(t)
		c := dialT(t, addr)
		if got := rawDo(t, c, "PING"); got != "+PONG\r\n" {
			t.Fatalf("PING answered %q", got)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$3\r\ndir\r\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		var lines []string
		for range 5 { // *2, $3, dir, $n, the directory
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, strings.TrimSuffix(l, "\r\n"))
		}
		want, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		if lines[4] != want {
			t.Fatalf("CONFIG GET dir = %q, want %q", lines, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "redis-0.log")); err != nil {
			t.Fatalf("no log in dir: %v", err)
		}
	})
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after its test ended", addr)
	}
}

// A server with a password is up (PING answers NOAUTH), and "$PORT" in an
// extra argument is the server's port.
func TestStartRedisPassword(t *testing.T) {
	addr, _ := StartRedis(t, "--requirepass", "pw-$PORT")
	_, port, _ := net.SplitHostPort(addr)
	c := dialT(t, addr)
	if got := rawDo(t, c, "PING"); !strings.HasPrefix(got, "-NOAUTH ") {
		t.Fatalf("PING before AUTH answered %q", got)
	}
	if got := rawDo(t, c, "AUTH", "pw-"+port); got != "+OK\r\n" {
		t.Fatalf("AUTH pw-%s answered %q", port, got)
	}
}

// The plain port is off when the last --port of extra is 0; then StartRedis
// only waits for the TLS port to accept (replica's TestTLS and server's
// TestReplicaOfOverTLS start such servers).
func TestTLSOnly(t *testing.T) {
	for _, c := range []struct {
		extra []string
		want  bool
	}{
		{nil, false},
		{[]string{"--port", "0", "--tls-port", "$PORT"}, true},
		{[]string{"--port", "0", "--port", "$PORT"}, false},
		{[]string{"--tls-port", "0"}, false},
		{[]string{"--port"}, false},
	} {
		if got := tlsOnly(c.extra); got != c.want {
			t.Errorf("tlsOnly(%q) = %v, want %v", c.extra, got, c.want)
		}
	}
}

// A port another redis-server holds is not taken for this one's: the first
// try's process cannot bind it and exits, and StartRedis goes on to a new
// port, leaving the other server alone.
func TestStartRedisPortTaken(t *testing.T) {
	other, _ := StartRedis(t, "--requirepass", "other")
	tries := 0
	addr, dir := startRedisOn(t, func() string {
		tries++
		if tries == 1 {
			return other
		}
		return Addrs(t, 1)[0]
	}, nil)
	if addr == other || tries != 2 {
		t.Fatalf("started on %s after %d tries, with %s taken", addr, tries, other)
	}
	if log := readTail(filepath.Join(dir, "redis-0.log")); !strings.Contains(log, "Address already in use") {
		t.Fatalf("the first try's log does not say its port was taken:\n%s", log)
	}
	if got := rawDo(t, dialT(t, addr), "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING answered %q", got)
	}
	if got := rawDo(t, dialT(t, other), "PING"); !strings.HasPrefix(got, "-NOAUTH ") {
		t.Fatalf("the other server answered PING %q", got)
	}
}

// A server that cannot start fails the test with the log's reason; a missing
// redis-server fails it with the install hint.
func TestStartRedisFails(t *testing.T) {
	msg := runFatal(t, func(tb testing.TB) { StartRedis(tb, "--no-such-directive", "x") })
	if !strings.Contains(msg, "Bad directive") || !strings.Contains(msg, "3 tries") {
		t.Fatalf("a bad option failed with:\n%s", msg)
	}
	t.Setenv("PATH", t.TempDir())
	msg = runFatal(t, func(tb testing.TB) { StartRedis(tb) })
	if !strings.Contains(msg, "redis-server is not on PATH") || !strings.Contains(msg, RedisInstallHint) {
		t.Fatalf("a missing redis-server failed with: %q", msg)
	}
}
