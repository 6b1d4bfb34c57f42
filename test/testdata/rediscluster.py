#!/usr/bin/python3
"""redis-py (Debian's python3-redis) against a lockd cluster or a single node.

    rediscluster.py cluster    HOST:PORT [HOST:PORT ...]
    rediscluster.py standalone HOST:PORT

cluster: redis.cluster.RedisCluster seeded with the given nodes (it checks
INFO's cluster_enabled, then reads CLUSTER SLOTS) sets and reads keys of
every slot range, takes, extends and releases redis-py Locks (SET NX PX and
Lua scripts by EVALSHA) on names over every range, and a plain redis.Redis on
each node reads what the cluster client wrote (a follower forwards).

standalone: RedisCluster refuses the node ("Cluster mode is not enabled on
this node"), as it refuses a standalone redis-server, and a plain redis.Redis
sets, reads and locks on it, keys of different slots in one MSET included.

Prints "ok" and exits 0 when every check passes; otherwise prints what failed
and exits 1. Every socket operation has a timeout.
"""

import sys

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import LockError, RedisClusterException

TIMEOUT = 10  # seconds, each socket operation


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


def check_locks(client, names):
    """Take, contend, extend and release a redis-py Lock on each name."""
    for name in names:
        lk = client.lock(name, timeout=30, blocking_timeout=5)
        if not lk.acquire():
            fail("lock %s: not acquired" % name)
        other = client.lock(name, timeout=30)
        if other.acquire(blocking=False):
            fail("lock %s: a second holder acquired it" % name)
        if not lk.owned() or not lk.locked():
            fail("lock %s: owned %s, locked %s after acquire" % (name, lk.owned(), lk.locked()))
        if not lk.extend(10):
            fail("lock %s: extend refused" % name)
        ttl = client.pttl(name)
        if not 30000 < ttl <= 40000:
            fail("lock %s: PTTL %d after extend(10) of a 30 s lock" % (name, ttl))
        lk.release()
        if client.exists(name):
            fail("lock %s: still there after release" % name)
        try:
            lk.release()
            fail("lock %s: a second release did not raise" % name)
        except LockError:
            pass
        if not other.acquire(blocking=False):
            fail("lock %s: free after release, yet not acquired" % name)
        other.release()


def cluster(addrs):
    nodes = [ClusterNode(*hostport(a)) for a in addrs]
    rc = RedisCluster(startup_nodes=nodes, socket_timeout=TIMEOUT,
                      socket_connect_timeout=TIMEOUT, decode_responses=True)
    try:
        primaries = rc.get_primaries()
        if not primaries:
            fail("RedisCluster found no primaries")
        # Keys over every slot range CLUSTER SLOTS gave (one per group).
        keys = ["py:%d" % i for i in range(200)]
        for i, k in enumerate(keys):
            if rc.set(k, str(i)) is not True:
                fail("SET %s" % k)
        for i, k in enumerate(keys):
            v = rc.get(k)
            if v != str(i):
                fail("GET %s = %r, want %r" % (k, v, str(i)))
        # Multi-key commands within one slot ({hash tag}).
        if rc.mset({"{py}a": "1", "{py}b": "2"}) is not True:
            fail("MSET {py}a {py}b")
        if rc.mget("{py}a", "{py}b") != ["1", "2"]:
            fail("MGET {py}a {py}b")
        check_locks(rc, ["py:lock:%d" % i for i in range(24)])
        # A plain client on each node reads what the cluster client wrote.
        for a in addrs:
            host, port = hostport(a)
            plain = redis.Redis(host=host, port=port, socket_timeout=TIMEOUT,
                                socket_connect_timeout=TIMEOUT, decode_responses=True)
            for i in (0, 57, 199):
                v = plain.get(keys[i])
                if v != str(i):
                    fail("plain GET %s through %s = %r, want %r" % (keys[i], a, v, str(i)))
            plain.close()
        rc.delete(*keys[:20])
        if rc.get(keys[0]) is not None:
            fail("GET %s after DEL" % keys[0])
    finally:
        rc.close()


def standalone(addr):
    host, port = hostport(addr)
    try:
        rc = RedisCluster(host=host, port=port, socket_timeout=TIMEOUT,
                          socket_connect_timeout=TIMEOUT)
        rc.close()
        fail("RedisCluster accepted a standalone node")
    except RedisClusterException as e:
        if "Cluster mode is not enabled on this node" not in str(e):
            fail("RedisCluster refused the node with %r" % str(e))
    r = redis.Redis(host=host, port=port, socket_timeout=TIMEOUT,
                    socket_connect_timeout=TIMEOUT, decode_responses=True)
    try:
        if r.info().get("cluster_enabled") != 0:
            fail("INFO cluster_enabled = %r" % r.info().get("cluster_enabled"))
        if r.mset({"py:a": "1", "py:b": "2"}) is not True:  # two slots
            fail("MSET over two slots")
        if r.mget("py:a", "py:b") != ["1", "2"]:
            fail("MGET over two slots")
        check_locks(r, ["py:lock:a", "py:lock:b"])
        r.delete("py:a", "py:b")
    finally:
        r.close()


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("cluster", "standalone"):
        print(__doc__)
        sys.exit(2)
    if sys.argv[1] == "cluster":
        cluster(sys.argv[2:])
    else:
        standalone(sys.argv[2])
    print("ok")


if __name__ == "__main__":
    main()
