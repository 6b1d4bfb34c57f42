package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lockd/lockd/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// With -raft-metrics (raftMetrics' collector in the server's), /metrics
// serves hashicorp/raft's own timers: after writes, how long Raft took to
// commit them and to apply them.
func TestRaftMetricsOnMetricsEndpoint(t *testing.T) {
	c, err := raftMetrics()
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), NodeID: "n1", Collectors: []prometheus.Collector{c}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := redis.NewClient(&redis.Options{Addr: s.RESPAddr()})
	defer rdb.Close()
	ctx := context.Background()
	for i := range 5 {
		if err := rdb.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	count := func(body, name string) int {
		m := regexp.MustCompile(`(?m)^` + name + `_count (\d+)`).FindStringSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if count(body, "raft_commitTime") >= 5 && count(body, "raft_fsm_applyBatch") >= 1 {
			return
		}
	}
	t.Fatalf("/metrics lacks Raft's commit and apply timers after 5 writes (raft_commitTime_count %d, raft_fsm_applyBatch_count %d)",
		count(body, "raft_commitTime"), count(body, "raft_fsm_applyBatch"))
}
