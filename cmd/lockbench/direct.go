package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockd/lockd/shard"
)

// route is -direct's plan: for each client, the node it connects to and the
// hash tag its uncontended names carry, so that every command goes straight
// to the leader of the name's Raft group, as a cluster-aware client (go-redis
// ClusterClient, redis-cli -c) sends it after CLUSTER SLOTS.
type route struct {
	addr string // the client's connection
	tag  string // "{…}" in its uncontended names; "" for contended
}

// planDirect asks the first address whether it is part of a cluster (INFO
// cluster's cluster_enabled, as cluster-aware clients do). A single node
// (cluster_enabled:0, or no such line: it answers CLUSTER SLOTS as a
// standalone Redis, with an error) leads every slot: every client connects to
// it, with no hash tag. On a cluster it asks CLUSTER SLOTS and gives each
// client a node and, for the uncontended workload, a hash tag whose slot that
// node leads: clients go round-robin over the leaders, and each leader's
// clients round-robin over the slot ranges it leads. For the contended
// workload (one name) every client connects to that name's leader.
func planDirect(ctx context.Context, cfg *config, s *shared) ([]route, error) {
	c := redis.NewClient(cfg.options(cfg.addrs[0]))
	defer c.Close()
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return nil, fmt.Errorf("-direct: INFO cluster on %s: %w", cfg.addrs[0], err)
	}
	if !clusterEnabled(info) {
		routes := make([]route, cfg.clients)
		for i := range routes {
			routes[i] = route{addr: cfg.addrs[0]}
		}
		return routes, nil
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("-direct: CLUSTER SLOTS on %s: %w", cfg.addrs[0], err)
	}
	leaderOf := func(slot int) (string, error) {
		for _, r := range slots {
			if slot >= r.Start && slot <= r.End && len(r.Nodes) > 0 {
				return r.Nodes[0].Addr, nil
			}
		}
		return "", fmt.Errorf("-direct: CLUSTER SLOTS names no leader for slot %d", slot)
	}
	routes := make([]route, cfg.clients)
	if cfg.workload == "contended" {
		addr, err := leaderOf(int(shard.Slot([]byte(s.contendedName(0)))))
		if err != nil {
			return nil, err
		}
		for i := range routes {
			routes[i] = route{addr: addr}
		}
		return routes, nil
	}
	var leaders []string                       // in CLUSTER SLOTS order
	ranges := map[string][]redis.ClusterSlot{} // a leader's slot ranges
	for _, r := range slots {
		if len(r.Nodes) == 0 {
			continue
		}
		a := r.Nodes[0].Addr
		if _, ok := ranges[a]; !ok {
			leaders = append(leaders, a)
		}
		ranges[a] = append(ranges[a], r)
	}
	if len(leaders) == 0 {
		return nil, fmt.Errorf("-direct: CLUSTER SLOTS on %s lists no slots", cfg.addrs[0])
	}
	next := 0 // the candidate tag number
	for i := range routes {
		a := leaders[i%len(leaders)]
		rs := ranges[a]
		r := rs[(i/len(leaders))%len(rs)]
		for {
			tag := "{d" + strconv.Itoa(next) + "}"
			next++
			if sl := int(shard.Slot([]byte(tag))); sl >= r.Start && sl <= r.End {
				routes[i] = route{addr: a, tag: tag}
				break
			}
		}
	}
	return routes, nil
}

// clusterEnabled reports whether an INFO reply says cluster_enabled:1.
func clusterEnabled(info string) bool {
	for _, line := range strings.Split(info, "\n") {
		if strings.TrimSpace(line) == "cluster_enabled:1" {
			return true
		}
	}
	return false
}
