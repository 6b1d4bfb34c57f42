package fsm

import (
	"encoding/binary"
	"encoding/json"

	"github.com/lockd/lockd/command"
)

// EventsChannel is the pub/sub channel every lock event is published on. The
// events of a name inside a namespace also go to EventsChannel + ":" + prefix.
//
// Each message is one JSON object:
//
//	{"event":"grant","name":"payouts/48213","token":12,"owner":"worker-02","session":0,"waiter":11,"at":81234}
//
// event is grant | release | expire | session-expire | reject; token, owner and
// session name the hold (session-expire: session and locks, the number of locks
// it held); waiter is set when a queued acquire was granted; reason says why an
// acquire was rejected (queue-full | lock-delay | safety | max-ttl); at is the
// log time in ms. Every node publishes each event to its own subscribers once,
// when it applies the entry.
const EventsChannel = "lockd:events"

// Keyspace notification channels (Redis's notify-keyspace-events): the node
// decides whether to deliver them (CONFIG SET notify-keyspace-events).
const (
	KeyeventExpired = "__keyevent@0__:expired"
	KeyspacePrefix  = "__keyspace@0__:"
)

type lockEvent struct {
	Event   string `json:"event"`
	Name    string `json:"name"`
	Token   uint64 `json:"token,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Session uint64 `json:"session,omitempty"`
	Waiter  uint64 `json:"waiter,omitempty"`
	Locks   int    `json:"locks,omitempty"`
	Reason  string `json:"reason,omitempty"`
	At      int64  `json:"at"`
}

// SetEventFilter tells the keyspace which event channels have listeners on
// this node (nil: all of them): lock events and keyspace notifications are
// built only when wanted, since building them is most of a grant's
// allocations. No reply and no state depends on it, so replicas may differ.
func (k *Keyspace) SetEventFilter(wants func(channel string) bool) { k.wants = wants }

func (k *Keyspace) wanted(channel string) bool { return k.wants == nil || k.wants(channel) }

// publishLock queues a lock event for this entry's subscribers, if any
// listens: the lock's name is copied into the event only then.
func (k *Keyspace) publishLock(ev lockEvent, name []byte) {
	if !k.wanted(EventsChannel) {
		return
	}
	ev.Name, ev.At = string(name), k.now
	msg, _ := json.Marshal(ev)
	k.events = append(k.events, Event{Channel: []byte(EventsChannel), Message: msg})
	if ns := k.namespaceFor(name); ns.Prefix != "" {
		k.events = append(k.events, Event{Channel: []byte(EventsChannel + ":" + ns.Prefix), Message: msg})
	}
}

func (k *Keyspace) publishGrant(name []byte, h holder) {
	k.publishLock(lockEvent{Event: "grant", Token: h.token, Owner: h.owner, Session: h.session, Waiter: h.via}, name)
}

func (k *Keyspace) publishHold(event string, name []byte, h holder) {
	k.publishLock(lockEvent{Event: event, Token: h.token, Owner: h.owner, Session: h.session}, name)
}

func (k *Keyspace) publishReject(name, owner []byte, reason string) {
	k.publishLock(lockEvent{Event: "reject", Owner: string(owner), Reason: reason}, name)
}

// publishExpired sends Redis's keyspace notifications for a key removed because
// its TTL passed.
func (k *Keyspace) publishExpired(key string) {
	if !k.wanted(KeyeventExpired) {
		return
	}
	k.events = append(k.events,
		Event{Channel: []byte(KeyeventExpired), Message: []byte(key)},
		Event{Channel: []byte(KeyspacePrefix + key), Message: []byte("expired")})
}

// touch notes that key changed in the command being applied, for
// command.TrackingChannel (client-side caching), whose event is built only
// while SetEventFilter's wants says some client on this node tracks keys. It
// costs one check when no client tracks keys. key is an item's key
// (immutable): it is not copied.
func (k *Keyspace) touch(key string) {
	if k.wants != nil && !k.wants(command.TrackingChannel) {
		return
	}
	k.touched = append(k.touched, key)
}

// touchAll notes that every key changed (FLUSHALL): the keys the command
// changed before it need no event of their own.
func (k *Keyspace) touchAll() {
	k.touched = k.touched[:0]
	if !k.wanted(command.TrackingChannel) {
		return
	}
	k.events = append(k.events, Event{Channel: []byte(command.TrackingChannel), Message: []byte{}})
}

// flushTouched turns the keys noted by touch into one command.TrackingChannel
// event.
func (k *Keyspace) flushTouched() {
	if len(k.touched) == 0 {
		return
	}
	n := 0
	for _, key := range k.touched {
		n += binary.MaxVarintLen64 + len(key)
	}
	msg := make([]byte, 0, n)
	for _, key := range k.touched {
		msg = command.AppendTrackedKey(msg, key)
	}
	k.touched = k.touched[:0]
	k.events = append(k.events, Event{Channel: []byte(command.TrackingChannel), Message: msg})
}
