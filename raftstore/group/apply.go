package group

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/memtrim"
	"github.com/lockd/lockd/raftstore/fsm"

	"github.com/lockd/lockd/resp"
)

// machine adapts the pure keyspace to hashicorp/raft. It is the one place where
// entries are applied. Raft calls Apply/ApplyBatch/Snapshot/Restore from its FSM
// goroutine, one at a time; readers take mu for reading.
type machine struct {
	mu sync.RWMutex
	ks *fsm.Keyspace
	// following mirrors ks.ReplicaOf() != "" (set where a KindReplication
	// entry or a snapshot changes it), so that every write's READONLY check
	// (Store.readOnly) reads no lock.
	following atomic.Bool
	// namespaces mirrors ks.HasNamespaces() (set after every applied batch
	// and restore), so that every request's rate-limit check reads no lock
	// while no namespace is set (Store.namespaceOf).
	namespaces atomic.Bool

	wmu     sync.Mutex
	applied uint64
	waiters []applyWaiter
	kick    chan struct{} // poked after every apply: a deadline may have changed

	// observe, set by tests only, sees every applied entry and its reply (on
	// the apply goroutine, with the state locked).
	observe func(index uint64, e command.Entry, reply resp.Value)

	// publish delivers a published message to this node's subscribers and returns
	// how many received it. Set before Raft starts; nil drops messages.
	publish func(channel, message []byte) int

	// wake hands the waiters' outcomes of applied entries to the node's
	// blocked requests (after the state lock is released). Set before Raft
	// starts.
	wake func([]fsm.Wake)

	// onShardMap is told group 0's replicated shard map when an entry or a
	// restore changes it (Config.onShardMap); nil: nobody listens.
	onShardMap func([]byte)

	// durable blocks until the group's own log has the entry at an index on
	// disk (logstore.Store.WaitDurable; see parallelsync.go): an entry is
	// applied only then. Set before Raft starts; nil: every entry is on disk
	// when committed.
	durable func(index uint64) error

	// wants tells the keyspace which event channels have listeners here
	// (fsm.Keyspace.SetEventFilter). Set before Raft starts; nil: all.
	wants func(channel string) bool

	// bytes is told what every batch applied and when the state is captured
	// or restored (logbytes.go). Set before Raft starts; nil: not counted.
	bytes *logBytes
}

type applyWaiter struct {
	index uint64
	ch    chan struct{}
}

func newMachine() *machine {
	return &machine{ks: fsm.New(), kick: make(chan struct{}, 1)}
}

var _ raft.BatchingFSM = (*machine)(nil)

// batchReplies is the FSM's answer to a batch entry: one reply per command.
type batchReplies []resp.Value

// Apply applies one committed log record.
func (m *machine) Apply(l *raft.Log) interface{} {
	return m.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed records in order. An undecodable entry panics: a
// replica must stop rather than diverge from the others.
func (m *machine) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	if n := len(logs); n > 0 && m.durable != nil {
		if err := m.durable(logs[n-1].Index); err != nil {
			// The log lost its disk (a failed fsync) or was closed under a
			// running group: this replica must stop rather than apply what a
			// majority may not hold.
			panic(fmt.Sprintf("raftstore: log index %d is not on disk: %v", logs[n-1].Index, err))
		}
	}
	var wakes []fsm.Wake
	size := 0 // the batch's data, of every type (logBytes)
	m.mu.Lock()
	for i, l := range logs {
		size += len(l.Data)
		if l.Type != raft.LogCommand {
			continue
		}
		e, err := command.Decode(l.Data)
		if err != nil {
			m.mu.Unlock()
			panic(fmt.Sprintf("raftstore: log index %d: %v", l.Index, err))
		}
		var replies batchReplies // a batch entry's, one per command
		err = m.ks.ApplyEach(l.Index, e, func(cmd command.Entry, v resp.Value) {
			if ev := m.ks.TakeEvents(); len(ev) > 0 {
				v = m.deliver(cmd, ev, v)
			}
			wakes = append(wakes, m.ks.TakeWakes()...)
			if m.observe != nil {
				m.observe(l.Index, cmd, v)
			}
			if e.Kind == command.KindBatch {
				replies = append(replies, v)
			} else {
				out[i] = v
			}
		})
		if err != nil {
			m.mu.Unlock()
			panic(fmt.Sprintf("raftstore: log index %d: %v", l.Index, err))
		}
		if replies != nil {
			out[i] = replies
		}
		if e.Kind == command.KindShardMap && m.onShardMap != nil {
			if b := m.ks.ShardMap(); b != nil {
				m.onShardMap(b)
			}
		}
		if e.Kind == command.KindReplication {
			m.following.Store(m.ks.ReplicaOf() != "")
		}
	}
	m.namespaces.Store(m.ks.HasNamespaces())
	m.mu.Unlock()
	if len(wakes) > 0 && m.wake != nil {
		m.wake(wakes)
	}
	if n := len(logs); n > 0 {
		if m.bytes != nil {
			m.bytes.applied(logs[n-1].Index, uint64(size))
		}
		m.setApplied(logs[n-1].Index)
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
	return out
}

// deliver hands an entry's published messages to this node's subscribers and
// puts the receiver count of each direct PUBLISH into its reply: the entry's own
// reply, or that command's element of a transaction's reply.
func (m *machine) deliver(e command.Entry, ev []fsm.Event, reply resp.Value) resp.Value {
	var counts []int64
	for _, x := range ev {
		n := 0
		if m.publish != nil {
			n = m.publish(x.Channel, x.Message)
		}
		if x.Direct {
			counts = append(counts, int64(n))
		}
	}
	if len(counts) == 0 || reply.IsError() {
		return reply
	}
	switch e.Kind {
	case command.KindCommand:
		return resp.Int(counts[0])
	case command.KindTx:
		tx, err := command.ParseTx(e.Args)
		if err != nil || reply.Kind != resp.KindArray || len(reply.Elems) != len(tx.Cmds) {
			return reply
		}
		elems := append([]resp.Value(nil), reply.Elems...)
		for i, c := range tx.Cmds {
			if len(counts) > 0 && command.EqualFold(c[0], "publish") && elems[i].Kind == resp.KindInt {
				elems[i], counts = resp.Int(counts[0]), counts[1:]
			}
		}
		return resp.Array(elems...)
	}
	return reply
}

// appliedToken is the logical index of the last command the state machine
// applied: the highest token, waiter or session id it can have issued. Above
// the Raft applied index by the token base (fsm.Keyspace.TokenBase), which
// batch entries and imports raise. Any goroutine.
func (m *machine) appliedToken() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.Logical()
}

