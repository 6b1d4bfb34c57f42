package redisproto

import (
	"strconv"
	"time"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// The client output buffer limit (Config.MaxOutputBuffer) is enforced while
// replies are produced, not after. A client's output is what was produced
// for it and not yet written to its socket: the replies of the batch being
// answered, the queue of pushed messages and replies (conn.pending) and the
// bytes being written (conn.inflight). Four things keep it, and the memory
// behind it, bounded:
//
//   - Rendering. Each reply is sized before it is rendered (replySize: the
//     exact bytes resp.Append will write, computed without writing them); a
//     reply that would take the client's output past the limit is never
//     rendered, and the client is disconnected (counted as an output
//     disconnect). One MGET naming a 1 MB value 1,500 times is not built.
//   - Batching. The store builds the replies of a whole batch before any is
//     rendered, so a pipeline of GETs of a large value is cut into batches of
//     at most batchUnits values (replyUnits counts the values a request's
//     reply may copy): half the limit's worth at the largest value the store
//     accepts (Config.MaxValueBytes), until the connection's replies have
//     shown how large its values are (conn.unitBytes, the largest per value
//     seen), and never more than maxBatchUnits. The event loop hands a
//     connection with more than that buffered to its goroutine, which
//     answers batch after batch, each written before the next is read.
//   - Repeated names. MGET k k k … copies the value once per name; the store
//     is asked for each key once and the reply repeats the same bytes
//     (dedupe); HMGET's fields likewise.
//   - Stalls. Replies are written in chunks, each with a deadline: a client
//     that takes none of a chunk for outputStall (Config.OutputStall,
//     default 60 s, Redis's soft-limit seconds for subscribers) is
//     disconnected, so that a client that pipelines and never reads does not
//     hold its goroutine and its batch for ever.
//
// The store does not copy the values it reads into replies (resp.BulkRef:
// replies alias the keyspace's immutable strings), so a reply of many large
// values, a transaction's included, costs its headers until it is rendered
// here. What a script builds from what it reads is bounded by the script
// engine's allocation budget (its dry run), not here.

// maxBatchUnits bounds the values one batch's replies may copy, whatever the
// connection's values have looked like so far.
const maxBatchUnits = 32

// defaultMaxValue is Config.MaxValueBytes's default: the store's default
// largest write (raftstore.DefaultMaxWriteBytes).
const defaultMaxValue = 4 << 20

// defaultOutputStall is Config.OutputStall's default.
const defaultOutputStall = 60 * time.Second

// writeChunk is the most written with one deadline (conn.write).
const writeChunk = 256 << 10

// dedupeFrom is the number of names from which MGET and HMGET are checked
// for repeats (below it a repeat copies at most this many values, no more
// than a batch of GETs).
const dedupeFrom = 8

func (s *Server) maxValue() int64 {
	if s.cfg.MaxValueBytes > 0 {
		return s.cfg.MaxValueBytes
	}
	return defaultMaxValue
}

func (s *Server) outputStall() time.Duration {
	if s.cfg.OutputStall > 0 {
		return s.cfg.OutputStall
	}
	return defaultOutputStall
}

// replyUnits is how many stored values the reply to op may copy: one for a
// command that answers a value, one per name for MGET and HMGET (after
// dedupe), and a whole batch's worth for a command that answers a whole hash
// or a list of keys, which so runs in a batch of its own.
func replyUnits(op command.Op) int {
	switch op := op.(type) {
	case command.Get, command.GetDel, command.GetEx, command.GetRange, command.HGet, command.Eval:
		return 1
	case command.Set:
		if op.Reply == command.ReplyOld {
			return 1
		}
	case command.MGet:
		return len(op.Keys)
	case command.HMGet:
		return len(op.Fields)
	case command.HGetAll, command.HKeys, command.HVals, command.Keys, command.Scan:
		return maxBatchUnits
	}
	return 0
}

// batchUnits is how many values (replyUnits) one batch of c's requests may
// copy before the batch is cut.
func (c *conn) batchUnits() int {
	per := c.unitBytes
	if per <= 0 {
		per = c.srv.maxValue()
	}
	return int(min(max(c.srv.maxOutput()/2/per, 1), maxBatchUnits))
}

// learn records the bytes a batch's replies took for the values it copied
// (units), so that later batches are cut by the values c really reads.
func (c *conn) learn(units int, bytes int64) {
	if units > 0 {
		c.unitBytes = max(c.unitBytes, bytes/int64(units), 1)
	}
}

// queued is the bytes of c's output not yet written.
func (c *conn) queued() int64 {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return int64(len(c.pending) + c.inflight)
}

// overLimit disconnects c, whose output would pass the limit.
func (c *conn) overLimit() {
	c.wmu.Lock()
	already := c.broken
	c.broken = true
	c.wmu.Unlock()
	if !already {
		c.srv.stats.outputDisconnects.Add(1)
		c.srv.log.Debug("disconnecting a client past the output buffer limit", "addr", c.addr, "id", c.id, "limit", c.srv.maxOutput())
	}
	c.kill()
}

// renderLimited renders replies, each in its protocol, onto out as long as
// out stays within room bytes. ok is false at the first reply that would take
// it past room: that reply is not rendered, nor any after it.
func renderLimited(out []byte, replies []resp.Value, protos []int, room int64) (_ []byte, ok bool) {
	for i := range replies {
		r := &replies[i]
		if r.Kind == noReply {
			continue
		}
		if int64(len(out))+replySize(r, protos[i]) > room {
			return out, false
		}
		out = resp.Append(out, *r, protos[i])
	}
	return out, true
}

// replySize is the number of bytes resp.Append writes for v in protocol
// proto, computed without writing them.
func replySize(v *resp.Value, proto int) int64 {
	switch v.Kind {
	case resp.KindNull, resp.KindNullArray:
		if proto >= 3 {
			return 3 // _\r\n
		}
		return 5 // $-1\r\n, *-1\r\n
	case resp.KindSimple, resp.KindError:
		return int64(len(v.Str)) + 3
	case resp.KindInt:
		return intLen(v.Int) + 3
	case resp.KindBulk:
		return bulkSize(len(v.Str))
	case resp.KindArray, resp.KindSet, resp.KindPush, resp.KindMap:
		n := int64(len(v.Elems))
		if v.Kind == resp.KindMap && proto >= 3 {
			n /= 2
		}
		size := intLen(n) + 3
		for i := range v.Elems {
			size += replySize(&v.Elems[i], proto)
		}
		return size
	case resp.KindDouble:
		s := resp.FormatDouble(v.Float)
		if proto >= 3 {
			return int64(len(s)) + 3
		}
		return bulkSize(len(s))
	case resp.KindBool:
		if proto >= 3 {
			return 4 // #t\r\n
		}
		return intLen(v.Int) + 3
	case resp.KindVerbatim:
		if proto >= 3 {
			return intLen(int64(len(v.Str)+4)) + 3 + 4 + int64(len(v.Str)) + 2
		}
		return bulkSize(len(v.Str))
	}
	return int64(len("-ERR internal: unknown reply kind\r\n"))
}

// bulkSize is the bytes of a bulk string of n bytes: $n\r\n…\r\n.
func bulkSize(n int) int64 { return intLen(int64(n)) + 3 + int64(n) + 2 }

// intLen is the length of n in decimal, its sign included.
func intLen(n int64) int64 {
	var b [20]byte
	return int64(len(strconv.AppendInt(b[:0], n, 10)))
}

// dedupe rewrites a request that names the same key (MGET) or hash field
// (HMGET) more than once to name each once, and returns for each name of the
// original its position in the rewritten reply (nil: r is unchanged). The
// rewritten request's Args are a new slice; the original's are not touched.
func dedupe(r *command.Request) []int {
	var names [][]byte
	var rebuild func(uniq [][]byte)
	switch op := r.Op.(type) {
	case command.MGet:
		names = op.Keys
		rebuild = func(uniq [][]byte) {
			r.Op = command.MGet{Keys: uniq}
			r.Args = append([][]byte{r.Args[0]}, uniq...)
		}
	case command.HMGet:
		names = op.Fields
		rebuild = func(uniq [][]byte) {
			r.Op = command.HMGet{Key: op.Key, Fields: uniq}
			r.Args = append([][]byte{r.Args[0], r.Args[1]}, uniq...)
		}
	default:
		return nil
	}
	if len(names) < dedupeFrom {
		return nil
	}
	seen := make(map[string]int, len(names))
	at := make([]int, len(names))
	var uniq [][]byte
	for i, n := range names {
		j, ok := seen[string(n)]
		if !ok {
			j = len(uniq)
			seen[string(n)] = j
			uniq = append(uniq, n)
		}
		at[i] = j
	}
	if len(uniq) == len(names) {
		return nil
	}
	rebuild(uniq)
	return at
}

// expand turns the reply to a request dedupe rewrote back into the reply to
// the original: one element per original name, sharing the bytes of the
// rewritten reply's elements. Any other reply (an error) is returned as is.
func expand(v resp.Value, at []int) resp.Value {
	if at == nil || v.Kind != resp.KindArray {
		return v
	}
	out := make([]resp.Value, len(at))
	for i, j := range at {
		if j < len(v.Elems) {
			out[i] = v.Elems[j]
		}
	}
	return resp.Array(out...)
}
