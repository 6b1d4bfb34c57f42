package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandsProcessed reads INFO's total_commands_processed.
func commandsProcessed(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("INFO stats has no total_commands_processed")
	return 0
}

const (
	handoverWaiters = 50
	handoverHold    = 20 * time.Millisecond
	handoverGrants  = 100
	pollEvery       = 100 * time.Millisecond // the seed's retry interval
)

// handovers runs waiters that each want the lock name once until grants grants
// happened, each holding it for handoverHold, and returns how many commands the
// server handled per hand-over. acquire tries or blocks; it returns a token or 0.
func handovers(t *testing.T, s *Server, name string, acquire func(c *redis.Client, owner string) int64) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := client(t, s, 2)
	// Connections are set up (HELLO, CLIENT SETINFO) before counting.
	clients := make([]*redis.Client, handoverWaiters)
	for w := range clients {
		clients[w] = redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1, ReadTimeout: -1, PoolSize: 1})
		defer clients[w].Close()
		if err := clients[w].Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := commandsProcessed(t, admin)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for w := range handoverWaiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w]
			for i := 0; ctx.Err() == nil && granted.Load() < handoverGrants; i++ {
				tok := acquire(c, fmt.Sprintf("w%d-%d", w, i))
				if tok == 0 {
					continue
				}
				if granted.Add(1) > handoverGrants {
					c.Do(ctx, "LOCK.RELEASE", name, tok)
					return
				}
				time.Sleep(handoverHold) // the work under the lock
				c.Do(ctx, "LOCK.RELEASE", name, tok)
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("%s: only %d grants within the bound", name, granted.Load())
	}
	t.Logf("%s: %d hand-overs in %v", name, handoverGrants, time.Since(start).Round(time.Millisecond))
	return float64(commandsProcessed(t, admin)-before-1) / handoverGrants
}

// TestHandoverCost measures the seed's stampede: 50 clients want one lock.
// Polling with try-once acquires costs the server a command per waiter per
// poll; the FIFO queue costs one acquire and one release per hand-over.
func TestHandoverCost(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	polling := handovers(t, s, "poll", func(c *redis.Client, owner string) int64 {
		tok, err := c.Do(context.Background(), "LOCK.ACQUIRE", "poll", owner, "PX", "10000").Int64()
		if err != nil {
			time.Sleep(pollEvery)
			return 0
		}
		return tok
	})
	// A waiter whose WAIT ends re-queues (cheap: one command per WAIT).
	fifo := handovers(t, s, "fifo", func(c *redis.Client, owner string) int64 {
		tok, _ := c.Do(context.Background(), "LOCK.ACQUIRE", "fifo", owner, "PX", "10000", "WAIT", "5000").Int64()
		return tok
	})
	t.Logf("50 waiters, %d hand-overs of %v holds: polling every %v = %.1f commands per hand-over; FIFO queue = %.1f", handoverGrants, handoverHold, pollEvery, polling, fifo)
	if fifo > 4 {
		t.Errorf("FIFO hand-over costs %.1f commands, want about 2 (acquire + release)", fifo)
	}
	if polling < 3*fifo {
		t.Errorf("polling costs %.1f commands per hand-over, FIFO %.1f: the comparison shows no stampede", polling, fifo)
	}
}
