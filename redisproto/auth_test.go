package redisproto

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// fsmStore is a Store on a bare FSM keyspace (no Raft): writes are applied as
// log entries at increasing indexes, reads are served from the state. It
// records every argument vector that would have entered the log.
type fsmStore struct {
	mu    sync.Mutex
	ks    *fsm.Keyspace
	index uint64
	log   [][][]byte
}

func newFSMStore() *fsmStore { return &fsmStore{ks: fsm.New()} }

func (s *fsmStore) Do(_ context.Context, reqs []command.Request) []resp.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		if !r.Spec.Writes() {
			out[i] = s.ks.Read(r.Op, s.ks.Now(), 0)
			continue
		}
		s.index++
		e, _ := command.Decode(command.Entry{Kind: command.KindCommand, Args: r.Args}.Encode()) // a copy, as the log holds it
		s.log = append(s.log, e.Args)
		out[i] = s.ks.Apply(s.index, e)
	}
	return out
}

func (s *fsmStore) ACL() *command.ACLTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ks.ACL()
}

func (s *fsmStore) Replicas() int         { return 1 }
func (s *fsmStore) Stats() [][2]string    { return nil }
func (s *fsmStore) KeyspaceInfo() string  { return "" }
func (s *fsmStore) LockInfo() [][2]string { return nil }
func (s *fsmStore) KillScripts() bool     { return false }
func (s *fsmStore) entries() [][][]byte   { s.mu.Lock(); defer s.mu.Unlock(); return s.log }

// startServer serves cfg on a free 127.0.0.1 port until the test ends.
func startServer(t *testing.T, cfg Config, st Store) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s, err := Listen(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return s
}

