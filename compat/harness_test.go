package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// Timeouts. Every wait in the suite is one of these, and every loop polls.
const (
	replyTimeout = 5 * time.Second        // one reply frame
	quietTimeout = 200 * time.Millisecond // "nothing more comes": after a close or a swallowed request
	writeTimeout = 10 * time.Second       // one request, up to the multi-megabyte ones
	startTimeout = 20 * time.Second       // a server process answering PING
	pollTimeout  = 3 * time.Second        // a poll step reaching its wanted reply
	pollEvery    = 10 * time.Millisecond
)

// verbose logs every step's replies (COMPAT_VERBOSE=1), to see what Redis says.
var verbose = os.Getenv("COMPAT_VERBOSE") != ""

// ---------------------------------------------------------------- servers

// startRedis starts a private redis-server (clustertest.StartRedis: a free
// 127.0.0.1 port, a t.TempDir, killed in t.Cleanup) and returns its address
// once it answers PING. extra are more redis-server options ("--requirepass",
// "pw": then PING is answered NOAUTH, which counts as up). A missing
// redis-server fails the test with the install hint.
func startRedis(t testing.TB, extra ...string) string {
	t.Helper()
	addr, _ := clustertest.StartRedis(t, extra...)
	return addr
}

// waitPing polls addr with PING until it answers +PONG, the process exits, or
// startTimeout passes.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("process exited before answering PING")
		default:
		}
		c, err := dial(addr)
		if err == nil {
			c.send(multibulk("PING"))
			o := c.read(time.Second)
			c.close()
			if string(o.raw) == "+PONG\r\n" || string(o.raw) == "-NOAUTH Authentication required.\r\n" {
				return nil
			}
			err = fmt.Errorf("PING answered %v", o)
		}
		last = err
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("no PONG within %v (last: %v)", startTimeout, last)
}

// ---------------------------------------------------------------- raw client

// conn is a raw client: it writes bytes and reads one reply frame at a time.
type conn struct {
	nc   net.Conn
	r    *bufio.Reader
	dead string // why the connection can no longer be used; "" while it can
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *conn) close() { c.nc.Close() }

// send writes b. A write error is returned but does not end the step: the
// server may have replied and closed, which the next read reports.
func (c *conn) send(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(b)
	return err
}

// Outcome endings other than a complete frame.
const (
	endClosed  = "connection closed"
	endNoReply = "no reply" // followed by " within <timeout>"
)

// outcome is what one read produced: a complete frame, or how it ended without one.
type outcome struct {
	raw []byte // the frame's bytes (or a partial frame when end is set)
	end string // "" for a complete frame
}

func (o outcome) String() string {
	if o.end == "" {
		return quoteReply(o.raw)
	}
	if len(o.raw) > 0 {
		return fmt.Sprintf("<%s after partial frame %s>", o.end, quoteReply(o.raw))
	}
	return "<" + o.end + ">"
}

func (o outcome) equal(p outcome) bool {
	return o.end == p.end && bytes.Equal(o.raw, p.raw)
}

// read reads exactly one reply frame within timeout.
func (c *conn) read(timeout time.Duration) outcome {
	if c.dead != "" {
		return outcome{end: c.dead}
	}
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	raw, err := readFrame(c.r)
	if err == nil {
		return outcome{raw: raw}
	}
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		c.dead = endClosed
		return outcome{raw: raw, end: endClosed}
	case errors.As(err, &ne) && ne.Timeout():
		if len(raw) == 0 {
			// The connection stays usable: a quiet probe expects this.
			return outcome{end: fmt.Sprintf("%s within %v", endNoReply, timeout)}
		}
		c.dead = "timed out inside a frame"
	default:
		c.dead = err.Error()
	}
	return outcome{raw: raw, end: c.dead}
}

// ---------------------------------------------------------------- steps and cases

// tcase is one differential case: fresh connections on a flushed keyspace, and
// steps whose replies must match.
type tcase struct {
	name  string
	steps []step
	proto int // 0: run under RESP2 and RESP3; 2 or 3: only that one
}

// step is one exchange. Build steps with cmd, inline, raw, pipeline, silent,
// scan and poll, and adjust them with the methods below.
type step struct {
	args  []string   // a command, sent as a RESP multibulk (after expand)
	raw   string     // bytes sent verbatim instead of args
	reads int        // reply frames to read
	probe bool       // then read once more with quietTimeout: closed / no reply / a frame
	norm  normalizer // how replies are compared; exact when its fn is nil
	conn  int        // which of the case's connections (0 = the first)
	scan  bool       // args are SCAN options: iterate from cursor 0 to 0, compare the key sets
	want  string     // poll: repeat args until the reply is want (bounded), on each side
	wait  bool       // send nothing: read the replies of a command sent earlier (a blocked one)
}

