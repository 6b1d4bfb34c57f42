package fsm

import (
	"fmt"
	"testing"

	"github.com/lockd/lockd/command"
)

// trackedEvents takes the harness's events and returns the
// command.TrackingChannel ones, each as its decoded keys ("*" for every key).
func (h *harness) trackedEvents() []string {
	var out []string
	for _, ev := range h.ks.TakeEvents() {
		if string(ev.Channel) != command.TrackingChannel {
			continue
		}
		keys, ok := command.TrackedKeys(ev.Message)
		if !ok {
			h.t.Fatalf("undecodable tracking message %q", ev.Message)
		}
		if len(keys) == 0 {
			out = append(out, "*")
			continue
		}
		out = append(out, fmt.Sprintf("%s", keys))
	}
	return out
}

// TestTrackingEvents: every command that changes keys names them once it is
// applied (one event per command), whatever changed them — a write, a TTL, an
// expiry, a lock; FLUSHALL names every key; a command that changes nothing
// names nothing; and nothing at all is built while nobody tracks.
func TestTrackingEvents(t *testing.T) {
	h := newHarness(t)
	tracking := true
	h.ks.SetEventFilter(func(ch string) bool { return tracking && ch == command.TrackingChannel })
	steps := []struct {
		advance int64
		cmd     string
		want    string // the events, fmt'd
	}{
		{0, "SET a 1", "[[a]]"},
		{0, "SET a 2 NX", "[]"},
		{0, "MSET b 1 c 2 b 3", "[[b c b]]"},
		{0, "DEL a nosuch", "[[a]]"},
		{0, "EXPIRE b 1", "[[b]]"},
		{0, "EXPIRE nosuch 1", "[]"},
		{0, "HSET h f v", "[[h]]"},
		{0, "HDEL h f", "[[h]]"},
		{0, "LOCK.ACQUIRE lk o1 PX 100", "[[lk]]"},
		{0, "PUBLISH ch m", "[]"},
		{0, "LPUSH l a b", "[[l]]"},
		{0, "LPOP l 2", "[[l]]"},
		{0, "ZADD z 1 m", "[[z]]"},
		{0, "ZREM z nosuch", "[]"},
		{0, "ZREM z m", "[[z]]"},
		{0, "FLUSHALL", "[*]"},
		{0, "SET x 1 PX 10", "[[x]]"},
		{20, "tick", "[[x]]"},
	}
	for _, s := range steps {
		h.now += s.advance
		if s.cmd == "tick" {
			h.tick()
		} else {
			h.do(s.cmd)
		}
		if got := fmt.Sprint(h.trackedEvents()); got != s.want {
			t.Errorf("%s: events %s, want %s", s.cmd, got, s.want)
		}
	}
	tracking = false
	h.do("SET a 1")
	h.do("FLUSHALL")
	if ev := h.ks.TakeEvents(); len(ev) != 0 {
		t.Errorf("events built with nobody tracking: %v", ev)
	}
}
