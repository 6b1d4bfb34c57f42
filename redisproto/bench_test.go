package redisproto

import (
	"strconv"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// cycleReader returns its bytes over and over, as a client that pipelines the
// same batch forever would send them.
type cycleReader struct {
	b   []byte
	off int
}

func (c *cycleReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], c.b[c.off:])
		n += m
		c.off = (c.off + m) % len(c.b)
	}
	return n, nil
}

// BenchmarkReaderPipeline: one op parses a pipelined batch of 64 RESP
// requests (LOCK.ACQUIRE and LOCK.RELEASE alternating, as lockbench -lock
// -pipeline 64 sends them) from the connection's buffered reader. Runs only
// with -bench:
//
//	go test -run '^$' -bench ReaderPipeline ./redisproto
func BenchmarkReaderPipeline(b *testing.B) {
	const batch = 64
	var wire []byte
	for i := 0; i < batch/2; i++ {
		name := "lock:bench:" + strconv.Itoa(i)
		wire = resp.AppendCommand(wire, "LOCK.ACQUIRE", name, "client-0123456789", "PX", "30000")
		wire = resp.AppendCommand(wire, "LOCK.RELEASE", name, strconv.Itoa(1000000+i))
	}
	r := newReader(&cycleReader{b: wire}, Limits{})
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		for range batch {
			args, err := r.next(true)
			if err != nil || len(args) < 3 {
				b.Fatalf("next = %q, %v", args, err)
			}
		}
	}
}

// BenchmarkAuthorize: one op checks one LOCK.ACQUIRE against the ACL, as
// every command is checked, for a connection that authenticated as the
// default user of a server with -requirepass. Runs only with -bench:
//
//	go test -run '^$' -bench Authorize ./redisproto
func BenchmarkAuthorize(b *testing.B) {
	s, err := Listen(Config{Addr: "127.0.0.1:0", RequirePass: "secret"}, newFSMStore())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := &conn{srv: s}
	c.initAuth()
	if _, ok := c.login([]byte(command.DefaultUserName), []byte("secret")); !ok {
		b.Fatal("AUTH secret refused")
	}
	args := [][]byte{[]byte("LOCK.ACQUIRE"), []byte("lock:1"), []byte("owner-1"), []byte("PX"), []byte("30000")}
	b.ReportAllocs()
	for b.Loop() {
		c.auth.stale = true // a new batch, as conn.serve marks it
		if v, denied := c.authorize(&request{args: args}); denied {
			b.Fatalf("denied: %v", v)
		}
	}
}
