package test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterAwareClients: go-redis's ClusterClient and redis-cli -c use
// CLUSTER SLOTS / SHARDS / NODES to reach the leader directly, while a plain
// Client on a follower is served too (forwarded, never redirected); after the
// leader is killed the ClusterClient finds the new one and nothing is lost.
func TestClusterAwareClients(t *testing.T) {
	cl := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := cl.waitLeader(leaderTimeout)
	var seeds []string
	var follower *clusterNode
	for _, nd := range cl.nodes {
		seeds = append(seeds, nd.addrs.resp)
		if nd != leader {
			follower = nd
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, MaxRedirects: 8})
	defer cc.Close()
	plain := redis.NewClient(&redis.Options{Addr: follower.addrs.resp})
	defer plain.Close()

	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) != 3 {
		t.Fatalf("CLUSTER SLOTS = %+v, %v", slots, err)
	}
	if slots[0].Nodes[0].Addr != leader.addrs.resp {
		t.Fatalf("CLUSTER SLOTS names %s as master, the leader is %s", slots[0].Nodes[0].Addr, leader.addrs.resp)
	}
	if slot, err := plain.ClusterKeySlot(ctx, "{user1000}.following").Result(); err != nil || slot != 3443 {
		t.Fatalf("CLUSTER KEYSLOT = %d, %v", slot, err)
	}
	info, err := plain.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
		t.Fatalf("CLUSTER INFO = %q, %v", info, err)
	}
	nodes, err := plain.ClusterNodes(ctx).Result()
	if err != nil || strings.Count(nodes, "\n") != 3 || !strings.Contains(nodes, "myself,slave") || !strings.Contains(nodes, " master - ") {
		t.Fatalf("CLUSTER NODES = %q, %v", nodes, err)
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil || len(shards) != 1 || len(shards[0].Nodes) != 3 {
		t.Fatalf("CLUSTER SHARDS = %+v, %v", shards, err)
	}

	// Both clients at once, on the same keys.
	tokens := map[string]int64{}
	for i := range 30 {
		k := fmt.Sprintf("lock:%d", i)
		do := cc.Do
		if i%2 == 1 {
			do = plain.Do
		}
		tok, err := do(ctx, "LOCK.ACQUIRE", k, "w", "PX", "600000").Int64()
		if err != nil {
			t.Fatalf("acquire %s: %v", k, err)
		}
		tokens[k] = tok
	}
	// redis-cli in cluster mode, pointed at a follower.
	out, err := exec.CommandContext(ctx, "redis-cli", "-c", "-h", "127.0.0.1", "-p", strings.Split(follower.addrs.resp, ":")[1],
		"SET", "cli-key", "v1").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("redis-cli -c SET: %q, %v", out, err)
	}

	// The leader dies; the cluster client reloads its view and goes on.
	cl.kill(leader)
	newLeader := cl.waitLeader(leaderTimeout)
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := cc.Get(ctx, "cli-key").Result()
		if err == nil && v == "v1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterClient after the failover: %q, %v", v, err)
		}
		cc.ReloadState(ctx)
		time.Sleep(50 * time.Millisecond)
	}
	slots, err = cc.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 1 || slots[0].Nodes[0].Addr != newLeader.addrs.resp {
		t.Fatalf("CLUSTER SLOTS after the failover = %+v, %v (leader %s)", slots, err, newLeader.addrs.resp)
	}
	for k, tok := range tokens {
		if v, err := cc.Do(ctx, "LOCK.VALIDATE", k, tok).Int64(); v != 1 {
			t.Fatalf("%s: grant %d lost in the failover (%v)", k, tok, err)
		}
	}
}
