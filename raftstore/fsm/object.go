package fsm

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// OBJECT and MEMORY (command/object.go): what Redis 7.0.15 would report about
// a value as lockd holds it. Redis's answers come from its own data
// structures (an encoding, a reference count, an access clock, allocator
// sizes); lockd keeps none of them, so each answer is derived from the value's
// current contents alone, deterministically (docs/compatibility.md lists where
// that differs from Redis, whose encoding also depends on the value's history).

// Redis 7.0.15's defaults that decide an encoding.
const (
	hashListpackEntries = 512  // hash-max-listpack-entries
	hashListpackValue   = 64   // hash-max-listpack-value
	embstrLimit         = 44   // OBJ_ENCODING_EMBSTR_SIZE_LIMIT
	sharedIntegers      = 9999 // the largest of OBJ_SHARED_INTEGERS (0..9999)
	// sharedRefCount is OBJECT REFCOUNT of a shared object (OBJ_SHARED_REFCOUNT).
	sharedRefCount = math.MaxInt32
	listNodeBytes  = 8192 // list-max-listpack-size -2: a quicklist node's listpack
)

// errNoLFU is OBJECT FREQ's error under any maxmemory-policy but an LFU one:
// lockd never evicts, so it has no access frequency.
var errNoLFU = resp.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. " +
	"Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")

// object answers OBJECT: HELP, or a subcommand about the live key op.Key (nil
// when it is absent, as Redis).
func (k *Keyspace) object(op command.Object, c Ctx) resp.Value {
	if op.Sub == command.ObjectHelp {
		return helpReply("OBJECT",
			"ENCODING <key>",
			"    Return the kind of internal representation used in order to store the value",
			"    associated with a <key>.",
			"FREQ <key>",
			"    Return the access frequency index of the <key>. The returned integer is",
			"    proportional to the logarithm of the recent access frequency of the key.",
			"IDLETIME <key>",
			"    Return the idle time of the <key>, that is the approximated number of",
			"    seconds elapsed since the last access to the key.",
			"REFCOUNT <key>",
			"    Return the number of references of the value associated with the specified",
			"    <key>.")
	}
	it := k.lookup(op.Key, c.Now)
	if it == nil {
		return resp.Nil
	}
	switch op.Sub {
	case command.ObjectEncoding:
		return resp.BulkString(encoding(it))
	case command.ObjectFreq:
		return errNoLFU
	case command.ObjectIdleTime:
		// lockd keeps no access time: every key reads as just used, so
		// that a tool looking for idle keys finds none to remove.
		return resp.Zero
	default: // command.ObjectRefCount
		if encoding(it) == "int" {
			if n, _ := command.ParseInt([]byte(it.val())); n >= 0 && n <= sharedIntegers {
				return resp.Int(sharedRefCount) // one of Redis's shared integers
			}
		}
		return resp.One
	}
}

// encoding is OBJECT ENCODING of it: the encoding Redis 7.0.15 gives a value
// with these contents when it is written whole (SET, HSET, ZADD, RPUSH …);
// "lock" for lockd's lock record.
func encoding(it *item) string {
	switch it.kind() {
	case KindString:
		v := it.val()
		if len(v) <= 20 {
			if _, ok := command.ParseInt([]byte(v)); ok {
				return "int"
			}
		}
		if len(v) <= embstrLimit {
			return "embstr"
		}
		return "raw"
	case KindHash:
		if hashSmall(it.coll.fields) {
			return "listpack"
		}
		return "hashtable"
	case KindZSet:
		if it.coll.zset.small() {
			return "listpack"
		}
		return "skiplist"
	case KindList:
		return "quicklist"
	}
	return "lock"
}

// hashSmall reports whether Redis would hold a hash of these fields as a
// listpack.
func hashSmall(fields []field) bool {
	if len(fields) > hashListpackEntries {
		return false
	}
	for _, f := range fields {
		if len(f.name) > hashListpackValue || len(f.val) > hashListpackValue {
			return false
		}
	}
	return true
}

// memory answers MEMORY's subcommands.
func (k *Keyspace) memory(op command.Memory, c Ctx) resp.Value {
	switch op.Sub {
	case command.MemoryUsage:
		it := k.lookup(op.Key, c.Now)
		if it == nil {
			return resp.Nil
		}
		return resp.Int(memoryUsage(it, op.Samples))
	case command.MemoryStats:
		return k.memoryStats(c)
	case command.MemoryDoctor:
		return resp.Verbatim("Hi Sam, I can't find any memory issue in your instance. " +
			"I can only account for what occurs on this base.\n")
	case command.MemoryMallocStats:
		return resp.BulkString("Stats not supported for the current allocator")
	case command.MemoryPurge:
		return resp.OK
	}
	return helpReply("MEMORY",
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).")
}

