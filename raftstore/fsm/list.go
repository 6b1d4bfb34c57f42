package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/tidwall/btree"
)

// KindList is a list (LPUSH … BLMPOP).
const KindList Kind = 5

// list is the payload of a KindList item: its elements in a B-tree ordered by
// position, a number that only orders them (a push to the head takes the
// first position less one, a push to the tail the last plus one; gaps left by
// removals stay). The tree counts its nodes, so the element at an index is
// found in O(log n).
//
// Like every collection in the trees a stored list never changes: a write
// takes clone (the tree's lazy copy-on-write Copy, O(1)) and changes that,
// copying only the nodes it touches. So a push or pop costs O(log n), LSET
// O(log n), LINDEX O(log n), LRANGE O(log n + m) for m elements, LTRIM
// O(k log n) for the k elements it removes (or O(m log m) to rebuild the m it
// keeps, whichever is less), LINSERT O(n) to find the pivot and O(min(i, n-i)
// log n) to make room at its index i, LREM and LPOS O(n) at most; no write
// copies the whole list.
type list struct {
	tree *btree.BTreeG[lnode]
}

// lnode is one element of a list at its position. val is never changed.
type lnode struct {
	pos int64
	val []byte
}

func byPos(a, b lnode) bool { return a.pos < b.pos }

func newList() *list {
	return &list{tree: btree.NewBTreeGOptions(byPos, btree.Options{NoLocks: true})}
}

// listFrom returns a new list holding elems in order.
func listFrom(elems [][]byte) *list {
	l := newList()
	for i, e := range elems {
		l.tree.Load(lnode{pos: int64(i), val: e})
	}
	return l
}

// clone returns a copy of l that may be changed without changing l.
func (l *list) clone() *list { return &list{tree: l.tree.Copy()} }

func (l *list) len() int64 { return int64(l.tree.Len()) }

// at is the element at index i (0 <= i < len).
func (l *list) at(i int64) lnode {
	n, _ := l.tree.GetAt(int(i))
	return n
}

func (l *list) push(v []byte, left bool) {
	if l.tree.Len() == 0 {
		l.tree.Set(lnode{pos: 0, val: v})
		return
	}
	if left {
		m, _ := l.tree.Min()
		l.tree.Set(lnode{pos: m.pos - 1, val: v})
		return
	}
	m, _ := l.tree.Max()
	l.tree.Set(lnode{pos: m.pos + 1, val: v})
}

func (l *list) pop(left bool) []byte {
	var n lnode
	if left {
		n, _ = l.tree.PopMin()
	} else {
		n, _ = l.tree.PopMax()
	}
	return n.val
}

// each calls f with the elements from index from on (their index and node),
// towards the tail (or, with back, towards the head), until f returns false.
func (l *list) each(from int64, back bool, f func(i int64, n lnode) bool) {
	if from < 0 || from >= l.len() {
		return
	}
	i := from
	pivot := l.at(from)
	iter := func(n lnode) bool {
		ok := f(i, n)
		if back {
			i--
		} else {
			i++
		}
		return ok
	}
	if back {
		l.tree.Descend(pivot, iter)
	} else {
		l.tree.Ascend(pivot, iter)
	}
}

// insertAt puts v at index i (0 <= i <= len), the elements from i on moving
// one index up.
func (l *list) insertAt(i int64, v []byte) {
	n := l.len()
	switch {
	case i == 0:
		l.push(v, true)
		return
	case i == n:
		l.push(v, false)
		return
	}
	prev, next := l.at(i-1), l.at(i)
	if next.pos-prev.pos > 1 { // a gap: room without moving anything
		l.tree.Set(lnode{pos: prev.pos + (next.pos-prev.pos)/2, val: v})
		return
	}
	// Move the shorter side one position outwards.
	if i <= n-i {
		var side []lnode
		l.tree.Ascend(lnode{pos: -1 << 63}, func(x lnode) bool {
			if x.pos > prev.pos {
				return false
			}
			side = append(side, x)
			return true
		})
		for _, x := range side { // ascending: each moves onto a free position
			l.tree.Delete(x)
			l.tree.Set(lnode{pos: x.pos - 1, val: x.val})
		}
		l.tree.Set(lnode{pos: prev.pos, val: v})
		return
	}
	var side []lnode
	l.tree.Descend(lnode{pos: 1<<63 - 1}, func(x lnode) bool {
		if x.pos < next.pos {
			return false
		}
		side = append(side, x)
		return true
	})
	for _, x := range side { // descending
		l.tree.Delete(x)
		l.tree.Set(lnode{pos: x.pos + 1, val: x.val})
	}
	l.tree.Set(lnode{pos: next.pos, val: v})
}