// cmd sends one command and compares its reply.
func cmd(args ...string) step { return step{args: args, reads: 1} }

// inline sends one inline command line (a CRLF is appended) and compares the reply.
func inline(line string) step { return step{raw: line + "\r\n", reads: 1} }

// raw sends b verbatim and compares the next n replies.
func raw(b string, n int) step { return step{raw: b, reads: n} }

// silent sends b verbatim and checks that neither server answers nor closes.
func silent(b string) step { return step{raw: b, probe: true} }

// pipeline writes every command in one write, then compares the replies in order.
func pipeline(cmds ...[]string) step {
	var b bytes.Buffer
	for _, c := range cmds {
		b.Write(multibulk(c...))
	}
	return step{raw: b.String(), reads: len(cmds)}
}

// scan iterates SCAN <cursor> opts... to the end on each server and compares
// the sorted union of the keys (see scanAll).
func scan(opts ...string) step { return step{args: opts, scan: true, reads: 1} }

// poll repeats a command on each server until it replies want (bounded by
// pollTimeout), then compares the last replies: for waiting out a short TTL.
func poll(want string, args ...string) step { return step{args: args, want: want, reads: 1} }

// closes also checks what follows the replies: the connection must be closed
// on both (or, in general, the two must agree on closed / no reply).
func (s step) closes() step { s.probe = true; return s }

// with compares the replies through a named normaliser.
func (s step) with(n normalizer) step { s.norm = n; return s }

// on runs the step on the case's n-th connection (opened on first use).
func (s step) on(n int) step { s.conn = n; return s }

// args helper for pipeline.
func a(args ...string) []string { return args }

// expand turns time placeholders into numbers when the step runs, so that both
// servers see the same absolute times: ${unix+N}, ${unix-N}, ${unixms+N}, ${unixms-N}.
func expand(args []string, now time.Time) []string {
	out := make([]string, len(args))
	for i, s := range args {
		out[i] = s
		if !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
			continue
		}
		body := s[2 : len(s)-1]
		var base int64
		switch {
		case strings.HasPrefix(body, "unixms"):
			base, body = now.UnixMilli(), body[len("unixms"):]
		case strings.HasPrefix(body, "unix"):
			base, body = now.Unix(), body[len("unix"):]
		default:
			panic("unknown placeholder " + s)
		}
		if body != "" {
			d, err := strconv.ParseInt(body, 10, 64)
			if err != nil {
				panic("bad placeholder " + s)
			}
			base += d
		}
		out[i] = strconv.FormatInt(base, 10)
	}
	return out
}

// describe renders a step for failure messages.
func (s step) describe(args []string) string {
	var b strings.Builder
	switch {
	case s.scan:
		b.WriteString("SCAN <cursor>")
	case s.raw != "":
		b.WriteString("raw ")
		b.WriteString(quoteShort(s.raw, 200))
	}
	for i, a := range args {
		if i > 0 || s.scan {
			b.WriteByte(' ')
		}
		b.WriteString(quoteShort(a, 64))
	}
	if s.want != "" {
		fmt.Fprintf(&b, " (polled until %q)", s.want)
	}
	if s.conn != 0 {
		fmt.Fprintf(&b, " [connection %d]", s.conn)
	}
	return b.String()
}

func quoteShort(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(s[:n]), len(s))
}

