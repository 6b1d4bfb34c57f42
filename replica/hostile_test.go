package replica

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/rdb"
)

// fakeMaster listens on 127.0.0.1 and runs serve on each connection it
// accepts, until the test ends. It returns the address.
func fakeMaster(t *testing.T, serve func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if line == "\n" { // a keepalive newline
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:l])
	}
	return args, nil
}

// handshake answers PING, the two REPLCONFs and PSYNC (with psync) as a
// master does, and returns the PSYNC's arguments.
func handshake(c net.Conn, r *bufio.Reader, psync string) ([]string, error) {
	for _, reply := range []string{"+PONG", "+OK", "+OK", psync} {
		args, err := readCommand(r)
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(c, reply+"\r\n"); err != nil {
			return nil, err
		}
		if reply == psync {
			return args, nil
		}
	}
	return nil, nil
}

const testReplID = "0123456789012345678901234567890123456789"

// session runs one session of a link to addr from pos and returns its error.
func session(t *testing.T, addr string, pos Position, cfg Config) error {
	t.Helper()
	cfg.Addr = addr
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 5 * time.Second
	}
	cfg.HandshakeTimeout = 5 * time.Second
	sink := newMemSink()
	sink.pos = pos
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := New(cfg, sink).session(ctx)
	return err
}

