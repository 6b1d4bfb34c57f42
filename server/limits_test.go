package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRedactArgs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"lockd -requirepass hunter2 -addr :6379", "lockd -requirepass REDACTED -addr :6379"},
		{"lockd --requirepass=hunter2", "lockd --requirepass=REDACTED"},
		{"lockd -cluster-secret=s3cr3t -data-dir d", "lockd -cluster-secret=REDACTED -data-dir d"},
		{"lockd -Some-Password x -masterpass y", "lockd -Some-Password REDACTED -masterpass REDACTED"},
		{"lockd -requirepass", "lockd -requirepass"},
		{"lockd -addr :1 -- -requirepass x", "lockd -addr :1 -- -requirepass x"},
		{"lockd -requirepass -pw-starting-with-dash -pprof", "lockd -requirepass REDACTED -pprof"},
	} {
		if got := strings.Join(redactArgs(strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("redactArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Item 7 of issue 44: /debug/pprof/cmdline (with -pprof) never shows a
// secret given on the command line.
func TestPprofCmdlineHidesSecrets(t *testing.T) {
	saved := os.Args
	os.Args = []string{"lockd", "-requirepass", "hunter2-pw", "-cluster-secret=0123456789abcdef-secret", "-pprof"}
	defer func() { os.Args = saved }()
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), Pprof: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := http.Get("http://" + s.HTTPAddr() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	got := strings.ReplaceAll(string(body), "\x00", " ")
	if res.StatusCode != 200 || strings.Contains(got, "hunter2") || strings.Contains(got, "0123456789abcdef") {
		t.Fatalf("/debug/pprof/cmdline: %s %q", res.Status, got)
	}
	if want := "lockd -requirepass REDACTED -cluster-secret=REDACTED -pprof"; got != want {
		t.Errorf("/debug/pprof/cmdline = %q, want %q", got, want)
	}
}

// Item 3 of issue 44: the HTTP port holds at most HTTPMaxConns connections
// (more wait to be accepted) and closes idle keep-alive ones.
func TestHTTPConnectionBounds(t *testing.T) {
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), HTTPMaxConns: 4, HTTPIdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// healthz sends one request on nc and reads the reply within d.
	healthz := func(nc net.Conn, r *bufio.Reader, d time.Duration) error {
		nc.SetDeadline(time.Now().Add(d))
		if _, err := nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		return res.Body.Close()
	}
	type hc struct {
		nc net.Conn
		r  *bufio.Reader
	}
	var held []hc
	for range 4 {
		nc, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		if err := healthz(nc, r, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		held = append(held, hc{nc, r})
	}
	extra, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	er := bufio.NewReader(extra)
	if err := healthz(extra, er, 200*time.Millisecond); err == nil {
		t.Fatal("a fifth connection was served while four were open (HTTPMaxConns 4)")
	}
	// The idle ones are closed after HTTPIdleTimeout, and the fifth is served.
	held[0].nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := held[0].r.ReadByte(); err != io.EOF {
		t.Errorf("an idle keep-alive connection: %v, want closed by the server", err)
	}
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(er, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("the fifth connection once the idle ones closed: %v", err)
	}
	res.Body.Close()
}