// quoteReply quotes a reply, eliding the middle of very long ones.
func quoteReply(b []byte) string {
	const head, tail = 300, 60
	if len(b) <= head+tail {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%s…%s (%d bytes)", strconv.Quote(string(b[:head])), strconv.Quote(string(b[len(b)-tail:])), len(b))
}

// run executes the step on one server's connection and returns its outcomes.
func (s step) run(c *conn, args []string) []outcome {
	switch {
	case s.scan:
		return []outcome{scanAll(c, args)}
	case s.want != "":
		deadline := time.Now().Add(pollTimeout)
		for {
			c.send(multibulk(args...))
			o := c.read(replyTimeout)
			if string(o.raw) == s.want || o.end != "" || time.Now().After(deadline) {
				return []outcome{o}
			}
			time.Sleep(pollEvery)
		}
	}
	req := []byte(s.raw)
	if s.raw == "" {
		req = multibulk(args...)
	}
	// Write concurrently with reading: a server may answer (and close) before
	// it has read a large request.
	wrote := make(chan error, 1)
	if s.wait {
		wrote <- nil
	} else {
		go func() { wrote <- c.send(req) }()
	}
	var outs []outcome
	for i := 0; i < s.reads; i++ {
		o := c.read(replyTimeout)
		if o.end != "" && c.dead == "" {
			// A reply that did not come in time would be read by the next
			// step as its own: end the connection here.
			c.dead = o.end
		}
		outs = append(outs, o)
	}
	if s.probe {
		outs = append(outs, c.read(quietTimeout))
	}
	if err := <-wrote; err != nil && c.dead == "" {
		c.dead = "write failed: " + err.Error()
	}
	return outs
}

// scanAll runs a full SCAN iteration. Its outcome is the sorted key set as a
// RESP array, or the first reply that is not a well-formed SCAN page.
func scanAll(c *conn, opts []string) outcome {
	cursor := "0"
	var keys []value
	for i := 0; i < 100000; i++ {
		c.send(multibulk(append([]string{"SCAN", cursor}, opts...)...))
		o := c.read(replyTimeout)
		if o.end != "" {
			return o
		}
		v, err := parseValue(o.raw)
		if err != nil || v.kind != '*' || len(v.elems) != 2 || !v.elems[0].isBlob() || v.elems[1].kind != '*' {
			return o
		}
		keys = append(keys, v.elems[1].elems...)
		cursor = v.elems[0].str
		if cursor == "0" {
			all := value{kind: '*', elems: keys}.sortElems()
			// Duplicates are allowed by SCAN's contract: compare the set.
			var uniq []value
			for j, k := range all.elems {
				if j == 0 || !bytes.Equal(k.encode(), all.elems[j-1].encode()) {
					uniq = append(uniq, k)
				}
			}
			return outcome{raw: value{kind: '*', elems: uniq}.encode()}
		}
	}
	return outcome{end: "SCAN did not reach cursor 0 in 100000 calls"}
}

// ---------------------------------------------------------------- running

// side is one server under comparison.
type side struct {
	name  string // "redis", "lockd"
	addr  string
	admin *conn
	pass  string // the default user's password, sent by the admin connection ("" = none)
}

// env is the pair of servers that every case runs against.
type env struct {
	redis, other *side
}

// newEnv starts redis-server and the server under test (see target_*_test.go).
func newEnv(t *testing.T) *env {
	redisAddr := startRedis(t)
	name, addr := startOther(t)
	t.Logf("comparing redis-server %s at %s with %s at %s", redisVersion(t, redisAddr), redisAddr, name, addr)
	return &env{redis: &side{name: "redis", addr: redisAddr}, other: &side{name: name, addr: addr}}
}

// redisVersion reads redis_version from INFO. The cases were written against
// Redis 7.0.15; another version is logged, since some replies changed in 7.2.
func redisVersion(t *testing.T, addr string) string {
	c, err := dial(addr)
	if err != nil {
		t.Fatalf("redis: dial %s: %v", addr, err)
	}
	defer c.close()
	c.send(multibulk("INFO", "server"))
	o := c.read(replyTimeout)
	v, err := parseValue(o.raw)
	if err != nil || !v.isBlob() {
		t.Fatalf("redis: INFO server answered %v", o)
	}
	for _, line := range strings.Split(v.str, "\r\n") {
		if ver, ok := strings.CutPrefix(line, "redis_version:"); ok {
			if !strings.HasPrefix(ver, "7.0.") {
				t.Logf("warning: redis-server is %s; the cases were written against 7.0.15", ver)
			}
			return ver
		}
	}
	return "(unknown version)"
}

// flush empties a server's keyspace before a case.
func (s *side) flush(t *testing.T) {
	t.Helper()
	for attempt := 0; attempt < 2; attempt++ {
		if s.admin == nil || s.admin.dead != "" {
			c, err := dial(s.addr)
			if err != nil {
				t.Fatalf("%s: dial %s: %v", s.name, s.addr, err)
			}
			s.admin = c
			if s.pass != "" {
				c.send(multibulk("AUTH", s.pass))
				if o := c.read(replyTimeout); string(o.raw) != "+OK\r\n" {
					t.Fatalf("%s: admin AUTH answered %v", s.name, o)
				}
			}
		}
		s.admin.send(multibulk("FLUSHALL"))
		o := s.admin.read(replyTimeout)
		if string(o.raw) == "+OK\r\n" {
			return
		}
		if o.end == "" {
			t.Fatalf("%s: FLUSHALL answered %v", s.name, o)
		}
	}
	t.Fatalf("%s: FLUSHALL failed twice", s.name)
}

// runCases runs each case as a subtest, under RESP2 and RESP3.
func (e *env) runCases(t *testing.T, cases []tcase) {
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			for _, proto := range []int{2, 3} {
				if tc.proto != 0 && tc.proto != proto {
					continue
				}
				t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) { e.runCase(t, tc, proto) })
			}
		})
	}
}

