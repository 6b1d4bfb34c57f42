package fsm

import (
	"bytes"
	"math"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// hashOf returns the live hash at key: (nil, nil) when absent, an error reply when
// the key holds another type.
func (k *Keyspace) hashOf(key []byte, now int64) (*item, *resp.Value) {
	it := k.lookup(key, now)
	if it == nil {
		return nil, nil
	}
	if it.kind() != KindHash {
		return nil, &wrongType
	}
	return it, nil
}

func findField(fields []field, name []byte) int {
	for i, f := range fields {
		if bytes.Equal(f.name, name) {
			return i
		}
	}
	return -1
}

// hashRead answers HGET, HMGET, HGETALL, HEXISTS, HLEN, HKEYS and HVALS on the
// hash at key.
func (k *Keyspace) hashRead(op command.HashOp, c Ctx) resp.Value {
	key := op.HashKey()
	it, errv := k.hashOf(key, c.Now)
	if errv != nil {
		return *errv
	}
	var fields []field
	if it != nil {
		fields = it.coll.fields
	}
	switch op := op.(type) {
	case command.HGet:
		if i := findField(fields, op.Field); i >= 0 {
			return resp.Bulk(fields[i].val)
		}
		return resp.Nil
	case command.HMGet:
		out := make([]resp.Value, len(op.Fields))
		for j, f := range op.Fields {
			out[j] = resp.Nil
			if i := findField(fields, f); i >= 0 {
				out[j] = resp.Bulk(fields[i].val)
			}
		}
		return resp.Array(out...)
	case command.HGetAll:
		out := make([]resp.Value, 0, 2*len(fields))
		for _, f := range fields {
			out = append(out, resp.Bulk(f.name), resp.Bulk(f.val))
		}
		return resp.Map(out...)
	case command.HExists:
		if findField(fields, op.Field) >= 0 {
			return resp.One
		}
		return resp.Zero
	case command.HLen:
		return resp.Int(int64(len(fields)))
	case command.HKeys, command.HVals:
		_, vals := op.(command.HVals)
		out := make([]resp.Value, len(fields))
		for i, f := range fields {
			if vals {
				out[i] = resp.Bulk(f.val)
			} else {
				out[i] = resp.Bulk(f.name)
			}
		}
		return resp.Array(out...)
	}
	return resp.Error("ERR internal: not a hash read")
}

// hashWrite applies HSET/HSETNX/HMSET, HDEL and HINCRBY to the hash at key. The
// hash is copied before it changes: items in the trees are immutable.
func (k *Keyspace) hashWrite(op command.HashOp, c Ctx) resp.Value {
	key := op.HashKey()
	it, errv := k.hashOf(key, c.Now)
	if errv != nil {
		return *errv
	}
	var fields []field
	var deadline int64
	if it != nil {
		fields = append([]field(nil), it.coll.fields...)
		deadline = it.deadline
	}
	store := func(reply resp.Value) resp.Value {
		if len(fields) == 0 {
			if it != nil {
				k.remove(it)
			}
			return reply
		}
		it := newItem(key, "")
		it.coll, it.deadline, it.token = &collection{fields: fields}, deadline, c.Index
		k.putItem(it)
		return reply
	}
	switch op := op.(type) {
	case command.HSet:
		added := int64(0)
		for i := 0; i < len(op.Pairs); i += 2 {
			name, val := clone(op.Pairs[i]), clone(op.Pairs[i+1])
			if j := findField(fields, name); j >= 0 {
				if op.NX {
					return resp.Zero
				}
				fields[j].val = val
			} else {
				fields = append(fields, field{name, val})
				added++
			}
		}
		switch {
		case op.ReplyOK:
			return store(resp.OK)
		case op.NX:
			return store(resp.One)
		}
		return store(resp.Int(added))
	case command.HDel:
		n := int64(0)
		for _, f := range op.Fields {
			if j := findField(fields, f); j >= 0 {
				fields = append(fields[:j], fields[j+1:]...)
				n++
			}
		}
		if n == 0 {
			return resp.Zero
		}
		return store(resp.Int(n))
	case command.HIncrBy:
		var cur int64
		j := findField(fields, op.Field)
		if j >= 0 {
			v, ok := command.ParseInt(fields[j].val)
			if !ok {
				return resp.Error("ERR hash value is not an integer")
			}
			cur = v
		}
		if (op.By < 0 && cur < 0 && op.By < math.MinInt64-cur) || (op.By > 0 && cur > 0 && op.By > math.MaxInt64-cur) {
			return resp.Error(string(command.ErrOverflow))
		}
		cur += op.By
		val := strconv.AppendInt(nil, cur, 10)
		if j >= 0 {
			fields[j].val = val
		} else {
			fields = append(fields, field{clone(op.Field), val})
		}
		return store(resp.Int(cur))
	}
	return resp.Error("ERR internal: not a hash write")
}
