package rdb

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// This file holds the tests' private Redis: a redis-server 7.0.15 started on
// a free loopback port, and a minimal RESP2 client for it.

// testRedis is one redis-server this test started, and its --dir.
type testRedis struct {
	addr string
	dir  string
}

// startRedis starts a private redis-server (clustertest.StartRedis: --save ""
// --appendonly no on a free 127.0.0.1 port, up once it answers PING) and
// stops it (that process only) when the test ends. A missing redis-server
// fails the test with the install hint.
func startRedis(t testing.TB) *testRedis {
	t.Helper()
	addr, dir := clustertest.StartRedis(t)
	return &testRedis{addr: addr, dir: dir}
}

// resp is a minimal RESP2 client: replies are string (simple and bulk),
// int64, nil, []any, or respError.
type resp struct {
	c net.Conn
	r *bufio.Reader
}

type respError string

func (e respError) Error() string { return string(e) }

func dialRESP(addr string) (*resp, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &resp{c: c, r: bufio.NewReaderSize(c, 1<<16)}, nil
}

func (c *resp) close() { c.c.Close() }

// do sends one command (arguments: string, []byte, int, int64) and returns
// its reply; a Redis error reply is returned as a respError error.
func (c *resp) do(args ...any) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		var s []byte
		switch a := a.(type) {
		case string:
			s = []byte(a)
		case []byte:
			s = a
		case int:
			s = strconv.AppendInt(nil, int64(a), 10)
		case int64:
			s = strconv.AppendInt(nil, a, 10)
		default:
			panic(fmt.Sprintf("resp: argument %T", a))
		}
		fmt.Fprintf(&b, "$%d\r\n", len(s))
		b.Write(s)
		b.WriteString("\r\n")
	}
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(b.Bytes()); err != nil {
		return nil, err
	}
	r, err := c.reply()
	if err != nil {
		return nil, err
	}
	if e, ok := r.(respError); ok {
		return nil, e
	}
	return r, nil
}

func (c *resp) reply() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("resp: short line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.reply(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("resp: reply %q", line)
}

// must is do that fails the test on any error.
func (c *resp) must(t testing.TB, args ...any) any {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// connect dials the test's Redis and closes the connection at the end.
func (r *testRedis) connect(t testing.TB) *resp {
	t.Helper()
	c, err := dialRESP(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// fetch reads key's value back from Redis with the type's read command.
func fetch(t testing.TB, c *resp, key string) Value {
	t.Helper()
	strs := func(r any) [][]byte {
		var out [][]byte
		for _, e := range r.([]any) {
			out = append(out, []byte(e.(string)))
		}
		return out
	}
	switch typ := c.must(t, "TYPE", key); typ {
	case "string":
		return Value{Type: String, Str: []byte(c.must(t, "GET", key).(string))}
	case "list":
		return Value{Type: List, List: strs(c.must(t, "LRANGE", key, 0, -1))}
	case "set":
		return Value{Type: Set, Set: strs(c.must(t, "SMEMBERS", key))}
	case "zset":
		es := strs(c.must(t, "ZRANGE", key, 0, -1, "WITHSCORES"))
		var ms []Member
		for i := 0; i < len(es); i += 2 {
			f, err := strconv.ParseFloat(string(es[i+1]), 64)
			if err != nil {
				t.Fatalf("score %q: %v", es[i+1], err)
			}
			ms = append(ms, Member{Member: es[i], Score: f})
		}
		return Value{Type: ZSet, ZSet: ms}
	case "hash":
		es := strs(c.must(t, "HGETALL", key))
		var fs []Field
		for i := 0; i < len(es); i += 2 {
			fs = append(fs, Field{Field: es[i], Value: es[i+1]})
		}
		return Value{Type: Hash, Hash: fs}
	default:
		t.Fatalf("TYPE %s = %v", key, typ)
	}
	return Value{}
}

// canon is v with the orders Redis does not promise (set members, hash
// fields) sorted, for comparing contents.
func canon(v Value) Value {
	v.Set = slices.Clone(v.Set)
	slices.SortFunc(v.Set, bytes.Compare)
	v.Hash = slices.Clone(v.Hash)
	slices.SortFunc(v.Hash, func(a, b Field) int { return bytes.Compare(a.Field, b.Field) })
	return v
}

// sameValue reports whether a and b hold the same contents; scores compare
// by value (so -0 equals 0, as in Redis).
func sameValue(a, b Value) bool {
	a, b = canon(a), canon(b)
	if a.Type != b.Type || !bytes.Equal(a.Str, b.Str) && a.Type == String {
		return false
	}
	eqList := func(x, y [][]byte) bool {
		return slices.EqualFunc(x, y, func(p, q []byte) bool { return bytes.Equal(p, q) })
	}
	return eqList(a.List, b.List) && eqList(a.Set, b.Set) &&
		slices.EqualFunc(a.ZSet, b.ZSet, func(p, q Member) bool {
			return bytes.Equal(p.Member, q.Member) && p.Score == q.Score
		}) &&
		slices.EqualFunc(a.Hash, b.Hash, func(p, q Field) bool {
			return bytes.Equal(p.Field, q.Field) && bytes.Equal(p.Value, q.Value)
		})
}

// show is a short description of v for failure messages.
func show(v Value) string {
	s := fmt.Sprintf("%v", canon(v))
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
