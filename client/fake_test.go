package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/redis/go-redis/v9"
)

// fakeClock is a Clock that moves only when Advance is called. Timers that
// come due run inside Advance, in deadline order, before it returns.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c    *fakeClock
	at   time.Time
	f    func()
	done bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) client.Timer {
	c.mu.Lock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		t.done = true
		c.mu.Unlock()
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// pending counts the timers that have neither run nor been stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// Advance moves the clock by d and runs the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// srvErr is an error reply of the fake server.
type srvErr string

func (e srvErr) Error() string { return string(e) }
func (srvErr) RedisError()     {}

// fakeServer answers every command of a go-redis client itself (a hook that
// never calls the network): handle gets the arguments as strings and returns
// the reply value (nil for a nil reply) or an error. It records every command.
type fakeServer struct {
	mu     sync.Mutex
	calls  []string
	handle func(args []string) (any, error)
}

func (f *fakeServer) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("fake server: no network")
	}
}

func (f *fakeServer) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		var args []string
		for _, a := range cmd.Args() {
			args = append(args, fmt.Sprint(a))
		}
		f.mu.Lock()
		f.calls = append(f.calls, strings.Join(args, " "))
		h := f.handle
		f.mu.Unlock()
		v, err := h(args)
		if err == nil && v == nil {
			err = redis.Nil
		}
		c, ok := cmd.(*redis.Cmd)
		if !ok {
			err = fmt.Errorf("fake server: unexpected %T", cmd)
		}
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		c.SetVal(v)
		return nil
	}
}

func (f *fakeServer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// count returns how many commands began with prefix.
func (f *fakeServer) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeServer) setHandler(h func(args []string) (any, error)) {
	f.mu.Lock()
	f.handle = h
	f.mu.Unlock()
}

// newFake returns a Locker on a fake server and a fake clock.
func newFake(t *testing.T, h func(args []string) (any, error), opts ...client.Option) (*client.Locker, *fakeServer, *fakeClock) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rc.Close() })
	fs := &fakeServer{handle: h}
	rc.AddHook(fs)
	clk := newFakeClock()
	return client.New(rc, append([]client.Option{client.WithClock(clk)}, opts...)...), fs, clk
}

// eventually polls cond every 5ms until it holds, failing after 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
