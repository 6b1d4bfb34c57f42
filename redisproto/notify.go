package redisproto

import (
	"strings"
)

// Keyspace notifications (notify-keyspace-events), as in Redis: off by
// default; CONFIG SET notify-keyspace-events turns them on for this node. lockd
// publishes the "expired" class (x): __keyevent@0__:expired with the key, and
// __keyspace@0__:<key> with "expired", when a tick removes an expired key.

// notifyFlags are the letters Redis accepts, in the order CONFIG GET shows them.
const notifyFlags = "g$lshzxetmdnKE"

// parseNotify validates a notify-keyspace-events value and returns it in
// Redis's canonical order ("A" for all classes).
func parseNotify(v string) (string, bool) {
	set := map[byte]bool{}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == 'A' {
			for _, x := range "g$lshzxetd" {
				set[byte(x)] = true
			}
			continue
		}
		if !strings.ContainsRune(notifyFlags, rune(c)) {
			return "", false
		}
		set[c] = true
	}
	var b strings.Builder
	all := true
	for _, x := range "g$lshzxetd" {
		all = all && set[byte(x)]
	}
	if all {
		b.WriteByte('A')
	}
	for i := 0; i < len(notifyFlags); i++ {
		c := notifyFlags[i]
		if all && strings.IndexByte("g$lshzxetd", c) >= 0 {
			continue
		}
		if set[c] {
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// notifyAllows reports whether a keyspace-notification channel may be
// delivered under flags; other channels always may.
func notifyAllows(flags, channel string) bool {
	expired := strings.ContainsAny(flags, "xA")
	switch {
	case strings.HasPrefix(channel, "__keyevent@"):
		return expired && strings.Contains(flags, "E")
	case strings.HasPrefix(channel, "__keyspace@"):
		return expired && strings.Contains(flags, "K")
	}
	return true
}

// notifyConfig is the current notify-keyspace-events value.
func (s *Server) notifyConfig() string {
	if p := s.notify.Load(); p != nil {
		return *p
	}
	return ""
}
