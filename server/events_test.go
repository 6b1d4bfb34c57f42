package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type lockEvent struct {
	Event   string `json:"event"`
	Name    string `json:"name"`
	Token   int64  `json:"token"`
	Owner   string `json:"owner"`
	Session int64  `json:"session"`
	Reason  string `json:"reason"`
	Locks   int    `json:"locks"`
}

// TestEventStream subscribes to the lock event channels and sees every grant,
// release, expiry, rejection and session expiry once, in order; and Redis's
// keyspace notifications once they are switched on.
func TestEventStream(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 2)
	sub := c.Subscribe(ctx, "lockd:events", "lockd:events:jobs/", "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription confirmations
		t.Fatal(err)
	}
	for range 2 {
		sub.Receive(ctx)
	}
	msgs := sub.Channel()
	next := func() *redis.Message {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(10 * time.Second): // a session's 5 s TTL, and a margin
			t.Fatal("no event within 10s")
			return nil
		}
	}
	event := func(channel string) lockEvent {
		t.Helper()
		m := next()
		if m.Channel != channel {
			t.Fatalf("message on %s (%s), want %s", m.Channel, m.Payload, channel)
		}
		var ev lockEvent
		if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
			t.Fatalf("payload %q: %v", m.Payload, err)
		}
		return ev
	}
	c.Do(ctx, "NAMESPACE.SET", "jobs/", "MAXWAITERS", "0")
	tok, _ := c.Do(ctx, "LOCK.ACQUIRE", "jobs/a", "w1", "PX", "60000").Int64()
	for _, ch := range []string{"lockd:events", "lockd:events:jobs/"} {
		if ev := event(ch); ev.Event != "grant" || ev.Name != "jobs/a" || ev.Token != tok || ev.Owner != "w1" {
			t.Fatalf("grant event on %s: %+v", ch, ev)
		}
	}
	c.Do(ctx, "LOCK.ACQUIRE", "jobs/a", "w2", "WAIT", "1000")
	for _, ch := range []string{"lockd:events", "lockd:events:jobs/"} {
		if ev := event(ch); ev.Event != "reject" || ev.Reason != "queue-full" || ev.Owner != "w2" {
			t.Fatalf("reject event on %s: %+v", ch, ev)
		}
	}
	c.Do(ctx, "LOCK.RELEASE", "jobs/a", tok)
	event("lockd:events")
	if ev := event("lockd:events:jobs/"); ev.Event != "release" || ev.Token != tok {
		t.Fatalf("release event: %+v", ev)
	}
	// Expiry, and the keyspace notification once switched on.
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.ConfigGet(ctx, "notify-keyspace-events").Val(); v["notify-keyspace-events"] != "xE" {
		t.Fatalf("CONFIG GET notify-keyspace-events = %v", v)
	}
	tok2, _ := c.Do(ctx, "LOCK.ACQUIRE", "short", "w3", "PX", "50").Int64()
	if ev := event("lockd:events"); ev.Event != "grant" || ev.Token != tok2 {
		t.Fatalf("grant: %+v", ev)
	}
	if ev := event("lockd:events"); ev.Event != "expire" || ev.Token != tok2 || ev.Owner != "w3" {
		t.Fatalf("expire event: %+v", ev)
	}
	if m := next(); m.Channel != "__keyevent@0__:expired" || m.Payload != "short" {
		t.Fatalf("keyspace notification: %s %q", m.Channel, m.Payload)
	}
	// A session that expires: one event per lock and one for the session.
	open, _ := c.Do(ctx, "SESSION.OPEN", "TTL", "5000").Slice()
	id := open[1].(int64)
	tok3, _ := c.Do(ctx, "LOCK.ACQUIRE", "s", "w4", "SESSION", id).Int64()
	event("lockd:events") // grant
	if ev := event("lockd:events"); ev.Event != "expire" || ev.Token != tok3 || ev.Session != id {
		t.Fatalf("session lock expire event: %+v", ev)
	}
	if ev := event("lockd:events"); ev.Event != "session-expire" || ev.Session != id || ev.Locks != 1 {
		t.Fatalf("session-expire event: %+v", ev)
	}
	select {
	case m := <-msgs:
		t.Fatalf("unexpected extra message %s %q", m.Channel, m.Payload)
	case <-time.After(100 * time.Millisecond):
	}
}
