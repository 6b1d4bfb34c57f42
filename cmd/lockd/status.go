package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockd/lockd/server"
	"github.com/redis/go-redis/v9"
)

// runVersion prints lockd's version: "lockd version". Exit status 0.
func runVersion(w io.Writer) int {
	fmt.Fprintf(w, "lockd %s (%s %s/%s)\n", server.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// runStatus prints the cluster at a glance, as the node at -addr sees it:
// "lockd status [-addr host:port] [-password p]". Exit status 0 when the
// cluster has a leader, 1 when it has none or the node does not answer.
func runStatus(args []string, w, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockd status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "RESP address of any node")
	pass := fs.String("password", "", "password of the default user, when the cluster requires one (env LOCKD_REQUIREPASS)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the node")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pass == "" {
		*pass = os.Getenv("LOCKD_REQUIREPASS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: *addr, Password: *pass, MaxRetries: -1, DialTimeout: *timeout})
	defer c.Close()
	info, err := c.Info(ctx, "raft", "locks", "server").Result()
	if err != nil {
		fmt.Fprintf(stderr, "lockd status: %s: %v\n", *addr, err)
		return 1
	}
	kv := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			kv[k] = v
		}
	}
	fmt.Fprintf(w, "node %s at %s: %s, term %s, applied %s (lockd %s)\n", kv["raft_node_id"], *addr, kv["raft_state"],
		kv["raft_term"], kv["raft_applied_index"], kv["lockd_version"])
	fmt.Fprintf(w, "locks %s, holders %s, waiters %s, sessions %s, grants %s, expired while held %s\n",
		kv["locks"], kv["lock_holders"], kv["lock_waiters"], kv["sessions"], kv["lock_grants"], kv["lease_expired_while_held"])
	members, err := c.Do(ctx, "RAFT", "MEMBERS").Slice()
	if err != nil {
		fmt.Fprintf(stderr, "lockd status: RAFT MEMBERS: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tRESP\tPEER\tZONE\tAPPLIED\tLAG")
	leader := false
	var rows []string
	for _, m := range members {
		f := fields(m)
		role := "follower"
		if f["leader"] == "true" || f["leader"] == "1" {
			role, leader = "leader", true
		}
		if f["applied_index"] == "-1" {
			role += " (down?)"
		}
		if f["zone"] == "<nil>" {
			f["zone"] = "?" // no answer, or a lockd from before placement
		}
		if f["suffrage"] == "Nonvoter" {
			role += " (no vote)"
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", f["id"], role, f["resp_addr"], f["addr"], f["zone"], f["applied_index"], f["lag"]))
	}
	sort.Strings(rows)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
	if !leader {
		fmt.Fprintln(w, "no leader: the cluster cannot serve (quorum lost or an election in progress)")
		return 1
	}
	if kv["raft_groups"] == "" || kv["raft_groups"] == "1" {
		return 0
	}
	// A sharded cluster: every group needs a leader.
	groups, err := c.Do(ctx, "RAFT", "GROUPS").Slice()
	if err != nil {
		fmt.Fprintf(stderr, "lockd status: RAFT GROUPS: %v\n", err)
		return 1
	}
	replicas := kv["raft_replicas"]
	if replicas == "" || replicas == "0" {
		replicas = "by node count"
	}
	fmt.Fprintf(w, "%s groups, shard map version %s, replicas %s\n", kv["raft_groups"], kv["shard_map_version"], replicas)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tLEADER\tVOTERS\tHERE\tTERM\tAPPLIED\tSLOTS\tMOVING")
	status := 0
	for _, g := range groups {
		f := fields(g)
		if f["leader"] == "" {
			f["leader"], status = "(none)", 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f["group"], f["leader"], strings.ReplaceAll(f["members"], ";", ","), f["state"],
			f["term"], f["applied_index"], f["slots"], f["moving"])
	}
	tw.Flush()
	if status != 0 {
		fmt.Fprintln(w, "a group has no leader: its keys cannot be served (quorum lost or an election in progress)")
	}
	return status
}

// fields reads a RAFT MEMBERS entry (a map in RESP3, a flat list in RESP2).
func fields(v any) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case map[any]any:
		for k, x := range m {
			out[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = fmt.Sprint(m[i+1])
		}
	}
	return out
}