// rangeOf turns LRANGE/LTRIM indexes into [start, end] within a list of n
// elements, as Redis does; ok is false for an empty range.
func rangeOf(start, end, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		return 0, 0, false
	}
	if end >= n {
		end = n - 1
	}
	return start, end, true
}

// elems returns the elements of [start, end] (valid indexes) as bulk replies,
// reversed with rev.
func (l *list) elems(start, end int64, rev bool) []resp.Value {
	out := make([]resp.Value, 0, end-start+1)
	from, back := start, false
	if rev {
		from, back = end, true
	}
	l.each(from, back, func(i int64, n lnode) bool {
		out = append(out, resp.Bulk(n.val))
		return int64(len(out)) < end-start+1
	})
	return out
}

// listOf returns the live list at key: (nil, nil) when absent, an error reply
// when the key holds another type.
func (k *Keyspace) listOf(key []byte, now int64) (*item, *resp.Value) {
	it := k.lookup(key, now)
	if it == nil {
		return nil, nil
	}
	if it.kind() != KindList {
		return nil, &wrongType
	}
	return it, nil
}

// storeList stores l (a clone, changed) under key, keeping the old item's
// TTL; an empty list deletes the key, as in Redis. old is the item it
// replaces, nil for a new list.
func (k *Keyspace) storeList(key []byte, old *item, l *list, c Ctx) {
	if l.len() == 0 {
		if old != nil {
			k.remove(old)
		}
		return
	}
	it := newItem(key, "")
	it.coll, it.token = &collection{list: l}, c.Index
	if old != nil {
		it.deadline = old.deadline
	}
	k.putItem(it) // signals blocked pops (bpop.go)
}

// editList returns a changeable copy of the list at key (a new empty one when
// it is absent).
func editList(it *item) *list {
	if it == nil {
		return newList()
	}
	return it.coll.list.clone()
}

// listRead answers LLEN, LRANGE, LINDEX and LPOS on the list at the op's key.
func (k *Keyspace) listRead(op command.ListOp, c Ctx) resp.Value {
	it, errv := k.listOf(op.ListKey(), c.Now)
	if errv != nil {
		return *errv
	}
	var l *list // nil when the key is absent
	if it != nil {
		l = it.coll.list
	}
	switch op := op.(type) {
	case command.LLen:
		if l == nil {
			return resp.Zero
		}
		return resp.Int(l.len())
	case command.LRange:
		if l == nil {
			return resp.Array()
		}
		s, e, ok := rangeOf(op.Start, op.Stop, l.len())
		if !ok {
			return resp.Array()
		}
		return resp.Array(l.elems(s, e, false)...)
	case command.LIndex:
		if l == nil {
			return resp.Nil
		}
		i, ok := command.ParseInt(op.Index)
		if !ok {
			return command.ErrNotInt.Reply()
		}
		if i < 0 {
			i += l.len()
		}
		if i < 0 || i >= l.len() {
			return resp.Nil
		}
		return resp.Bulk(l.at(i).val)
	case command.LPos:
		return lpos(l, op)
	}
	return resp.Error("ERR internal: not a list read")
}