// pair is one client connection to each server.
type pair struct{ redis, other *conn }

func (e *env) runCase(t *testing.T, tc tcase, proto int) {
	e.redis.flush(t)
	e.other.flush(t)
	conns := map[int]*pair{}
	defer func() {
		for _, p := range conns {
			p.redis.close()
			p.other.close()
		}
	}()
	open := func(n int) *pair {
		if p := conns[n]; p != nil {
			return p
		}
		rc, err := dial(e.redis.addr)
		if err != nil {
			t.Fatalf("redis: dial: %v", err)
		}
		oc, err := dial(e.other.addr)
		if err != nil {
			rc.close()
			t.Fatalf("%s: dial: %v", e.other.name, err)
		}
		p := &pair{redis: rc, other: oc}
		conns[n] = p
		if proto == 3 {
			e.compare(t, tc.name, "setup", p, cmd("HELLO", "3").with(helloIdentity).on(n))
		}
		return p
	}
	for i, s := range tc.steps {
		p := open(s.conn)
		if !e.compare(t, tc.name, strconv.Itoa(i+1), p, s) {
			// Continue while both connections are usable, so that one
			// difference does not hide the next; stop when a side is gone.
			if p.redis.dead != "" || p.other.dead != "" {
				t.Logf("stopping this case: redis connection %q, %s connection %q",
					p.redis.dead, e.other.name, p.other.dead)
				return
			}
		}
	}
}

// compare runs one step on both servers and reports a difference.
func (e *env) compare(t *testing.T, caseName, stepName string, p *pair, s step) bool {
	t.Helper()
	args := expand(s.args, time.Now())
	// Both servers run the step at the same moment, so that remaining TTLs
	// are read close together and quiet probes overlap.
	var oo []outcome
	done := make(chan struct{})
	go func() { oo = s.run(p.other, args); close(done) }()
	ro := s.run(p.redis, args)
	<-done
	desc := s.describe(args)
	if s.want != "" && string(ro[0].raw) != s.want {
		t.Errorf("case %q step %s: %s: redis itself did not reach the polled reply (got %v): the case is wrong",
			caseName, stepName, desc, ro[0])
		return false
	}
	if verbose {
		for i := range ro {
			t.Logf("step %s: %s\n\tredis: %v\n\t%s: %v", stepName, desc, ro[i], e.other.name, oo[i])
		}
	}
	ok := true
	for i := range ro {
		r, o := ro[i], oo[i]
		rn, on := r, o
		if s.norm.fn != nil && r.end == "" && o.end == "" {
			rn.raw, on.raw = s.norm.fn(r.raw, o.raw)
		}
		if rn.equal(on) {
			continue
		}
		ok = false
		which := ""
		if len(ro) > 1 {
			which = fmt.Sprintf(" reply %d of %d", i+1, len(ro))
		}
		msg := fmt.Sprintf("case %q step %s%s: %s\n\tredis: %v\n\t%s: %v", caseName, stepName, which, desc, r, e.other.name, o)
		if s.norm.fn != nil {
			msg += fmt.Sprintf("\n\tcompared through normaliser %s: %v vs %v", s.norm.name, rn, on)
		}
		if r.end == "" && o.end == "" {
			msg += fmt.Sprintf("\n\tfirst difference at byte %d", firstDiff(rn.raw, on.raw))
		}
		t.Error(msg)
	}
	return ok
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// TestCompat is the whole differential suite: one redis-server and one server
// under test for the run, every family a subtest, every case on a flushed
// keyspace. Run one family with -run 'TestCompat/strings'.
func TestCompat(t *testing.T) {
	e := newEnv(t)
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) { e.runCases(t, f.cases) })
	}
}

// families lists the case tables, one per file.
var families = []struct {
	name  string
	cases []tcase
}{
	{"protocol", protocolCases},
	{"set", setCases},
	{"strings", stringCases},
	{"keys", keyCases},
	{"expire", expireCases},
	{"counters", counterCases},
	{"hashes", hashCases},
	{"lists", listCases},
	{"lists-blocking", blockingListCases},
	{"sorted-sets", zsetCases},
	{"sorted-sets-pairs", zsetPairCases},
	{"transactions", multiCases},
	{"pubsub", pubsubCases},
	{"command", commandCases},
	{"scripting", scriptCases},
	{"replication", replicationCases},
	{"scripting-patterns", patternCases},
	{"scripting-every-command", everyCommandFromScripts},
	{"cluster", clusterCases},
	{"tracking", trackingCases},
	{"echoed-errors", echoCases},    // echo_test.go
	{"info-fields", infoFieldCases}, // info_fields_test.go
	{"object", objectCases},         // object_test.go
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
