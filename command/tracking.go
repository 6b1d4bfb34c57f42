package command

import "encoding/binary"

// TrackingChannel is the internal channel on which a node's state machine
// (raftstore/fsm) tells its RESP door (redisproto) which keys an applied
// command changed, for Redis's client-side caching (CLIENT TRACKING: the door
// sends the invalidations). It is never delivered to subscribers: the door's
// publish hook takes it, and a client's PUBLISH to this name (which starts
// with a NUL byte) reaches no subscriber and at worst invalidates keys for
// nothing. The state machine builds one event per applied command that
// changed keys (a transaction and a script are one command), only while some
// client on the node tracks keys; its message is every key the command put,
// replaced, removed, expired or whose TTL it changed, in the order they
// changed (a key may repeat), each appended by AppendTrackedKey and decoded
// by TrackedKeys. An empty message means every key changed (FLUSHALL, a
// snapshot restored). No reply and no state depends on it, so replicas may
// differ in who listens.
const TrackingChannel = "\x00lockd:tracking"

// AppendTrackedKey appends key to a TrackingChannel message: its length as a
// uvarint, then its bytes. It grows msg by at most binary.MaxVarintLen64 +
// len(key).
func AppendTrackedKey(msg []byte, key string) []byte {
	msg = binary.AppendUvarint(msg, uint64(len(key)))
	return append(msg, key...)
}

// TrackedKeys decodes a TrackingChannel message: the keys it names, in order
// (they alias msg), and false for a message that is not one. An empty message
// (every key changed) decodes to no keys and true.
func TrackedKeys(msg []byte) ([][]byte, bool) {
	var keys [][]byte
	for len(msg) > 0 {
		n, w := binary.Uvarint(msg)
		if w <= 0 || n > uint64(len(msg)-w) {
			return nil, false
		}
		keys = append(keys, msg[w:w+int(n)])
		msg = msg[w+int(n):]
	}
	return keys, true
}
