package test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchFailovers is the number of leader kills per benchmark iteration.
const benchFailovers = 10

// probeResult is when a survivor first served a grant after a kill.
type probeResult struct {
	node    string
	after   time.Duration // from the kill to the grant's reply
	refused int           // TRYAGAIN replies before it
	slowest time.Duration // the longest single request before it
	err     error
}

// probe sends SET key x NX PX ms FENCE through nd, on a connection opened
// before the kill, until a grant comes back (every attempt on a fresh key). It
// gives up at deadline.
func probe(c *respConn, nd *clusterNode, prefix string, killAt, deadline time.Time) probeResult {
	res := probeResult{node: nd.id}
	for seq := 0; ; seq++ {
		if time.Now().After(deadline) {
			res.err = fmt.Errorf("no grant through %s within %v of the kill", nd.id, deadline.Sub(killAt))
			return res
		}
		start := time.Now()
		r, err := c.do("SET", prefix+strconv.Itoa(seq), "x", "NX", "PX", strconv.Itoa(lockTTLMs), "FENCE")
		res.slowest = max(res.slowest, time.Since(start))
		switch {
		case err != nil:
			res.err = fmt.Errorf("through %s: %w", nd.id, err)
			return res
		case r.kind == ':':
			res.after = time.Since(killAt)
			return res
		case isTryAgain(r) || isUnknown(r):
			res.refused++
			pace()
		default:
			res.err = fmt.Errorf("SET through %s answered %v", nd.id, r)
			return res
		}
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p + 0.5)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkFailover kills the leader of a three-node cluster with SIGKILL ten
// times (restarting it on its data directory each time) and measures, from the
// kill, the time until a surviving node answers SET … NX PX … FENCE with a
// token. Each survivor is probed on its own connection (opened before the
// kill): "first" is the first grant through either survivor (the failover as a
// client that can reach both sees it), "all" is when both have served one
// (what a client pinned to one node sees in the worst case).
//
// Run it with: go test -run XXX -bench Failover -benchtime 1x ./test/
func BenchmarkFailover(b *testing.B) {
	timeouts, err := raftTimeouts()
	if err != nil {
		b.Fatalf("reading the Raft timeouts: %v", err)
	}
	b.Logf("Raft timeouts in use (read from the lockd source, raftstore/store.go; INFO does not report them): %s", timeouts)
	cl := startCluster(b, 3)
	var first, all []time.Duration
	var details []string
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		for f := 1; f <= benchFailovers; f++ {
			leader := cl.waitLeader(leaderTimeout)
			var survivors []*clusterNode
			var conns []*respConn
			for _, nd := range cl.nodes {
				if nd == leader {
					continue
				}
				c, err := dialRESP(nd.addrs.resp, clusterOpTimeout)
				if err != nil {
					b.Fatalf("dial %s: %v", nd.id, err)
				}
				survivors, conns = append(survivors, nd), append(conns, c)
			}
			killAt := time.Now()
			cl.kill(leader)
			deadline := killAt.Add(2 * clusterOpTimeout)
			results := make([]probeResult, len(survivors))
			var wg sync.WaitGroup
			for i, nd := range survivors {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = probe(conns[i], nd, fmt.Sprintf("bench:%d:%d:%s:", iter, f, nd.id), killAt, deadline)
				}()
			}
			wg.Wait()
			for _, c := range conns {
				c.close()
			}
			var firstF, allF time.Duration
			var parts []string
			for _, r := range results {
				if r.err != nil {
					b.Fatalf("failover %d (killed %s): %v", f, leader.id, r.err)
				}
				if firstF == 0 || r.after < firstF {
					firstF = r.after
				}
				allF = max(allF, r.after)
				parts = append(parts, fmt.Sprintf("via %s %v (%d refused, slowest request %v)", r.node,
					r.after.Round(time.Millisecond), r.refused, r.slowest.Round(time.Millisecond)))
			}
			first, all = append(first, firstF), append(all, allF)
			newLeader := cl.waitLeader(leaderTimeout)
			b.StopTimer()
			cl.restart(leader)
			b.StartTimer()
			details = append(details, fmt.Sprintf("failover %d: killed %s, %s leads; first grant %v after the kill; %s", f,
				leader.id, newLeader.id, firstF.Round(time.Millisecond), strings.Join(parts, ", ")))
		}
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(first, 0.5)), "p50-ms")
	b.ReportMetric(ms(slices.Max(first)), "max-ms")
	b.ReportMetric(ms(percentile(all, 0.5)), "all-nodes-p50-ms")
	b.ReportMetric(ms(slices.Max(all)), "all-nodes-max-ms")
	b.Logf("%d failovers: first grant through a survivor p50 %v, max %v; through every survivor p50 %v, max %v (%s)",
		len(first), percentile(first, 0.5).Round(time.Millisecond), slices.Max(first).Round(time.Millisecond),
		percentile(all, 0.5).Round(time.Millisecond), slices.Max(all).Round(time.Millisecond), timeouts)
	// One line each (go test shows only the first lines of a benchmark's log
	// unless -v).
	b.Logf("first grant, ms: %v", msList(first))
	b.Logf("every survivor, ms: %v", msList(all))
	b.Logf("details:\n%s", strings.Join(details, "\n"))
}

func msList(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