// TestHostileMaster has masters send what a Redis master does not: each
// session ends with an error, and a claimed size is not allocated. (The RDB
// decoder reports a body cut short as malformed.)
func TestHostileMaster(t *testing.T) {
	resumed := Position{ReplID: testReplID, Offset: 100}
	cont := "+CONTINUE"
	full := "+FULLRESYNC " + testReplID + " 0"
	cases := []struct {
		name  string
		psync string // the reply to PSYNC
		send  string // what follows it
		pos   Position
		want  error
	}{
		{"bulk above 512 MB", cont, "*2\r\n$3\r\nSET\r\n$536870913\r\n", resumed, ErrTooLarge},
		{"array above 1M elements", cont, "*1048577\r\n", resumed, ErrTooLarge},
		{"bulk of 512 MB cut short", cont, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\nabc", resumed, io.ErrUnexpectedEOF},
		{"garbage in the stream", cont, "hello world\r\n", resumed, ErrProtocol},
		{"bulk without its CRLF", cont, "*1\r\n$4\r\nPINGxx", resumed, ErrProtocol},
		{"a header line that does not end", cont, "*" + strings.Repeat("1", 100<<10), resumed, ErrProtocol},
		{"EXEC without MULTI", cont, "*1\r\n$4\r\nEXEC\r\n", resumed, ErrProtocol},
		{"bad SELECT", cont, "*2\r\n$6\r\nSELECT\r\n$1\r\nx\r\n", resumed, ErrProtocol},
		{"garbage reply to PSYNC", "+WHAT", "", resumed, ErrProtocol},
		{"CONTINUE to PSYNC ? -1", cont, "", Position{}, ErrProtocol},
		{"short FULLRESYNC", "+FULLRESYNC abc 0", "", Position{}, ErrProtocol},
		{"LOADING", "-LOADING Redis is loading the dataset in memory", "", Position{}, ErrNotReady},
		{"error to PSYNC", "-ERR unknown command", "", Position{}, ErrRefused},
		{"RDB of an absurd size", full, "\n\n$9223372036854775807\r\nREDIS0010", Position{}, rdb.ErrBadFormat},
		{"RDB cut short", full, "$100\r\nREDIS", Position{}, rdb.ErrBadFormat},
		{"streamed RDB cut short", full, "$EOF:" + testReplID + "\r\nREDIS", Position{}, rdb.ErrBadFormat},
		{"garbage instead of an RDB", full, "garbage\r\n", Position{}, ErrProtocol},
		{"master aborts the transfer", full, "-ERR BGSAVE failed\r\n", Position{}, ErrRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeMaster(t, func(c net.Conn, r *bufio.Reader) {
				if _, err := handshake(c, r, tc.psync); err != nil {
					return
				}
				io.WriteString(c, tc.send)
				// Then the master goes away; the link reads what it sent
				// first. It stops writing but reads on until the link
				// closes: a close with the link's acknowledgements unread
				// would reset the connection, and the link could see the
				// reset before the bytes sent ahead of it.
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, r)
			})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := session(t, addr, tc.pos, Config{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tc.want) {
				t.Fatalf("session error %v, want %v", err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Fatalf("the session allocated %d bytes", alloc)
			}
		})
	}
}

// TestSilentMaster ends the session when the master sends nothing for
// ReadTimeout.
func TestSilentMaster(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	addr := fakeMaster(t, func(c net.Conn, r *bufio.Reader) {
		if _, err := handshake(c, r, "+CONTINUE"); err != nil {
			return
		}
		<-hold
	})
	start := time.Now()
	err := session(t, addr, Position{ReplID: testReplID, Offset: 5}, Config{ReadTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("session error %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
}

// TestGetAck answers REPLCONF GETACK with the offset before it, once the
// commands before it are applied; and sends PSYNC with the offset after the
// sink's.
func TestGetAck(t *testing.T) {
	const start = 1000
	ping := "*1\r\n$4\r\nPING\r\n"
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	getack := "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"
	before := start + len(ping) + len(set)
	got := make(chan []string, 4)
	acks := make(chan int64, 16)
	addr := fakeMaster(t, func(c net.Conn, r *bufio.Reader) {
		psync, err := handshake(c, r, "+CONTINUE")
		if err != nil {
			return
		}
		got <- psync
		io.WriteString(c, ping+set+getack)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			if len(args) == 3 && args[0] == "REPLCONF" && args[1] == "ACK" {
				n, _ := strconv.ParseInt(args[2], 10, 64)
				acks <- n
			}
		}
	})
	sink := newMemSink()
	sink.pos = Position{ReplID: testReplID, Offset: start}
	l := New(Config{Addr: addr}, sink)
	run(t, l)
	if p := <-got; strings.Join(p, " ") != "PSYNC "+testReplID+" 1001" {
		t.Fatalf("the link sent %q", p)
	}
	deadline := time.After(waitFor)
	for {
		select {
		case n := <-acks:
			if n == start {
				continue // the ACK that starts the stream
			}
			if n != int64(before) {
				t.Fatalf("ACK %d, want %d (the offset before GETACK)", n, before)
			}
			if !sink.has(0, "k") {
				t.Fatal("ACK sent before the SET was applied")
			}
			eventually(t, "the link acknowledges the GETACK's bytes", func() bool {
				return l.Status().Offset == int64(before+len(getack))
			})
			return
		case <-deadline:
			t.Fatal("no ACK after GETACK")
		}
	}
}

// TestContinueNewID follows a master that continues under a new replication
// id (it was promoted): the sink records the new id at the same offset.
func TestContinueNewID(t *testing.T) {
	newID := strings.Repeat("f", 40)
	addr := fakeMaster(t, func(c net.Conn, r *bufio.Reader) {
		if _, err := handshake(c, r, "+CONTINUE "+newID); err != nil {
			return
		}
		for {
			if _, err := readCommand(r); err != nil {
				return
			}
		}
	})
	sink := newMemSink()
	sink.pos = Position{ReplID: testReplID, Offset: 77, DB: 3}
	l := New(Config{Addr: addr}, sink)
	run(t, l)
	eventually(t, "the link follows the stream", connected(l))
	if got, want := sink.Position(), (Position{ReplID: newID, Offset: 77, DB: 3}); got != want {
		t.Fatalf("the sink stands at %+v, want %+v", got, want)
	}
	if st := l.Status(); st.ReplID != newID || st.PartialSyncs != 1 || st.Offset != 77 {
		t.Fatalf("status %+v", st)
	}
}
