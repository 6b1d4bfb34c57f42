package test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/internal/clustertest"
)

// readyStatus is GET /readyz's status code, 0 when the node does not answer.
func readyStatus(addr string) int {
	c := http.Client{Timeout: time.Second}
	res, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestReadyzFollowsQuorum: /readyz answers 200 on every node of a healthy
// cluster, 503 on a node left without a quorum, and 200 again once a quorum is
// back.
func TestReadyzFollowsQuorum(t *testing.T) {
	as := clustertest.Addrs(t, 9)
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("r%d=%s", i+1, as[3*i+1]))
	}
	procs := make([]*lockdProc, 3)
	addrs := make([]lockdAddrs, 3)
	dirs := make([]string, 3)
	spawn := func(i int) {
		procs[i] = spawnLockdArgs(t, fmt.Sprintf("r%d", i+1), dirs[i], addrs[i], "-node-id", fmt.Sprintf("r%d", i+1), "-peers", strings.Join(peers, ","))
	}
	for i := range 3 {
		addrs[i] = lockdAddrs{resp: as[3*i], peer: as[3*i+1], http: as[3*i+2]}
		dirs[i] = filepath.Join(t.TempDir(), "data")
		spawn(i)
	}
	poll := func(i, want int, bound time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for readyStatus(addrs[i].http) != want {
			if time.Since(start) > bound {
				t.Fatalf("node r%d: /readyz is %d after %v, want %d", i+1, readyStatus(addrs[i].http), bound, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	for i := range 3 {
		poll(i, http.StatusOK, leaderTimeout)
	}
	// Two of three die: the survivor has no quorum.
	procs[1].kill()
	procs[2].kill()
	d := poll(0, http.StatusServiceUnavailable, 15*time.Second)
	t.Logf("/readyz turned 503 %v after the quorum was lost", d.Round(time.Millisecond))
	// One comes back: a quorum again.
	spawn(1)
	d = poll(0, http.StatusOK, leaderTimeout)
	t.Logf("/readyz turned 200 %v after the quorum came back", d.Round(time.Millisecond))
	poll(1, http.StatusOK, leaderTimeout)
}
