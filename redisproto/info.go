package redisproto

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/resp"
)

// INFO [section ...]
func cmdInfo(c *conn, a [][]byte) resp.Value {
	want := map[string]bool{}
	for _, s := range a[1:] {
		want[strings.ToLower(string(s))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	s := c.srv
	type section struct {
		name  string
		lines func() [][2]string
	}
	sections := []section{
		{"Server", func() [][2]string {
			up := time.Since(s.start)
			return [][2]string{
				{"redis_version", RedisVersion}, {"lockd_version", s.cfg.Version}, {"redis_mode", s.mode()},
				{"os", runtime.GOOS + " " + runtime.GOARCH}, {"arch_bits", "64"}, {"go_version", runtime.Version()},
				{"multiplexing_api", s.multiplexingAPI()},
				{"process_id", strconv.Itoa(os.Getpid())}, {"tcp_port", portOf(s.Addr())},
				{"uptime_in_seconds", strconv.FormatInt(int64(up/time.Second), 10)},
				{"uptime_in_days", strconv.FormatInt(int64(up/(24*time.Hour)), 10)},
			}
		}},
		{"Clients", func() [][2]string {
			blocked, timed := s.blockedInfo()     // info_counts.go
			tracking, _, _, _ := s.trackingInfo() // info_counts.go
			return [][2]string{{"connected_clients", strconv.Itoa(len(s.clients()))},
				{"event_loop_clients", strconv.Itoa(s.loopClients())}, {"blocked_clients", blocked},
				{"tracking_clients", strconv.Itoa(tracking)}, {"clients_in_timeout_table", timed}}
		}},
		{"Memory", func() [][2]string {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return [][2]string{{"used_memory", strconv.FormatUint(m.HeapAlloc, 10)}, {"maxmemory", "0"}, {"maxmemory_policy", "noeviction"}}
		}},
		{"Persistence", func() [][2]string {
			return [][2]string{{"loading", "0"}, {"aof_enabled", "1"}, {"rdb_bgsave_in_progress", "0"}}
		}},
		{"Stats", func() [][2]string {
			_, keys, items, prefixes := s.trackingInfo()
			return [][2]string{{"total_connections_received", strconv.FormatInt(s.stats.connections.Load(), 10)},
				{"total_commands_processed", strconv.FormatInt(s.stats.commands.Load(), 10)},
				{"tracking_total_keys", strconv.Itoa(keys)}, {"tracking_total_items", strconv.Itoa(items)},
				{"tracking_total_prefixes", strconv.Itoa(prefixes)}}
		}},
		{"Replication", func() [][2]string {
			if r, ok := s.store.(Replicator); ok {
				if lines := r.ReplicationInfo(); lines != nil {
					return lines // a replica of a Redis master (replicaof.go)
				}
			}
			return [][2]string{{"role", "master"}, {"connected_slaves", strconv.Itoa(s.store.Replicas())}}
		}},
		{"Raft", s.store.Stats},
		{"Locks", s.store.LockInfo},
		{"Cluster", func() [][2]string { // as Redis, before Keyspace; see cluster.go for the face
			if s.clustered() {
				return [][2]string{{"cluster_enabled", "1"}}
			}
			return [][2]string{{"cluster_enabled", "0"}}
		}},
		{"Keyspace", func() [][2]string {
			if v := s.store.KeyspaceInfo(); v != "" {
				return [][2]string{{"db0", v}}
			}
			return nil
		}},
	}
	var b strings.Builder
	for _, sec := range sections {
		if !all && !want[strings.ToLower(sec.name)] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, kv := range sec.lines() {
			b.WriteString(kv[0] + ":" + kv[1] + "\r\n")
		}
	}
	return resp.Verbatim(b.String())
}

// pairValue is the value of key in an INFO-style list of pairs, or def.
func pairValue(pairs [][2]string, key, def string) string {
	for _, kv := range pairs {
		if kv[0] == key {
			return kv[1]
		}
	}
	return def
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return ""
}
