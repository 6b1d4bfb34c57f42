package compat

import (
	"strings"
	"testing"
	"time"
)

// INFO fields that lockd counts as Redis does, compared one by one (the rest
// of INFO differs: infoText). The tracking table: connection 0 and 1 track
// (RESP2 without REDIRECT, so that no invalidation is sent anywhere and
// every reply is the next frame), connection 2 writes.
var infoFieldCases = []tcase{
	{name: "tracking counts", proto: 2, steps: []step{
		cmd("INFO").with(trackingFields),
		cmd("CLIENT", "TRACKING", "ON"),
		cmd("INFO").with(trackingFields),
		cmd("GET", "a"),
		cmd("MGET", "a", "b", "c"),
		cmd("INFO").with(trackingFields),
		cmd("CLIENT", "TRACKING", "ON").on(1),
		cmd("GET", "a").on(1),
		cmd("HGET", "h", "f").on(1),
		cmd("INFO").with(trackingFields).on(1),
		cmd("SET", "a", "1").on(2), // invalidates a for both connections
		cmd("INFO").with(trackingFields).on(2),
		cmd("CLIENT", "TRACKING", "OFF").on(1), // its keys stay until invalidated
		cmd("INFO").with(trackingFields),
		cmd("SET", "h", "x").on(2),
		cmd("INFO").with(trackingFields),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p", "PREFIX", "q"),
		cmd("CLIENT", "TRACKING", "ON", "BCAST").on(1),
		cmd("INFO", "clients", "stats").with(trackingFields),
		cmd("GET", "b"), // BCAST: remembers no key
		cmd("INFO").with(trackingFields),
		cmd("FLUSHALL").on(2),
		cmd("INFO").with(trackingFields),
		cmd("CLIENT", "TRACKING", "OFF"),
		cmd("CLIENT", "TRACKING", "OFF").on(1),
		cmd("INFO").with(trackingFields),
	}},
}

// trackingFields compares INFO by its tracking figures alone.
var trackingFields = normalizer{"trackingFields", both(infoOnly("tracking_clients",
	"tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"))}

// infoOnly (several fields; infoField in cluster_test.go keeps one) maps an INFO reply to the lines "field:value" of the named
// fields, in the order named ("field:<missing>" for one it lacks); any other
// reply is left as it is.
func infoOnly(fields ...string) func([]byte) []byte {
	return func(raw []byte) []byte {
		v, err := parseValue(raw)
		if err != nil || !v.isBlob() {
			return raw
		}
		var b strings.Builder
		for _, f := range fields {
			b.WriteString(f + ":" + infoValue(v.str, f) + "\n")
		}
		return []byte(b.String())
	}
}

// infoValue is field's value in the INFO text, or "<missing>".
func infoValue(text, field string) string {
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return "<missing>"
}

// TestInfoBlockedClients checks on redis-server and on lockd alike that a
// client blocked in BLPOP (and BZPOPMIN, with a timeout) is counted in
// INFO's blocked_clients (and clients_in_timeout_table) while it waits, and
// no longer once it is served or timed out.
func TestInfoBlockedClients(t *testing.T) {
	e := newEnv(t)
	for _, s := range []*side{e.redis, e.other} {
		t.Run(s.name, func(t *testing.T) {
			s.flush(t)
			dialT := func() *conn {
				c, err := dial(s.addr)
				if err != nil {
					t.Fatalf("dial %s: %v", s.addr, err)
				}
				t.Cleanup(c.close)
				return c
			}
			watcher, popper, timed := dialT(), dialT(), dialT()
			call := func(c *conn, args ...string) string {
				t.Helper()
				c.send(multibulk(args...))
				o := c.read(replyTimeout)
				if o.end != "" {
					t.Fatalf("%q: %s", args, o.end)
				}
				return string(o.raw)
			}
			// waitInfo polls INFO (bounded) until both counts are as wanted.
			waitInfo := func(blocked, inTimeout string) {
				t.Helper()
				deadline := time.Now().Add(pollTimeout)
				for {
					v, err := parseValue([]byte(call(watcher, "INFO", "clients")))
					if err != nil {
						t.Fatalf("INFO clients: %v", err)
					}
					b, tt := infoValue(v.str, "blocked_clients"), infoValue(v.str, "clients_in_timeout_table")
					if b == blocked && tt == inTimeout {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("blocked_clients:%s clients_in_timeout_table:%s, want %s and %s", b, tt, blocked, inTimeout)
					}
					time.Sleep(pollEvery)
				}
			}
			waitInfo("0", "0")
			popper.send(multibulk("BLPOP", "q", "0"))
			waitInfo("1", "0")
			timed.send(multibulk("BZPOPMIN", "z", "30"))
			waitInfo("2", "1")
			if got := call(watcher, "RPUSH", "q", "x"); got != ":1\r\n" {
				t.Fatalf("RPUSH answered %q", got)
			}
			if o := popper.read(replyTimeout); string(o.raw) != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
				t.Fatalf("BLPOP answered %v", o)
			}
			waitInfo("1", "1")
			if got := call(watcher, "ZADD", "z", "1", "m"); got != ":1\r\n" {
				t.Fatalf("ZADD answered %q", got)
			}
			if o := timed.read(replyTimeout); string(o.raw) != "*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n" {
				t.Fatalf("BZPOPMIN answered %v", o)
			}
			waitInfo("0", "0")
			popper.send(multibulk("BRPOP", "q", "0.2")) // times out
			if o := popper.read(replyTimeout); string(o.raw) != "*-1\r\n" {
				t.Fatalf("BRPOP answered %v", o)
			}
			waitInfo("0", "0")
		})
	}
}
