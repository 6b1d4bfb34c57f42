package test

import (
	"strconv"
	"testing"
	"time"
)

// Regression tests for what the chaos campaign found. Each reproduces the
// finding on purpose, without a random schedule.

// A leader that was paused (SIGSTOP) long enough to be replaced kept counting
// log time on its own clock after it resumed as a follower (any reading — an
// INFO, its expiry loop — remembered it). When it led again, it continued from
// that reading instead of the log's time: ahead by the election gap it had not
// led through, so every lease ended that much early (the campaign saw a dead
// holder's 3 s lock granted again 624 ms early).
func TestChaosRegressionPausedLeaderKeepsNoClock(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster")
	}
	cc := startChaosCluster(t, 3, 1, 0)
	a := cc.awaitLeader(leaderTimeout)
	if a == nil {
		t.Fatal("no leader")
	}
	// A key with a TTL keeps the leader's expiry loop reading its clock.
	ca := a.proc.conn()
	must(t, ca, "SET", "reg:ttl", "x", "PX", "600000")

	cc.pause(a, true)
	pausedAt := time.Now()
	var b *clusterNode
	for deadline := time.Now().Add(leaderTimeout); b == nil || b == a; {
		if time.Now().After(deadline) {
			t.Fatalf("no new leader within %v while %s is paused", leaderTimeout, a.id)
		}
		b = cc.currentLeader()
		time.Sleep(pollEvery)
	}
	t.Logf("%s paused; %s leads after %v", a.id, b.id, time.Since(pausedAt).Round(time.Millisecond))
	time.Sleep(time.Second) // the old leader stays paused a while longer: the gap its clock would carry
	cc.pause(a, false)
	if _, err := cc.waitFollower(a, rejoinTimeout); err != nil {
		t.Fatalf("%s after SIGCONT: %v", a.id, err)
	}
	if _, err := raftInfo(a.addrs.resp); err != nil { // INFO on the old leader reads its clock
		t.Fatal(err)
	}
	c2, err := dialRESP(a.addrs.resp, opTimeout)
	if err != nil {
		t.Fatal(err)
	}
	c2.do("INFO", "keyspace")
	c2.close()

	// A lease granted by the new leader, then office handed back to the old one.
	cb := b.proc.conn()
	const ttl = 3000
	sent := time.Now()
	tok := mustInt(t, cb, "SET", "reg:lock", "holder", "NX", "PX", strconv.Itoa(ttl), "FENCE")
	if err := cc.transfer(a); err != nil {
		t.Fatal(err)
	}
	t.Logf("token %d granted by %s; %s leads again %v later", tok, b.id, a.id, time.Since(sent).Round(time.Millisecond))
	nc := &nodeConn{cl: cc.lockdCluster, home: a.idx}
	defer nc.close()
	for deadline := sent.Add(ttl*time.Millisecond + 10*time.Second); ; {
		r, _, err := nc.do("SET", "reg:lock", "probe", "NX", "PX", "1000", "FENCE")
		if err == nil && r.kind == ':' {
			if early := sent.Add(ttl * time.Millisecond).Sub(time.Now()); early > 2*time.Millisecond {
				t.Fatalf("the %d ms lease granted by %s ended %v early once %s led again", ttl, b.id, early.Round(time.Millisecond), a.id)
			}
			t.Logf("free again %v after it was asked for (lease %d ms)", time.Since(sent).Round(time.Millisecond), ttl)
			return
		}
		if err != nil {
			nc.close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("reg:lock still taken %v after a %d ms lease", time.Since(sent), ttl)
		}
		time.Sleep(5 * time.Millisecond) // the probe's polling interval
	}
}