// memoryStats is MEMORY STATS: Redis's fields in Redis's order. lockd does
// not measure its memory per group, so every byte figure is 0 and every
// ratio 1; keys.count is the live keys of the group that answers.
func (k *Keyspace) memoryStats(c Ctx) resp.Value {
	keys := k.liveCount(c.Now)
	var kv []resp.Value
	num := func(name string, v int64) { kv = append(kv, resp.BulkString(name), resp.Int(v)) }
	ratio := func(name string, v float64) { kv = append(kv, resp.BulkString(name), resp.Double(v)) }
	for _, n := range []string{"peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
		"clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches", "functions.caches"} {
		num(n, 0)
	}
	if keys > 0 {
		kv = append(kv, resp.BulkString("db.0"), resp.Map(
			resp.BulkString("overhead.hashtable.main"), resp.Zero,
			resp.BulkString("overhead.hashtable.expires"), resp.Zero,
			resp.BulkString("overhead.hashtable.slot-to-keys"), resp.Zero))
	}
	num("overhead.total", 0)
	num("keys.count", int64(keys))
	num("keys.bytes-per-key", 0)
	num("dataset.bytes", 0)
	ratio("dataset.percentage", 0)
	ratio("peak.percentage", 0)
	num("allocator.allocated", 0)
	num("allocator.active", 0)
	num("allocator.resident", 0)
	ratio("allocator-fragmentation.ratio", 1)
	num("allocator-fragmentation.bytes", 0)
	ratio("allocator-rss.ratio", 1)
	num("allocator-rss.bytes", 0)
	ratio("rss-overhead.ratio", 1)
	num("rss-overhead.bytes", 0)
	ratio("fragmentation", 1)
	num("fragmentation.bytes", 0)
	return resp.Map(kv...)
}