func (m *machine) setApplied(idx uint64) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if idx > m.applied {
		m.applied = idx
	}
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.index <= m.applied {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	m.waiters = kept
}

// appliedCh returns a channel closed once index has been applied.
func (m *machine) appliedCh(index uint64) <-chan struct{} {
	ch := make(chan struct{})
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if index <= m.applied {
		close(ch)
		return ch
	}
	m.waiters = append(m.waiters, applyWaiter{index, ch})
	return ch
}

// read runs the read-only request r against the current state (a script's
// commands checked against user's ACL when user is set), or refuses it when
// its key's slot is leaving or has left this group (checkRead): both under
// one hold of the state's lock.
func (m *machine) read(r command.Request, user string, now, wall int64) resp.Value {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if v, moved := m.checkRead(r); moved {
		return v
	}
	return m.ks.ReadAs(r.Op, user, now, wall)
}

// wouldWait guesses whether a blocking acquire would queue (see
// fsm.Keyspace.WouldWait).
func (m *machine) wouldWait(op command.LockAcquire, now int64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.WouldWait(op, now)
}

// checkRead refuses a read of a key whose slot is leaving or has left this
// group (the router then follows the shard map). m.mu held.
func (m *machine) checkRead(r command.Request) (resp.Value, bool) {
	if !m.ks.SlotsMarked() {
		return resp.Value{}, false
	}
	keys := command.SlotKeys(r.Args)
	if v, ok := r.Op.(command.Versions); ok {
		keys = v.Keys
	}
	return m.ks.CheckKeys(keys)
}

// shardMap is the replicated shard map (group 0), or nil.
func (m *machine) shardMap() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.ShardMap()
}

func (m *machine) now() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.Now()
}

func (m *machine) nextDeadline() (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.NextDeadline()
}

func (m *machine) grantReady() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ks.GrantReady()
}

// Snapshot captures the state in O(1); Persist writes it out concurrently.
func (m *machine) Snapshot() (raft.FSMSnapshot, error) {
	if m.bytes != nil {
		m.bytes.captured() // no entry is applied meanwhile: this is the FSM goroutine
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return &snapshot{s: m.ks.Snapshot(), bytes: m.bytes}, nil
}

// Restore replaces the state with a snapshot.
func (m *machine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	ks := fsm.New()
	if err := ks.Restore(rc); err != nil {
		return err
	}
	ks.SetEventFilter(m.wants)
	m.mu.Lock()
	m.ks = ks
	m.following.Store(ks.ReplicaOf() != "")
	m.namespaces.Store(ks.HasNamespaces())
	if m.publish != nil && (m.wants == nil || m.wants(command.TrackingChannel)) {
		// Any key may have changed: clients caching keys of this node are
		// told so (an empty message: every key), as on FLUSHALL.
		m.publish([]byte(command.TrackingChannel), []byte{})
	}
	m.mu.Unlock()
	if m.bytes != nil {
		m.bytes.restored()
	}
	if b := ks.ShardMap(); b != nil && m.onShardMap != nil {
		m.onShardMap(b)
	}
	memtrim.After(restoreSettle)
	m.setApplied(ks.Index())
	return nil
}

// restoreSettle is how long after the last snapshot restore the process
// hands the memory the restores freed back to the OS (memtrim.After): one
// forced GC for all the groups of a node that restored at start, so that a
// restarted node's RSS is its state, not the peak of its restore (1M locks on
// 8 groups, 5 s after a restart: 338 MB RSS without this, 307 MB with it).
const restoreSettle = time.Second

type snapshot struct {
	s     *fsm.Snapshot
	bytes *logBytes // told the size written; nil: not counted
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	w := &countingWriter{w: sink}
	if _, err := s.s.WriteTo(w); err != nil {
		sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if s.bytes != nil {
		s.bytes.persisted(w.n)
	}
	return nil
}

func (s *snapshot) Release() {}

// AppliedToken is the machine's appliedToken (INFO raft, RAFT GROUPS).
func (s *Store) AppliedToken() uint64 { return s.m.appliedToken() }
