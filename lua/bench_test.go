package lua

import (
	"testing"

	"github.com/lockd/lockd/resp"
)

// mapHost is the smallest keyspace: GET, SET and DEL on a map.
type mapHost map[string]string

func (m mapHost) Call(args [][]byte) resp.Value {
	switch string(args[0]) {
	case "get":
		if v, ok := m[string(args[1])]; ok {
			return resp.BulkString(v)
		}
		return resp.Nil
	case "set":
		m[string(args[1])] = string(args[2])
		return resp.OK
	case "del":
		if _, ok := m[string(args[1])]; ok {
			delete(m, string(args[1]))
			return resp.Int(1)
		}
		return resp.Int(0)
	}
	return resp.Error(ErrUnknownCommand)
}

// compareAndDelete is the unlock script of redsync and most Redis lock clients.
const compareAndDelete = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func BenchmarkCompareAndDelete(b *testing.B) {
	e := New()
	sha, err := e.Load([]byte(compareAndDelete))
	if err != nil {
		b.Fatal(err)
	}
	h := mapHost{}
	keys := [][]byte{[]byte("lock:orders")}
	argv := [][]byte{[]byte("owner-token-1")}
	for _, lim := range []struct {
		name string
		lim  Limits
	}{{"unlimited", Limits{}}, {"budget", Limits{MaxInstructions: 100000}}} {
		b.Run(lim.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				h["lock:orders"] = "owner-token-1"
				if v := e.Run(sha, keys, argv, h, lim.lim); v.Int != 1 {
					b.Fatalf("got %v", v)
				}
			}
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e := New()
		if _, err := e.Load([]byte(compareAndDelete)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewInterpreter(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		newState()
	}
}
