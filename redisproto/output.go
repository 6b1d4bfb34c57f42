package redisproto

import (
	"strconv"
	"time"

	"github.com/lockd/lockd/command"
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
//   - Batching. A batch's replies are rendered before any is written, so a
//     pipeline of GETs of a large value, which a client that reads must get
//     whole, is cut into batches of at most batchUnits values (replyUnits
//     counts the values a request's reply may render): half the limit's worth at the largest value the store
//     accepts (Config.MaxValueBytes), until the connection's replies have
//     shown how large its values are (conn.unitBytes, the largest per value
//     seen), and never more than maxBatchUnits. The event loop hands a
//     connection with more than that buffered to its goroutine, which
//     answers batch after batch, each written before the next is read.
//   - No copies in the store. The store's replies alias the keyspace's
//     values (resp.BulkRef; hash fields alike), so MGET k k k … or a
//     transaction of GETs costs its headers until it is rendered here.
//   - Stalls. Replies are written in chunks, each with a deadline: a client
//     that takes none of a chunk for outputStall (Config.OutputStall,
//     default 60 s, Redis's soft-limit seconds for subscribers) is
//     disconnected, so that a client that pipelines and never reads does not
//     hold its goroutine and its batch for ever.
//
// What a script builds from what it reads (Lua strings are copies) is bounded
// by the script engine's allocation budget (its dry run), not here.

// maxBatchUnits bounds the values one batch's replies may render, whatever the
// connection's values have looked like so far.
const maxBatchUnits = 32

// defaultMaxValue is Config.MaxValueBytes's default: the store's default
// largest write (raftstore.DefaultMaxWriteBytes).
const defaultMaxValue = 4 << 20

// defaultOutputStall is Config.OutputStall's default.
const defaultOutputStall = 60 * time.Second

// writeChunk is the most written with one deadline (conn.write).
const writeChunk = 256 << 10

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

// replyUnits is how many stored values the reply to op may render: one for a
// command that answers a value, one per name for MGET and HMGET, and a whole batch's worth for a command that answers a whole hash
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
// render before the batch is cut.
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
	if c.written != nil {
		c.written.Broadcast() // a waiting sender's bytes will not be written
	}
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
	case resp.KindPairs:
		size := intLen(int64(len(v.Elems))) + 3
		if proto >= 3 {
			size = intLen(int64(len(v.Elems)/2)) + 3 + int64(len(v.Elems)/2)*4 // *n, then *2 per pair
		}
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
