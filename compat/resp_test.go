package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/lockd/lockd/resp"
)

// This file is the client side of the wire: building requests, reading exactly
// one reply frame as raw bytes, and a small value tree that the normalisers use.

// maxFrameBytes bounds one reply frame, so that a server sending garbage cannot
// make the reader allocate without limit.
const maxFrameBytes = 64 << 20

// maxDepth bounds the nesting of aggregates in one frame.
const maxDepth = 64

// multibulk encodes args as a RESP array of bulk strings, as clients send commands.
func multibulk(args ...string) []byte { return resp.AppendCommand(nil, args...) }

// errBadFrame reports bytes that are not RESP2/RESP3.
var errBadFrame = errors.New("malformed reply frame")

// readFrame reads exactly one complete RESP2/RESP3 reply from r and returns its
// bytes verbatim. An attribute (|) is read together with the value it annotates.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var out bytes.Buffer
	err := readFrameInto(r, &out, 0)
	return out.Bytes(), err
}

func readFrameInto(r *bufio.Reader, out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", errBadFrame, maxDepth)
	}
	line, err := readLine(r, out)
	if err != nil {
		return err
	}
	if len(line) == 0 {
		return fmt.Errorf("%w: empty line", errBadFrame)
	}
	kind, rest := line[0], line[1:]
	switch kind {
	case '+', '-', '(':
		return nil
	case ':':
		_, err := parseInt(rest)
		return err
	case ',':
		return nil
	case '_':
		if len(rest) != 0 {
			return fmt.Errorf("%w: null with payload %q", errBadFrame, rest)
		}
		return nil
	case '#':
		if rest != "t" && rest != "f" {
			return fmt.Errorf("%w: boolean %q", errBadFrame, rest)
		}
		return nil
	case '$', '=', '!':
		n, err := parseInt(rest)
		if err != nil {
			return err
		}
		if n == -1 && kind == '$' {
			return nil
		}
		if n < 0 || n > maxFrameBytes-int64(out.Len()) {
			return fmt.Errorf("%w: length %d", errBadFrame, n)
		}
		start := out.Len()
		if _, err := io.CopyN(out, r, n+2); err != nil {
			return unexpected(err)
		}
		if !bytes.HasSuffix(out.Bytes()[start:], []byte("\r\n")) {
			return fmt.Errorf("%w: string of %d bytes not followed by CRLF", errBadFrame, n)
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := parseInt(rest)
		if err != nil {
			return err
		}
		if n == -1 && kind == '*' {
			return nil
		}
		if n < 0 || n > maxFrameBytes {
			return fmt.Errorf("%w: aggregate of %d", errBadFrame, n)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			if err := readFrameInto(r, out, depth+1); err != nil {
				return err
			}
		}
		if kind == '|' {
			// An attribute precedes the reply it annotates: read that too.
			return readFrameInto(r, out, depth+1)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown type byte %q", errBadFrame, kind)
	}
}

// readLine reads one CRLF-terminated line, appends it to out and returns it
// without the CRLF.
func readLine(r *bufio.Reader, out *bytes.Buffer) (string, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > 1<<20 {
				out.Write(line)
				return "", fmt.Errorf("%w: line longer than 1 MiB", errBadFrame)
			}
			continue
		}
		out.Write(line)
		if err != nil {
			if len(line) == 0 && out.Len() == 0 {
				return "", err // nothing of this frame read: a clean EOF
			}
			return "", unexpected(err)
		}
		break
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("%w: line not terminated by CRLF: %q", errBadFrame, line)
	}
	return string(line[:len(line)-2]), nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", errBadFrame, s)
	}
	return n, nil
}

// value is a decoded frame, used only where a normaliser must look inside a reply.
type value struct {
	kind  byte    // the RESP type byte
	str   string  // payload of simple, blob and number types
	null  bool    // $-1 or *-1
	elems []value // aggregate members; maps and attributes as key, value, key, value…
	attr  *value  // an attribute annotating this value
}

// parseValue decodes one complete frame.
func parseValue(raw []byte) (value, error) {
	r := bufio.NewReader(bytes.NewReader(raw))
	v, err := decode(r, 0)
	if err != nil {
		return value{}, err
	}
	if _, err := r.Peek(1); err != io.EOF {
		return value{}, fmt.Errorf("%w: trailing bytes", errBadFrame)
	}
	return v, nil
}

func decode(r *bufio.Reader, depth int) (value, error) {
	if depth > maxDepth {
		return value{}, errBadFrame
	}
	var scratch bytes.Buffer
	line, err := readLine(r, &scratch)
	if err != nil {
		return value{}, err
	}
	if line == "" {
		return value{}, errBadFrame
	}
	v := value{kind: line[0]}
	rest := line[1:]
	switch v.kind {
	case '+', '-', ':', ',', '(', '#', '_':
		v.str = rest
	case '$', '=', '!':
		n, err := parseInt(rest)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return v, unexpected(err)
		}
		v.str = string(buf[:n])
	case '*', '~', '>', '%', '|':
		n, err := parseInt(rest)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' || v.kind == '|' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			e, err := decode(r, depth+1)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		if v.kind == '|' {
			inner, err := decode(r, depth+1)
			if err != nil {
				return v, err
			}
			a := v
			inner.attr = &a
			return inner, nil
		}
	default:
		return v, errBadFrame
	}
	return v, nil
}

// encode writes v back in wire form; encode(parseValue(b)) == b for every frame.
func (v value) encode() []byte {
	var b bytes.Buffer
	v.encodeTo(&b)
	return b.Bytes()
}

func (v value) encodeTo(b *bytes.Buffer) {
	if v.attr != nil {
		v.attr.encodeTo(b)
	}
	switch v.kind {
	case '$', '=', '!':
		if v.null {
			fmt.Fprintf(b, "%c-1\r\n", v.kind)
			return
		}
		fmt.Fprintf(b, "%c%d\r\n%s\r\n", v.kind, len(v.str), v.str)
	case '*', '~', '>', '%', '|':
		if v.null {
			fmt.Fprintf(b, "%c-1\r\n", v.kind)
			return
		}
		n := len(v.elems)
		if v.kind == '%' || v.kind == '|' {
			n /= 2
		}
		fmt.Fprintf(b, "%c%d\r\n", v.kind, n)
		for _, e := range v.elems {
			e.encodeTo(b)
		}
	default:
		fmt.Fprintf(b, "%c%s\r\n", v.kind, v.str)
	}
}

// isBlob reports whether v carries a string payload (simple, bulk or verbatim).
func (v value) isBlob() bool {
	return !v.null && (v.kind == '$' || v.kind == '+' || v.kind == '=')
}

// isAggregate reports whether v is a (non-null) array, set, map or push.
func (v value) isAggregate() bool {
	return !v.null && strings.IndexByte("*~%>", v.kind) >= 0
}

// sortElems orders the members of an array or set by their wire bytes.
func (v value) sortElems() value {
	out := v
	out.elems = append([]value(nil), v.elems...)
	sort.Slice(out.elems, func(i, j int) bool {
		return bytes.Compare(out.elems[i].encode(), out.elems[j].encode()) < 0
	})
	return out
}