// LPOS key element [RANK r] [COUNT n] [MAXLEN m] on l (nil when the key is
// absent).
func lpos(l *list, op command.LPos) resp.Value {
	if l == nil {
		if op.Count != -1 {
			return resp.Array()
		}
		return resp.Nil
	}
	n := l.len()
	rank, back, from := op.Rank, false, int64(0)
	if rank < 0 {
		rank, back, from = -rank, true, n-1
	}
	var out []resp.Value
	matches, scanned, found := int64(0), int64(0), int64(-1)
	l.each(from, back, func(i int64, n lnode) bool {
		if op.MaxLen != 0 && scanned >= op.MaxLen {
			return false
		}
		scanned++
		if !bytes.Equal(n.val, op.Elem) {
			return true
		}
		matches++
		if matches < rank {
			return true
		}
		if op.Count == -1 {
			found = i
			return false
		}
		out = append(out, resp.Int(i))
		return op.Count == 0 || matches-rank+1 < op.Count
	})
	if op.Count != -1 {
		return resp.Array(out...)
	}
	if found < 0 {
		return resp.Nil
	}
	return resp.Int(found)
}

// listWrite applies the list writes on one key: pushes, pops, LSET, LREM,
// LTRIM and LINSERT. A changed list is a clone (storeList).
func (k *Keyspace) listWrite(op command.ListOp, c Ctx) resp.Value {
	if v, off := k.collectionsOff(); off {
		return v // watch.go
	}
	key := op.ListKey()
	it, errv := k.listOf(key, c.Now)
	if errv != nil {
		return *errv
	}
	switch op := op.(type) {
	case command.ListPush:
		if it == nil && op.X {
			return resp.Zero
		}
		l := editList(it)
		for _, e := range op.Elems {
			l.push(clone(e), op.Left)
		}
		k.storeList(key, it, l, c)
		return resp.Int(l.len())
	case command.ListPop:
		if it == nil {
			if op.HasCount {
				return resp.NilArray
			}
			return resp.Nil
		}
		if op.HasCount && op.Count == 0 {
			return resp.Array()
		}
		l := it.coll.list.clone()
		if !op.HasCount {
			v := l.pop(op.Left)
			k.storeList(key, it, l, c)
			return resp.Bulk(v)
		}
		out := popN(l, op.Left, op.Count)
		k.storeList(key, it, l, c)
		return resp.Array(out...)
	case command.LSet:
		if it == nil {
			return resp.Error("ERR no such key") // before the index, as in Redis
		}
		i, ok := command.ParseInt(op.Index)
		if !ok {
			return command.ErrNotInt.Reply()
		}
		l := it.coll.list.clone()
		if i < 0 {
			i += l.len()
		}
		if i < 0 || i >= l.len() {
			return resp.Error("ERR index out of range")
		}
		n := l.at(i)
		l.tree.Set(lnode{pos: n.pos, val: clone(op.Elem)})
		k.storeList(key, it, l, c)
		return resp.OK
	case command.LRem:
		if it == nil {
			return resp.Zero
		}
		src := it.coll.list
		var doomed []lnode
		want := op.Count
		back, from := false, int64(0)
		if want < 0 {
			want, back, from = -want, true, src.len()-1
		}
		src.each(from, back, func(i int64, n lnode) bool {
			if bytes.Equal(n.val, op.Elem) {
				doomed = append(doomed, n)
			}
			return want == 0 || int64(len(doomed)) < want
		})
		if len(doomed) == 0 {
			return resp.Zero
		}
		l := src.clone()
		for _, n := range doomed {
			l.tree.Delete(n)
		}
		k.storeList(key, it, l, c)
		return resp.Int(int64(len(doomed)))
	case command.LTrim:
		if it == nil {
			return resp.OK
		}
		src := it.coll.list
		n := src.len()
		s, e, ok := rangeOf(op.Start, op.Stop, n)
		if !ok {
			k.storeList(key, it, newList(), c)
			return resp.OK
		}
		var l *list
		if keep := e - s + 1; keep < n-keep {
			l = newList()
			src.each(s, false, func(i int64, n lnode) bool {
				l.tree.Load(lnode{pos: i, val: n.val})
				return i < e
			})
		} else {
			l = src.clone()
			for j := int64(0); j < s; j++ {
				l.tree.PopMin()
			}
			for j := e + 1; j < n; j++ {
				l.tree.PopMax()
			}
		}
		k.storeList(key, it, l, c)
		return resp.OK
	case command.LInsert:
		if it == nil {
			return resp.Zero
		}
		src := it.coll.list
		at := int64(-1)
		src.each(0, false, func(i int64, n lnode) bool {
			if bytes.Equal(n.val, op.Pivot) {
				at = i
				return false
			}
			return true
		})
		if at < 0 {
			return resp.Int(-1)
		}
		if !op.Before {
			at++
		}
		l := src.clone()
		l.insertAt(at, clone(op.Elem))
		k.storeList(key, it, l, c)
		return resp.Int(l.len())
	}
	return resp.Error("ERR internal: not a list write")
}

