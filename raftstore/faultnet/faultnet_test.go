package faultnet

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

const bound = 5 * time.Second

// echoServer answers every line with the same line, on 127.0.0.1.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func proxied(t *testing.T) (*Net, Link, string) {
	t.Helper()
	n := New()
	t.Cleanup(func() { n.Close() })
	l := Link{From: "a", To: "b"}
	addr, err := n.Add(l, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	return n, l, addr
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{c, bufio.NewReader(c)}
}

// roundTrip sends a line and waits (up to wait) for its echo.
func (c *lineConn) roundTrip(line string, wait time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	s, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return s[:len(s)-1], nil
}

func TestOpenLinkForwards(t *testing.T) {
	_, _, addr := proxied(t)
	c := dial(t, addr)
	for _, s := range []string{"one", "two", "three"} {
		got, err := c.roundTrip(s, bound)
		if err != nil || got != s {
			t.Fatalf("echo %q through the proxy: got %q, %v", s, got, err)
		}
	}
}

func TestResetClosesOpenAndNewConnections(t *testing.T) {
	n, l, addr := proxied(t)
	c := dial(t, addr)
	if _, err := c.roundTrip("x", bound); err != nil {
		t.Fatal(err)
	}
	n.Set(Reset, 0, l)
	if got, err := c.roundTrip("y", bound); err == nil {
		t.Fatalf("an open connection still echoed %q after Reset", got)
	}
	c2 := dial(t, addr) // accepted, then closed
	if got, err := c2.roundTrip("z", bound); err == nil {
		t.Fatalf("a new connection echoed %q during Reset", got)
	}
	n.Heal()
	c3 := dial(t, addr)
	if got, err := c3.roundTrip("w", bound); err != nil || got != "w" {
		t.Fatalf("after Heal: got %q, %v", got, err)
	}
}

func TestDropHoldsTrafficUntilHeal(t *testing.T) {
	n, l, addr := proxied(t)
	c := dial(t, addr)
	if _, err := c.roundTrip("x", bound); err != nil {
		t.Fatal(err)
	}
	n.Set(Drop, 0, l)
	if got, err := c.roundTrip("held", 200*time.Millisecond); err == nil {
		t.Fatalf("echoed %q during a silent partition", got)
	}
	fresh := dial(t, addr) // accepted by the proxy, but not delivered
	fresh.SetDeadline(time.Now().Add(bound))
	if _, err := fresh.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
	n.Heal()
	// What was held is delivered after the partition heals, as TCP would.
	c.SetDeadline(time.Now().Add(bound))
	if s, err := c.r.ReadString('\n'); err != nil || s != "held\n" {
		t.Fatalf("held bytes after Heal: %q, %v", s, err)
	}
	if s, err := fresh.r.ReadString('\n'); err != nil || s != "late\n" {
		t.Fatalf("connection opened during the partition, after Heal: %q, %v", s, err)
	}
}

func TestDelayIsAdded(t *testing.T) {
	n, l, addr := proxied(t)
	c := dial(t, addr)
	if _, err := c.roundTrip("warm", bound); err != nil {
		t.Fatal(err)
	}
	const d = 100 * time.Millisecond
	n.Set(Open, d, l)
	start := time.Now()
	if got, err := c.roundTrip("slow", bound); err != nil || got != "slow" {
		t.Fatalf("delayed echo: %q, %v", got, err)
	}
	// Both directions are delayed.
	if el := time.Since(start); el < 2*d {
		t.Fatalf("round trip took %v with %v added each way", el, d)
	}
	if m, got := n.State(l); m != Open || got != d {
		t.Fatalf("State = %v, %v", m, got)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	n, _, addr := proxied(t)
	c := dial(t, addr)
	if _, err := c.roundTrip("x", bound); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { n.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatal("Close did not return")
	}
	if _, err := c.roundTrip("y", bound); err == nil {
		t.Fatal("connection still served after Close")
	}
	if _, err := n.Add(Link{"x", "y"}, addr); err != ErrClosed {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
}
