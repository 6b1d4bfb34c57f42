package test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/resp"
)

// respConn is a deliberately small RESP2 client. The suites need to know, for
// every request, whether a reply came back: a reply is an acknowledgement, an I/O
// error is an unknown outcome. A general client (go-redis) retries on network
// errors by itself, which would turn one unknown INCR into several, so the suites
// speak the protocol themselves, one request at a time, with no retries.
type respConn struct {
	c       net.Conn
	r       *bufio.Reader
	timeout time.Duration // per request, write and read together
}

// reply is one parsed RESP2 reply.
type reply struct {
	kind  byte // '+', '-', ':', '$', '*'
	str   string
	n     int64
	null  bool // nil bulk or nil array
	elems []reply
}

func (r reply) String() string {
	switch {
	case r.null:
		return "(nil)"
	case r.kind == ':':
		return "(integer) " + strconv.FormatInt(r.n, 10)
	case r.kind == '-':
		return "(error) " + r.str
	case r.kind == '*':
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return strconv.Quote(r.str)
}

func (r reply) isErr() bool { return r.kind == '-' }

func dialRESP(addr string, timeout time.Duration) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReader(c), timeout: timeout}, nil
}

func (c *respConn) close() { c.c.Close() }

// do sends one command and reads its reply. An error reply is a reply, not an
// error; the error result means the request's fate is unknown (I/O failure,
// timeout, malformed reply), and the connection must not be used again.
func (c *respConn) do(args ...string) (reply, error) {
	if err := c.send(args...); err != nil {
		return reply{}, err
	}
	return readReply(c.r)
}

// send writes one command without reading its reply (readReply(c.r) reads
// it), and sets the connection's deadline for both to c.timeout from now.
func (c *respConn) send(args ...string) error {
	c.c.SetDeadline(time.Now().Add(c.timeout))
	_, err := c.c.Write(resp.AppendCommand(make([]byte, 0, 64), args...))
	return err
}

func readReply(r *bufio.Reader) (reply, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return reply{}, fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-':
		return reply{kind: kind, str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return reply{}, fmt.Errorf("malformed integer reply %q", line)
		}
		return reply{kind: kind, n: n}, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return reply{}, fmt.Errorf("malformed bulk length %q", line)
		}
		if n == -1 {
			return reply{kind: kind, null: true}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return reply{}, err
		}
		if string(b[n:]) != "\r\n" {
			return reply{}, errors.New("bulk string not terminated by CRLF")
		}
		return reply{kind: kind, str: string(b[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return reply{}, fmt.Errorf("malformed array length %q", line)
		}
		if n == -1 {
			return reply{kind: kind, null: true}, nil
		}
		out := reply{kind: kind, elems: make([]reply, n)}
		for i := range out.elems {
			if out.elems[i], err = readReply(r); err != nil {
				return reply{}, err
			}
		}
		return out, nil
	}
	return reply{}, fmt.Errorf("unknown reply type in %q", line)
}