// popWrite applies the pops that reach past one key: LMOVE and RPOPLPUSH,
// LMPOP, the blocking pops (of lists and sorted sets, bpop.go), POP.CANCEL
// and POP.RENEW.
func (k *Keyspace) popWrite(op command.Op, c Ctx) resp.Value {
	if v, off := k.collectionsOff(); off {
		return v // watch.go
	}
	switch op := op.(type) {
	case command.LMove:
		src, errv := k.listOf(op.Src, c.Now)
		if errv != nil {
			return *errv
		}
		if src == nil {
			return resp.Nil
		}
		return k.lmove(op.Src, op.Dst, op.FromLeft, op.ToLeft, c)
	case command.LMPop:
		for _, key := range op.Keys {
			it, errv := k.listOf(key, c.Now)
			if errv != nil {
				return *errv
			}
			if it == nil {
				continue
			}
			l := it.coll.list.clone()
			out := popN(l, op.Left, op.Count)
			k.storeList(key, it, l, c)
			return resp.Array(resp.Bulk(clone(key)), resp.Array(out...))
		}
		return resp.NilArray
	case command.BlockingPop:
		return k.blockingPop(op, c)
	case command.PopCancel:
		return k.popCancel(op, c)
	case command.PopRenew:
		return k.popRenew(op, c)
	}
	return resp.Error("ERR internal: not a pop")
}

// popN pops up to n elements from one end of l, in popping order.
func popN(l *list, left bool, n int64) []resp.Value {
	n = min(n, l.len())
	out := make([]resp.Value, 0, n)
	for ; n > 0; n-- {
		out = append(out, resp.Bulk(l.pop(left)))
	}
	return out
}

// lmove moves one element from the list at src (present, a list) to dst, as
// LMOVE does: WRONGTYPE, changing nothing, when dst holds another type.
func (k *Keyspace) lmove(srcKey, dstKey []byte, fromLeft, toLeft bool, c Ctx) resp.Value {
	dst, errv := k.listOf(dstKey, c.Now)
	if errv != nil {
		return *errv
	}
	src, _ := k.listOf(srcKey, c.Now)
	sl := src.coll.list.clone()
	v := sl.pop(fromLeft)
	if bytes.Equal(srcKey, dstKey) {
		sl.push(v, toLeft)
		k.storeList(srcKey, src, sl, c)
		return resp.Bulk(v)
	}
	k.storeList(srcKey, src, sl, c)
	dl := editList(dst)
	dl.push(v, toLeft)
	k.storeList(dstKey, dst, dl, c)
	return resp.Bulk(v)
}

// appendList encodes a list for a snapshot: its length, then each element
// from the head (positions are not kept: a restored list numbers them from 0).
func appendList(buf []byte, l *list) []byte {
	buf = binary.AppendUvarint(buf, uint64(l.len()))
	l.tree.Scan(func(n lnode) bool {
		buf = binary.AppendUvarint(buf, uint64(len(n.val)))
		buf = append(buf, n.val...)
		return true
	})
	return buf
}

// readList reads what appendList wrote: a non-empty list.
func readList(br *bufio.Reader) (*list, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > 1<<32 {
		return nil, errors.New("bad list length")
	}
	l := newList()
	for i := uint64(0); i < n; i++ {
		v, err := readBytes(br)
		if err != nil {
			return nil, err
		}
		l.tree.Load(lnode{pos: int64(i), val: v})
	}
	return l, nil
}
