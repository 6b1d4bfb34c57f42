package compat

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cluster face of a single node: lockd with one member must look like a
// standalone redis-server 7.0.15 (no cluster-enabled) to every probe a client
// library makes before it chooses a plain or a cluster client: CLUSTER
// subcommands, READONLY, READWRITE and ASKING are refused with "cluster
// support disabled" (after the arity check), HELLO says mode standalone, and
// INFO has redis_mode:standalone and a "# Cluster" section with
// cluster_enabled:0. A multi-node cluster's face is checked in test/ (it
// needs several lockd processes; redis-server in cluster mode would need a
// slot map of its own).

// infoField compares only the named INFO field's line (and the reply type),
// for INFO sections whose other lines are the server's own.
func infoField(name string) normalizer {
	keep := func(raw []byte) []byte {
		v, err := parseValue(raw)
		if err != nil || !v.isBlob() {
			return raw
		}
		line := "<no " + name + " line>"
		for _, l := range strings.Split(v.str, "\r\n") {
			if strings.HasPrefix(l, name+":") {
				line = l
			}
		}
		return []byte(string(v.kind) + line + "\r\n")
	}
	return normalizer{"infoField(" + name + ")", both(keep)}
}

var clusterCases = []tcase{
	{name: "cluster probes on a standalone node", steps: []step{
		cmd("CLUSTER", "SLOTS"),
		cmd("CLUSTER", "SHARDS"),
		cmd("CLUSTER", "NODES"),
		cmd("CLUSTER", "INFO"),
		cmd("CLUSTER", "MYID"),
		cmd("CLUSTER", "KEYSLOT", "foo"),
		cmd("cluster", "keyslot", "{user1000}.following"),
		cmd("CLUSTER", "HELP"),
		cmd("cluster", "slots"),
		cmd("READONLY"),
		cmd("READWRITE"),
		cmd("asking"),
	}},
	{name: "cluster probes: arity and unknown subcommands first", steps: []step{
		cmd("CLUSTER"),
		cmd("CLUSTER", "KEYSLOT"),
		cmd("CLUSTER", "KEYSLOT", "a", "b"),
		cmd("CLUSTER", "SLOTS", "x"),
		cmd("CLUSTER", "SHARDS", "x"),
		cmd("CLUSTER", "NODES", "x"),
		cmd("CLUSTER", "INFO", "x"),
		cmd("CLUSTER", "MYID", "x"),
		cmd("CLUSTER", "HELP", "x"),
		cmd("CLUSTER", "FOO"),
		cmd("CLUSTER", "FOO", "bar"),
		cmd("READONLY", "x"),
		cmd("READWRITE", "x"),
		cmd("ASKING", "x"),
	}},
	{name: "a refused READONLY leaves the connection plain", steps: []step{
		cmd("READONLY"),
		cmd("SET", "k", "v"),
		cmd("GET", "k"),
		cmd("MSET", "a", "1", "b", "2"), // different slots: fine on a standalone server
		cmd("MGET", "a", "b", "k"),
		cmd("DEL", "a", "b", "k"),
	}},
	{name: "cluster probes inside MULTI", steps: []step{
		cmd("MULTI"),
		cmd("CLUSTER", "INFO"),
		cmd("CLUSTER", "KEYSLOT", "a"),
		cmd("READONLY"),
		cmd("SET", "k", "v"),
		cmd("EXEC"),
		cmd("GET", "k"),
	}},
	{name: "INFO cluster", steps: []step{
		cmd("INFO", "cluster"),
		cmd("INFO", "CLUSTER"),
		cmd("SET", "k", "v"),
		cmd("INFO", "keyspace", "cluster"),
		cmd("INFO", "cluster", "keyspace"),
		cmd("INFO", "server").with(infoField("redis_mode")),
		cmd("INFO").with(infoField("cluster_enabled")),
		cmd("INFO", "all").with(infoField("cluster_enabled")),
		cmd("INFO", "everything").with(infoField("redis_mode")),
	}},
	{name: "HELLO mode standalone", steps: []step{
		cmd("HELLO").with(helloIdentity),
		cmd("HELLO", "2").with(helloIdentity),
		cmd("HELLO", "3").with(helloIdentity),
	}},
}

// TestRedisPyStandalone: redis-py (Debian's python3-redis, a client in
// another language than Go, which make deps installs) against redis-server
// and a single lockd node: RedisCluster refuses both alike ("Cluster mode is
// not enabled on this node", from INFO's cluster_enabled:0), and a plain
// redis.Redis sets, reads (MSET over two slots) and takes redis-py Locks on
// both. test/'s TestRedisPyCluster runs the same script's cluster half
// against three lockd nodes.
func TestRedisPyStandalone(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import redis.cluster").Run(); err != nil {
		t.Fatalf("/usr/bin/python3 cannot import redis.cluster (%v): install Debian's python3-redis (make deps)", err)
	}
	redisAddr := startRedis(t)
	name, addr := startOther(t)
	for _, side := range [][2]string{{"redis", redisAddr}, {name, addr}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join("..", "test", "testdata", "rediscluster.py"),
			"standalone", side[1]).CombinedOutput()
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Errorf("%s: rediscluster.py standalone %s: %v\n%s", side[0], side[1], err, out)
		}
	}
}
