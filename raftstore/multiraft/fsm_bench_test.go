package multiraft

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
)

// lockSM is lockd's keyspace as a group's state machine, as lockd's groups
// apply it: each entry decoded, stamped with a log time, applied, its events
// taken.
type lockSM struct {
	mu sync.Mutex
	ks *fsm.Keyspace
}

func (s *lockSM) Apply(cmds []Command) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]any, len(cmds))
	for i, c := range cmds {
		e, err := command.Decode(c.Data)
		if err != nil {
			out[i] = resp.Error("ERR " + err.Error())
			continue
		}
		e.Time = time.Now().UnixMilli()
		e.Wall = e.Time
		out[i] = s.ks.Apply(c.Index, e)
	}
	s.ks.TakeEvents()
	return out
}

func (s *lockSM) Snapshot() (func() ([]byte, error), error) {
	s.mu.Lock()
	snap := s.ks.Snapshot()
	s.mu.Unlock()
	return func() ([]byte, error) {
		var b bytes.Buffer
		_, err := snap.WriteTo(&b)
		return b.Bytes(), err
	}, nil
}

func (s *lockSM) Restore(data []byte) error {
	ks := fsm.New()
	if data != nil {
		if err := ks.Restore(bytes.NewReader(data)); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.ks = ks
	s.mu.Unlock()
	return nil
}

// BenchmarkGroupsLocks: BenchmarkNodeGroups's load on the engine alone: 64
// clients each acquiring (LOCK.ACQUIRE name owner PX 10000) and releasing
// their own name through its group's leader, lockd's keyspace applying, 3
// in-process nodes over TCP peer ports on disk, 1 and 8 groups. One op is a
// cycle (two commits).
func BenchmarkGroupsLocks(b *testing.B) {
	for _, groups := range []int{1, 8} {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			c := newClusterOver(b, 3, 0, nil, true)
			for _, id := range c.ids {
				n, _ := c.node(id)
				for g := range groups {
					if err := n.AddGroup(Group(g), GroupConfig{Voters: c.ids, SM: &lockSM{ks: fsm.New()}}); err != nil {
						b.Fatal(err)
					}
				}
			}
			c.groups = groups
			leads := c.spread()
			elapsed, cpu := drive(b, func(i int) func() error {
				g := Group(i % groups)
				n, _ := c.node(leads[g])
				name := []byte("bench:" + strconv.Itoa(i))
				acq := command.Entry{Kind: command.KindCommand, Args: [][]byte{[]byte("LOCK.ACQUIRE"), name, []byte("me"), []byte("PX"), []byte("10000")}}.Encode()
				return func() error {
					v, err := n.Propose(context.Background(), g, acq)
					if err != nil || v.(resp.Value).Kind != resp.KindInt {
						return fmt.Errorf("acquire: %v %v", v, err)
					}
					rel := command.Entry{Kind: command.KindCommand, Args: [][]byte{[]byte("LOCK.RELEASE"), name, strconv.AppendInt(nil, v.(resp.Value).Int, 10)}}.Encode()
					if v, err := n.Propose(context.Background(), g, rel); err != nil || v.(resp.Value).Int != 1 {
						return fmt.Errorf("release: %v %v", v, err)
					}
					return nil
				}
			})
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cycles/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/cycle")
		})
	}
}
