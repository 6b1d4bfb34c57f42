package lua

import (
	"strconv"
	"strings"

	"github.com/lockd/lockd/resp"
)

// fakeHost is a map-backed keyspace answering the few commands the tests
// use, with Redis 7.0's replies and error texts. It records every call.
type fakeHost struct {
	strs  map[string]string
	hash  map[string][][2]string
	sets  map[string][]string
	zsets map[string]map[string]float64
	calls [][]string
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		strs:  map[string]string{},
		hash:  map[string][][2]string{},
		sets:  map[string][]string{},
		zsets: map[string]map[string]float64{},
	}
}

var wrongType = resp.Error("WRONGTYPE Operation against a key holding the wrong kind of value")

func (h *fakeHost) exists(k string) bool {
	_, a := h.strs[k]
	_, b := h.hash[k]
	_, c := h.sets[k]
	_, d := h.zsets[k]
	return a || b || c || d
}

func (h *fakeHost) Call(args [][]byte) resp.Value {
	a := make([]string, len(args))
	for i, b := range args {
		a[i] = string(b)
	}
	h.calls = append(h.calls, a)
	arity := map[string]int{"ping": -1, "get": 2, "set": -3, "del": -2, "incr": 2, "hset": -4, "hgetall": 2, "sadd": -3, "smembers": 2, "zadd": -4, "zscore": 3, "echo": 2}
	name := strings.ToLower(a[0])
	ar, ok := arity[name]
	if !ok {
		return resp.Error(ErrUnknownCommand)
	}
	if (ar > 0 && len(a) != ar) || (ar < 0 && len(a) < -ar) {
		return resp.Error(ErrWrongArity)
	}
	switch name {
	case "ping":
		if len(a) > 1 {
			return resp.BulkString(a[1])
		}
		return resp.Simple("PONG")
	case "echo":
		return resp.BulkString(a[1])
	case "get":
		if v, ok := h.strs[a[1]]; ok {
			return resp.BulkString(v)
		}
		if h.exists(a[1]) {
			return wrongType
		}
		return resp.Nil
	case "set":
		if len(a) != 3 {
			return resp.Error("ERR syntax error")
		}
		h.del(a[1])
		h.strs[a[1]] = a[2]
		return resp.OK
	case "del":
		n := 0
		for _, k := range a[1:] {
			if h.exists(k) {
				h.del(k)
				n++
			}
		}
		return resp.Int(int64(n))
	case "incr":
		if h.exists(a[1]) {
			if _, ok := h.strs[a[1]]; !ok {
				return wrongType
			}
		}
		n, err := strconv.ParseInt(h.strsOr(a[1], "0"), 10, 64)
		if err != nil {
			return resp.Error("ERR value is not an integer or out of range")
		}
		n++
		h.strs[a[1]] = strconv.FormatInt(n, 10)
		return resp.Int(n)
	case "hset":
		if len(a)%2 != 0 {
			return resp.Error("ERR wrong number of arguments for 'hset' command")
		}
		if h.exists(a[1]) && h.hash[a[1]] == nil {
			return wrongType
		}
		added := 0
		for i := 2; i+1 < len(a); i += 2 {
			found := false
			for j, fv := range h.hash[a[1]] {
				if fv[0] == a[i] {
					h.hash[a[1]][j][1] = a[i+1]
					found = true
				}
			}
			if !found {
				h.hash[a[1]] = append(h.hash[a[1]], [2]string{a[i], a[i+1]})
				added++
			}
		}
		return resp.Int(int64(added))
	case "hgetall":
		if h.exists(a[1]) && h.hash[a[1]] == nil {
			return wrongType
		}
		var kv []resp.Value
		for _, fv := range h.hash[a[1]] {
			kv = append(kv, resp.BulkString(fv[0]), resp.BulkString(fv[1]))
		}
		return resp.Map(kv...)
	case "sadd":
		n := 0
		for _, m := range a[2:] {
			found := false
			for _, x := range h.sets[a[1]] {
				found = found || x == m
			}
			if !found {
				h.sets[a[1]] = append(h.sets[a[1]], m)
				n++
			}
		}
		return resp.Int(int64(n))
	case "smembers":
		var el []resp.Value
		for _, m := range h.sets[a[1]] {
			el = append(el, resp.BulkString(m))
		}
		return resp.Value{Kind: resp.KindSet, Elems: el}
	case "zadd":
		if h.zsets[a[1]] == nil {
			h.zsets[a[1]] = map[string]float64{}
		}
		n := 0
		for i := 2; i+1 < len(a); i += 2 {
			f, _ := strconv.ParseFloat(a[i], 64)
			if _, ok := h.zsets[a[1]][a[i+1]]; !ok {
				n++
			}
			h.zsets[a[1]][a[i+1]] = f
		}
		return resp.Int(int64(n))
	case "zscore":
		if f, ok := h.zsets[a[1]][a[2]]; ok {
			return resp.Double(f)
		}
		return resp.Nil
	}
	return resp.Error(ErrUnknownCommand)
}

func (h *fakeHost) strsOr(k, def string) string {
	if v, ok := h.strs[k]; ok {
		return v
	}
	return def
}

func (h *fakeHost) del(k string) {
	delete(h.strs, k)
	delete(h.hash, k)
	delete(h.sets, k)
	delete(h.zsets, k)
}