// helpReply is Redis's addReplyHelp: the usage line, lines, and HELP's own.
func helpReply(name string, lines ...string) resp.Value {
	out := make([]resp.Value, 0, len(lines)+3)
	out = append(out, resp.Simple(name+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"))
	for _, l := range lines {
		out = append(out, resp.Simple(l))
	}
	return resp.Array(append(out, resp.Simple("HELP"), resp.Simple("    Prints this help."))...)
}

// The sizes of Redis 7.0's structures on a 64-bit build, for MEMORY USAGE.
const (
	sizeRobj          = 16 // robj
	sizeDictEntry     = 24
	sizeDict          = 56
	sizeQuicklist     = 40
	sizeQuicklistNode = 40
	sizeZSet          = 16 // zset: dict pointer, skiplist pointer
	sizeZSkiplist     = 32
	sizeZSkipHeader   = 24 + 32*16 // a node with ZSKIPLIST_MAXLEVEL levels
	// sizeZSkipNode is a skiplist node's expected allocation: a node of L
	// levels (24 + 16·L bytes) has L with probability 3/4 · (1/4)^(L-1),
	// so on average 48·3/4 + 64·3/16 + 80·3/64 + … ≈ 53 bytes.
	sizeZSkipNode = 53
)

// memoryUsage is MEMORY USAGE's estimate for it: what Redis 7.0.15 (with
// jemalloc) would use for the key and a value with these contents in the
// encoding OBJECT ENCODING reports, computed as Redis's objectComputeSize
// does: a collection's first samples elements (or quicklist nodes) are
// measured and their average scaled to the whole. A lock record, which Redis
// lacks, is estimated as a small record per holder and waiter.
func memoryUsage(it *item, samples int64) int64 {
	size := sdsAlloc(len(it.key())) + sizeDictEntry
	switch it.kind() {
	case KindString:
		switch v := it.val(); encoding(it) {
		case "int":
			size += sizeRobj
		case "embstr":
			size += mallocSize(sizeRobj + 3 + len(v) + 1)
		default:
			size += sizeRobj + sdsAlloc(len(v))
		}
	case KindHash:
		size += hashUsage(it.coll.fields, samples)
	case KindZSet:
		size += zsetUsage(it.coll.zset, samples)
	case KindList:
		size += listUsage(it.coll.list, samples)
	default:
		size += sizeRobj + mallocSize(64)
		for h := range it.holders {
			size += mallocSize(len(h.owner) + 48)
		}
		for _, w := range it.lock.waiters() {
			size += mallocSize(len(w.owner) + 64)
		}
	}
	return int64(size)
}

// scaled is Redis's extrapolation: the sampled elements' size averaged and
// multiplied by the collection's size.
func scaled(sampled, n, total int) int {
	if n == 0 {
		return 0
	}
	return int(float64(sampled) / float64(n) * float64(total))
}

// hashUsage is a hash's part of MEMORY USAGE: its listpack, or its dict
// with the first samples fields measured.
func hashUsage(fields []field, samples int64) int {
	if hashSmall(fields) {
		lp := lpEmpty
		for _, f := range fields {
			lp += lpEntry(f.name) + lpEntry(f.val)
		}
		return sizeRobj + mallocSize(lp)
	}
	size := sizeRobj + sizeDict + 8*dictSlots(len(fields))
	ele, n := 0, 0
	for _, f := range fields {
		if int64(n) >= samples {
			break
		}
		ele += sdsAlloc(len(f.name)) + sdsAlloc(len(f.val)) + sizeDictEntry
		n++
	}
	return size + scaled(ele, n, len(fields))
}

// zsetUsage is a sorted set's part of MEMORY USAGE: its listpack, or its
// skiplist and dict with the first samples members (by score) measured.
func zsetUsage(z *zset, samples int64) int {
	if z.small() {
		lp := lpEmpty
		z.byScore.Scan(func(m zmember) bool {
			lp += lpEntry([]byte(m.name)) + lpEntry(scoreBytes(m.score))
			return true
		})
		return sizeRobj + mallocSize(lp)
	}
	size := sizeRobj + sizeZSet + sizeZSkiplist + sizeDict + 8*dictSlots(z.len()) + mallocSize(sizeZSkipHeader)
	ele, n := 0, 0
	z.byScore.Scan(func(m zmember) bool {
		if int64(n) >= samples {
			return false
		}
		ele += sdsAlloc(len(m.name)) + sizeDictEntry + sizeZSkipNode
		n++
		return true
	})
	return size + scaled(ele, n, z.len())
}

// listUsage packs the list's elements into quicklist nodes as Redis does
// (a node takes elements while its listpack stays within 8 KB), measures the
// first samples nodes and scales them to the number of nodes: exact when
// every node was measured, else estimated from the list's bytes.
func listUsage(l *list, samples int64) int {
	size := sizeRobj + sizeQuicklist
	ele, nodes, entries := 0, 0, 0
	lp, inNode := lpEmpty, 0
	closeNode := func() {
		ele += sizeQuicklistNode + mallocSize(lp)
		entries += lp - lpEmpty
		nodes++
		lp, inNode = lpEmpty, 0
	}
	done := false
	l.tree.Scan(func(n lnode) bool {
		if inNode > 0 && lp+len(n.val)+lpOverhead(len(n.val)) > listNodeBytes {
			closeNode()
			if int64(nodes) >= samples {
				done = true
				return false
			}
		}
		lp += lpEntry(n.val)
		inNode++
		return true
	})
	if !done && inNode > 0 {
		closeNode()
	}
	total := nodes
	if done {
		// The nodes hold about the same bytes each: the list's bytes,
		// from the average entry of elements spread over all of it,
		// divided by the sampled nodes' average.
		perNode := float64(entries) / float64(nodes)
		spread, k := 0, min(l.len(), listSpread)
		for i := int64(0); i < k; i++ {
			spread += lpEntry(l.at(i * l.len() / k).val)
		}
		total = int(math.Ceil(float64(spread) / float64(k) * float64(l.len()) / perNode))
	}
	return size + scaled(ele, nodes, total)
}

// listSpread is how many elements, spread over a long list, MEMORY USAGE
// measures to scale its sampled nodes to the list.
const listSpread = 100

// lpOverhead is what Redis's quicklist counts for an element of size sz
// besides its bytes when it decides whether the element fits a node.
func lpOverhead(sz int) int {
	o := 1
	if sz >= 254 {
		o = 5
	}
	switch {
	case sz < 64:
		o++
	case sz < 16384:
		o += 2
	default:
		o += 5
	}
	return o
}

// scoreBytes is a sorted-set score as a listpack holds it (Redis's
// d2string: an integral score as an integer).
func scoreBytes(f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// lpEmpty is an empty listpack's size: its header and end byte.
const lpEmpty = 6 + 1

// lpEntry is the size of one listpack entry holding v: an integer as an
// integer (1 to 9 bytes), else a string with its length, plus the back
// length.
func lpEntry(v []byte) int {
	var enc int
	if n, ok := command.ParseInt(v); ok {
		switch {
		case n >= 0 && n <= 127:
			enc = 1
		case n >= -4096 && n <= 4095:
			enc = 2
		case n >= -32768 && n <= 32767:
			enc = 3
		case n >= -8388608 && n <= 8388607:
			enc = 4
		case n >= math.MinInt32 && n <= math.MaxInt32:
			enc = 5
		default:
			enc = 9
		}
	} else {
		switch l := len(v); {
		case l < 64:
			enc = 1 + l
		case l < 4096:
			enc = 2 + l
		default:
			enc = 5 + l
		}
	}
	switch {
	case enc <= 127:
		return enc + 1
	case enc < 16383:
		return enc + 2
	case enc < 2097151:
		return enc + 3
	case enc < 268435455:
		return enc + 4
	}
	return enc + 5
}

// dictSlots is the size of a Redis dict's table holding n entries: the
// power of two at least n, at least 4.
func dictSlots(n int) int {
	if n <= 4 {
		return 4
	}
	return 1 << bits.Len(uint(n-1))
}

// sdsAlloc is the allocation of an sds string of length n as sdsnewlen
// makes it: the smallest header that holds n, the bytes and a NUL, rounded
// to the allocator's size class.
func sdsAlloc(n int) int {
	hdr := 17
	switch {
	case n < 1<<5:
		hdr = 1
	case n < 1<<8:
		hdr = 3
	case n < 1<<16:
		hdr = 5
	case n < 1<<32:
		hdr = 9
	}
	return mallocSize(hdr + n + 1)
}

// mallocSize is jemalloc's size class for a request of n bytes: 8, then
// multiples of 16 up to 128, then four classes per power of two.
func mallocSize(n int) int {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	}
	spacing := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + spacing - 1) &^ (spacing - 1)
}
