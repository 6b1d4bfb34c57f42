package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockd/lockd/resp"
)

// Bounds on what the master may send.
const (
	// MaxBulk is the longest bulk string the stream may carry: Redis's
	// proto-max-bulk-len default (512 MB).
	MaxBulk = 512 << 20
	// MaxArgs is the most elements one command of the stream may have.
	MaxArgs = 1 << 20
	// MaxCommand is the most bytes one command of the stream may take:
	// Redis's client-query-buffer-limit default (1 GB).
	MaxCommand = 1 << 30
	// maxLine is the longest reply or header line (Redis reads the
	// handshake's replies into 1 KB and a stream header must fit 64 KB).
	maxLine = 64 << 10
	// startBuf is the reader's first buffer; it doubles while one command
	// needs more, so a claimed size costs only what has arrived.
	startBuf = 16 << 10
)

// reader is the link's buffered view of the master's socket: lines for the
// handshake, a bounded body for the RDB, commands for the stream. Every read
// from the socket has a deadline timeout from now and stamps lastIO.
type reader struct {
	conn    net.Conn
	timeout time.Duration
	lastIO  *atomic.Int64
	buf     []byte
	r, w    int // the unread bytes are buf[r:w]
}

func newReader(conn net.Conn, lastIO *atomic.Int64) *reader {
	return &reader{conn: conn, lastIO: lastIO, buf: make([]byte, startBuf)}
}

// buffered returns the unread bytes.
func (rd *reader) buffered() []byte { return rd.buf[rd.r:rd.w] }

// fill reads once from the socket, after making room: it moves the unread
// bytes to the front, or, when they fill the buffer, doubles it (to need
// when that is less, need being how many unread bytes the caller waits for;
// 0 if it does not know).
func (rd *reader) fill(need int) error {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	}
	if rd.w == len(rd.buf) {
		if rd.r > 0 {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		} else {
			n := 2 * len(rd.buf)
			if need > len(rd.buf) && need < n {
				n = need
			}
			nb := make([]byte, n)
			copy(nb, rd.buf[:rd.w])
			rd.buf = nb
		}
	}
	if rd.timeout > 0 {
		if err := rd.conn.SetReadDeadline(time.Now().Add(rd.timeout)); err != nil {
			return err
		}
	}
	n, err := rd.conn.Read(rd.buf[rd.w:])
	if n > 0 {
		rd.w += n
		rd.lastIO.Store(time.Now().UnixNano())
		return nil
	}
	if err == nil {
		return io.ErrNoProgress
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: nothing read for %v", ErrTimeout, rd.timeout)
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readLine returns the next line without its "\n" or "\r\n"; an empty line
// is a newline the master sends to keep the link alive. The line is valid
// until the next read.
func (rd *reader) readLine() ([]byte, error) {
	scanned := 0
	for {
		b := rd.buffered()
		if i := bytes.IndexByte(b[scanned:], '\n'); i >= 0 {
			line := b[:scanned+i]
			rd.r += scanned + i + 1
			return bytes.TrimSuffix(line, []byte("\r")), nil
		}
		scanned = len(b)
		if scanned > maxLine {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrProtocol, maxLine)
		}
		if err := rd.fill(0); err != nil {
			return nil, err
		}
	}
}

// readReply returns the next line that is not empty: the reply to a
// handshake command (the master may send newlines before it).
func (rd *reader) readReply() (string, error) {
	for {
		line, err := rd.readLine()
		if err != nil {
			return "", err
		}
		if len(line) > 0 {
			return string(line), nil
		}
	}
}

// Read reads buffered bytes, or from the socket when none are.
func (rd *reader) Read(p []byte) (int, error) {
	if rd.r == rd.w {
		if err := rd.fill(0); err != nil {
			return 0, err
		}
	}
	n := copy(p, rd.buffered())
	rd.r += n
	return n, nil
}

// writer writes to the master: the handshake's commands, ACKs and
// newlines. The session's goroutine and the ticker share it.
type writer struct {
	mu      sync.Mutex
	conn    net.Conn
	timeout time.Duration
	scratch []byte
}

// command sends one command as a RESP array of bulk strings.
func (w *writer) command(args ...string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := resp.AppendCommand(w.scratch[:0], args...)
	w.scratch = b
	return w.write(b)
}

// ack sends REPLCONF ACK offset.
func (w *writer) ack(offset int64) error {
	return w.command("REPLCONF", "ACK", strconv.FormatInt(offset, 10))
}

// newline sends "\n", which a master reads as an empty request.
func (w *writer) newline() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write([]byte("\n"))
}

func (w *writer) write(b []byte) error {
	if w.timeout > 0 {
		if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
			return err
		}
	}
	_, err := w.conn.Write(b)
	return err
}
