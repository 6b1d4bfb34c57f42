package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
	"github.com/lockd/lockd/rdb"
	"github.com/redis/go-redis/v9"
)

// waitFor is how long a test polls for a condition; pollEvery how often.
const (
	waitFor   = 20 * time.Second
	pollEvery = 20 * time.Millisecond
)

// eventually polls cond until it is true or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", waitFor, what)
		}
		time.Sleep(pollEvery)
	}
}

// startRedis starts a private redis-server (clustertest.StartRedis: a free
// 127.0.0.1 port, a TempDir, killed in t.Cleanup) with extra options ("$PORT"
// in one stands for the port; "--port", "0", "--tls-port", "$PORT" makes the
// address a TLS one) and returns its address once it is up. A missing
// redis-server fails the test with the install hint.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	addr, _ := clustertest.StartRedis(t, extra...)
	return addr
}

// client is a go-redis client of addr (RESP2), closed in t.Cleanup.
func client(t *testing.T, addr string, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// info returns the fields of INFO section.
func info(t *testing.T, c *redis.Client, section string) map[string]string {
	t.Helper()
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// run runs l until the test ends, and returns a function that stops it and
// waits for Run to return.
func run(t *testing.T, l *Link) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run returned %v, want context.Canceled", err)
				}
			case <-time.After(waitFor):
				t.Errorf("Run did not return within %v of its context's end", waitFor)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// memSink is a Sink in memory. It keeps the keys of the RDB, every Command,
// a counter per key that INCR and INCRBY move (to see nothing is applied
// twice or missed), and checks that offsets only grow.
type memSink struct {
	mu       sync.Mutex
	pos      Position
	keys     map[string]rdb.Entry // "db/key"
	counters map[string]int64     // "db/key"
	cmds     []Command
	begins   int
	ends     int
	advances int
	bad      []string // contract violations seen
	failNext error    // Apply returns it once
}

func newMemSink() *memSink {
	return &memSink{keys: map[string]rdb.Entry{}, counters: map[string]int64{}}
}

func dbKey(db int, key []byte) string { return strconv.Itoa(db) + "/" + string(key) }

func (s *memSink) Position() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos
}

func (s *memSink) BeginFull(_ context.Context, at Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.begins++
	s.pos = Position{} // the data goes: never resume from before it
	s.keys = map[string]rdb.Entry{}
	s.counters = map[string]int64{}
	return nil
}

func (s *memSink) Load(_ context.Context, e rdb.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[dbKey(e.DB, e.Key)] = e
	return nil
}

func (s *memSink) EndFull(_ context.Context, at Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends++
	s.pos = at
	return nil
}

func (s *memSink) Apply(_ context.Context, cmds []Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failNext; err != nil {
		s.failNext = nil
		return err
	}
	for _, c := range cmds {
		if c.End <= s.pos.Offset {
			s.bad = append(s.bad, fmt.Sprintf("End %d after %d", c.End, s.pos.Offset))
		}
		if c.Tx != nil {
			if len(c.TxDB) != len(c.Tx) || c.Args != nil {
				s.bad = append(s.bad, fmt.Sprintf("malformed transaction %+v", c))
			}
			for i, args := range c.Tx {
				s.exec(c.TxDB[i], args)
			}
		} else {
			s.exec(c.DB, c.Args)
		}
		s.cmds = append(s.cmds, c)
		s.pos = c.Position(s.pos.ReplID)
	}
	return nil
}

// exec applies the commands the tests look at.
func (s *memSink) exec(db int, args [][]byte) {
	name := strings.ToUpper(string(args[0]))
	switch {
	case name == "INCR" && len(args) == 2:
		s.counters[dbKey(db, args[1])]++
	case name == "INCRBY" && len(args) == 3:
		n, _ := strconv.ParseInt(string(args[2]), 10, 64)
		s.counters[dbKey(db, args[1])] += n
	case name == "SET" && len(args) >= 3:
		s.keys[dbKey(db, args[1])] = rdb.Entry{DB: db, Key: args[1]}
	case name == "DEL" || name == "UNLINK":
		for _, k := range args[1:] {
			delete(s.keys, dbKey(db, k))
		}
	}
}

func (s *memSink) Advance(_ context.Context, at Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at.Offset < s.pos.Offset {
		s.bad = append(s.bad, fmt.Sprintf("Advance to %d from %d", at.Offset, s.pos.Offset))
	}
	s.advances++
	s.pos = at
	return nil
}

// counter returns the INCR count of key in db.
func (s *memSink) counter(db int, key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[dbKey(db, []byte(key))]
}

// has reports whether the sink holds key in db.
func (s *memSink) has(db int, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[dbKey(db, []byte(key))]
	return ok
}

// commands returns a copy of the commands applied so far.
func (s *memSink) commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command(nil), s.cmds...)
}

// check fails t on any contract violation the sink saw.
func (s *memSink) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bad {
		t.Error(b)
	}
}