// client is a raw RESP2 client that reads one reply line (or frame) at a time.
type client struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialClient(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// do sends a command and returns its reply as RESP bytes (one frame).
func (c *client) do(args ...string) string {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(multibulk(args...)); err != nil {
		return "<write: " + err.Error() + ">"
	}
	var out []byte
	if err := readFrame(c.r, &out); err != nil {
		return "<read: " + err.Error() + ">"
	}
	return string(out)
}

// readFrame appends one RESP2 reply frame, as sent, to out.
func readFrame(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	*out = append(*out, line...)
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
	switch line[0] {
	case '$':
		if n < 0 {
			return nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(r, body)
		*out = append(*out, body...)
		return err
	case '*':
		for i := 0; i < n; i++ {
			if err := readFrame(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func multibulk(args ...string) []byte { return resp.AppendCommand(nil, args...) }

// closed reports whether the server closed the connection (within a bound).
func (c *client) closed() bool {
	c.nc.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := c.r.ReadByte()
	return err == io.EOF || (err != nil && !isTimeout(err))
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

const (
	okReply     = "+OK\r\n"
	noAuthReply = "-NOAUTH Authentication required.\r\n"
	wrongPass   = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	noPermKeys  = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
)

func TestRequirePass(t *testing.T) {
	st := newFSMStore()
	s := startServer(t, Config{RequirePass: "sekret"}, st)
	c := dialClient(t, s.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"GET", "k"}, noAuthReply},
		{[]string{"CLIENT", "ID"}, noAuthReply},
		{[]string{"HELLO", "3"}, "-" + string(command.ErrHelloNoAuth) + "\r\n"},
		{[]string{"AUTH", "wrong"}, wrongPass},
		{[]string{"AUTH", "default", "wrong"}, wrongPass},
		{[]string{"GET", "k"}, noAuthReply},
		{[]string{"AUTH", "sekret"}, okReply},
		{[]string{"SET", "k", "v"}, okReply},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$7\r\ndefault\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Fatalf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// HELLO … AUTH authenticates a fresh connection.
	c2 := dialClient(t, s.Addr())
	if got := c2.do("HELLO", "2", "AUTH", "default", "sekret"); !strings.HasPrefix(got, "*14\r\n$6\r\nserver") {
		t.Fatalf("HELLO AUTH = %q", got)
	}
	if got := c2.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET after HELLO AUTH = %q", got)
	}
	if !s.AuthRequired() {
		t.Fatal("AuthRequired is false with a password")
	}
	if sc := s.SecurityCounters(); sc.NoAuth < 3 || sc.AuthFailures < 2 {
		t.Fatalf("counters: %+v", sc)
	}
}

// A user limited to payouts/* cannot touch search/*, and the password never
// reaches the log in clear text.
func TestKeyPatternsPerTeam(t *testing.T) {
	st := newFSMStore()
	s := startServer(t, Config{}, st)
	admin := dialClient(t, s.Addr())
	if got := admin.do("ACL", "SETUSER", "payouts", "on", ">payouts-pw", "~payouts/*", "+@all", "-@admin", "-@dangerous"); got != okReply {
		t.Fatalf("SETUSER = %q", got)
	}
	for _, e := range st.entries() {
		if bytes.Contains(bytes.Join(e, []byte(" ")), []byte("payouts-pw")) {
			t.Fatalf("clear-text password in the log: %q", e)
		}
	}
	team := dialClient(t, s.Addr())
	if got := team.do("AUTH", "payouts", "nope"); got != wrongPass {
		t.Fatalf("AUTH wrong = %q", got)
	}
	if got := team.do("AUTH", "payouts", "payouts-pw"); got != okReply {
		t.Fatalf("AUTH = %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "payouts/1", "v", "NX", "PX", "10000"}, okReply},
		{[]string{"SET", "search/1", "v"}, noPermKeys},
		{[]string{"GET", "search/1"}, noPermKeys},
		{[]string{"MSET", "payouts/2", "x", "search/2", "y"}, noPermKeys},
		{[]string{"LOCK.ACQUIRE", "search/lock", "me", "PX", "1000"}, noPermKeys},
		{[]string{"EVAL", "return 1", "1", "search/1"}, noPermKeys},
		{[]string{"EVAL", "return 1", "1", "payouts/1"}, ":1\r\n"},
		{[]string{"NAMESPACE.SET", "search/", "MAXTTL", "10"}, "-NOPERM this user has no permissions to run the 'namespace.set' command\r\n"},
		{[]string{"ACL", "SETUSER", "payouts", "~*"}, "-NOPERM this user has no permissions to run the 'acl|setuser' command\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$7\r\npayouts\r\n"},
		{[]string{"FLUSHALL"}, "-NOPERM this user has no permissions to run the 'flushall' command\r\n"},
	} {
		if got := team.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// A transaction with a refused command aborts.
	team.do("MULTI")
	if got := team.do("SET", "search/3", "v"); got != noPermKeys {
		t.Fatalf("queued = %q", got)
	}
	if got := team.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC = %q", got)
	}
	// Changes apply to connected clients at once.
	if got := admin.do("ACL", "SETUSER", "payouts", "~search/*"); got != okReply {
		t.Fatalf("SETUSER = %q", got)
	}
	if got := team.do("GET", "search/1"); got != "$-1\r\n" {
		t.Fatalf("GET after widening = %q", got)
	}
	// Deleting the user disconnects it.
	if got := admin.do("ACL", "DELUSER", "payouts"); got != ":1\r\n" {
		t.Fatalf("DELUSER = %q", got)
	}
	if !team.closed() {
		t.Fatal("a deleted user's connection stayed open")
	}
	if got := admin.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("admin after DELUSER = %q", got)
	}
}

func TestACLCommands(t *testing.T) {
	st := newFSMStore()
	s := startServer(t, Config{RequirePass: "pw"}, st)
	c := dialClient(t, s.Addr())
	c.do("AUTH", "pw")
	def := "user default on #" + command.HashPassword([]byte("pw")) + " ~* &* +@all"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ACL", "LIST"}, "*1\r\n$" + fmt.Sprint(len(def)) + "\r\n" + def + "\r\n"},
		{[]string{"ACL", "SETUSER", "bob", "+nosuch"}, "-ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL\r\n"},
		{[]string{"ACL", "SETUSER", "bob", "<nope"}, "-ERR Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist\r\n"},
		{[]string{"ACL", "SETUSER", "bob", "(~x +get)"}, "-ERR Error in ACL SETUSER modifier '(~x +get)': Syntax error\r\n"},
		{[]string{"ACL", "GETUSER", "bob"}, "$-1\r\n"},
		{[]string{"ACL", "SETUSER", "bob", "on", "nopass", "~a", "&ch", "+get", "+client|id"}, okReply},
		{[]string{"ACL", "USERS"}, "*2\r\n$3\r\nbob\r\n$7\r\ndefault\r\n"},
		{[]string{"ACL", "DELUSER", "default"}, "-ERR The 'default' user cannot be removed\r\n"},
		{[]string{"ACL", "CAT", "nosuch"}, "-ERR Unknown category 'nosuch'\r\n"},
		{[]string{"ACL", "NOSUCH"}, "-ERR unknown subcommand 'NOSUCH'. Try ACL HELP.\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	b := dialClient(t, s.Addr())
	if got := b.do("AUTH", "bob", "anything"); got != okReply {
		t.Fatalf("AUTH nopass user = %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "a"}, "$-1\r\n"},
		{[]string{"CLIENT", "ID"}, ":"},
		{[]string{"CLIENT", "LIST"}, "-NOPERM this user has no permissions to run the 'client|list' command\r\n"},
		{[]string{"SET", "a", "1"}, "-NOPERM this user has no permissions to run the 'set' command\r\n"},
		{[]string{"PUBLISH", "ch", "x"}, "-NOPERM this user has no permissions to run the 'publish' command\r\n"},
	} {
		if got := b.do(tc.args...); !strings.HasPrefix(got, tc.want) {
			t.Errorf("bob: %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// Setting the default user keeps this node's password.
	if got := c.do("ACL", "SETUSER", "default", "-@dangerous"); got != okReply {
		t.Fatalf("SETUSER default = %q", got)
	}
	fresh := dialClient(t, s.Addr())
	if got := fresh.do("GET", "a"); got != noAuthReply {
		t.Fatalf("after SETUSER default: %q", got)
	}
	if got := fresh.do("AUTH", "pw"); got != okReply {
		t.Fatalf("AUTH after SETUSER default: %q", got)
	}
	if got := fresh.do("FLUSHALL"); got != "-NOPERM this user has no permissions to run the 'flushall' command\r\n" {
		t.Fatalf("FLUSHALL as default -@dangerous: %q", got)
	}
}

// A client over MaxClients is told so and closed; the others are unaffected.
func TestMaxClients(t *testing.T) {
	s := startServer(t, Config{MaxClients: 2}, newFSMStore())
	a, b := dialClient(t, s.Addr()), dialClient(t, s.Addr())
	a.do("PING")
	b.do("PING")
	c := dialClient(t, s.Addr())
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := c.r.ReadString('\n')
	if line != errMaxClients {
		t.Fatalf("third client read %q", line)
	}
	if !c.closed() {
		t.Fatal("refused client not closed")
	}
	if got := a.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("first client after refusal: %q", got)
	}
	if s.SecurityCounters().MaxClients != 1 {
		t.Fatalf("counters: %+v", s.SecurityCounters())
	}
}

// A subscriber that never reads is disconnected once its queued output passes
// MaxOutputBuffer; other clients are unaffected.
func TestSlowReaderDisconnected(t *testing.T) {
	s := startServer(t, Config{MaxOutputBuffer: 1 << 20}, newFSMStore())
	slow := dialClient(t, s.Addr())
	if got := slow.do("SUBSCRIBE", "news"); !strings.Contains(got, "subscribe") {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	other := dialClient(t, s.Addr())
	msg := bytes.Repeat([]byte("x"), 256<<10)
	deadline := time.Now().Add(10 * time.Second)
	for s.SecurityCounters().OutputDisconnects == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow reader was never disconnected")
		}
		s.Publish([]byte("news"), msg)
	}
	if got := other.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("other client: %q", got)
	}
	if got := s.Publish([]byte("news"), msg); got != 0 {
		t.Fatalf("the disconnected subscriber still receives (%d)", got)
	}
}

// A request that grows past the query buffer limit while it is read closes its
// connection without a reply, as Redis closes a client past its
// client-query-buffer-limit; what the connection sent before it is answered,
// and other clients go on.
func TestQueryBufferLimit(t *testing.T) {
	st := newFSMStore()
	s := startServer(t, Config{Limits: Limits{MaxQueryBuffer: 64 << 10}}, st)
	c := dialClient(t, s.Addr())
	if got := c.do("SET", "k", strings.Repeat("v", 60<<10)); got != okReply {
		t.Fatalf("60 KiB request: %q", got)
	}
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	// A bulk announced whole and sent in part: the limit applies to what is
	// buffered, whatever the request announces.
	c.nc.Write([]byte("*1\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200000\r\n" + strings.Repeat("w", 100<<10)))
	var out []byte
	if err := readFrame(c.r, &out); err != nil || string(out) != "-ERR unknown command 'a', with args beginning with: \r\n" {
		t.Fatalf("the request before the oversized one: %q, %v", out, err)
	}
	if !c.closed() || s.SecurityCounters().ProtocolErrors != 1 {
		t.Fatalf("after the limit: counters %+v", s.SecurityCounters())
	}
	if got := dialClient(t, s.Addr()).do("GET", "k"); got != "$61440\r\n"+strings.Repeat("v", 60<<10)+"\r\n" {
		t.Fatalf("another client's GET: %.40q", got)
	}
}

// Requests over the argument-count limit are protocol errors.
func TestArgumentCountLimit(t *testing.T) {
	s := startServer(t, Config{Limits: Limits{MaxMultibulkLen: 8}}, newFSMStore())
	c := dialClient(t, s.Addr())
	if got := c.do("MSET", "a", "1", "b", "2", "c", "3"); got != okReply {
		t.Fatalf("7 arguments: %q", got)
	}
	if got := c.do("MSET", "a", "1", "b", "2", "c", "3", "d", "4"); got != "-ERR Protocol error: invalid multibulk length\r\n" {
		t.Fatalf("9 arguments: %q", got)
	}
	if !c.closed() || s.SecurityCounters().ProtocolErrors != 1 {
		t.Fatalf("after the limit: counters %+v", s.SecurityCounters())
	}
}
