package main

// Node process: a set of raft drivers (one for all groups in mode shared, one
// per group in mode pergroup), a TCP listener for peers and clients.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const nNodes = 3

func port(node int) int { return 19101 + node }

type inMsg struct {
	gid uint32
	m   *pb.Message
}

type proposal struct {
	gid   uint32
	data  []byte // id(8) + payload
	reply chan bool
}

type group struct {
	gid  uint32
	rn   *raft.RawNode
	ms   *raft.MemoryStorage
	kv   map[string]string
	lead atomic.Uint64

	pend []proposal // proposals drained this iteration, stepped as one MsgProp
}

var propBatch = true

type driver struct {
	me     uint64 // raft id
	groups map[uint32]*group
	glist  []*group
	f      *os.File
	propCh chan proposal
	msgCh  chan []inMsg
	ctlCh  chan uint32 // campaign requests
	peers  [nNodes + 1]atomic.Pointer[net.TCPConn]

	waiters map[uint64]chan bool

	// per-iteration scratch
	rds    []gready
	wbuf   []byte
	frames [nNodes + 1][]byte

	fsyncs, frameCount, msgCount atomic.Uint64
}

type gready struct {
	g  *group
	rd raft.Ready
}

var mo = proto.MarshalOptions{}

func newDriver(me uint64, gids []uint32, path string) *driver {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	d := &driver{
		me:      me,
		groups:  map[uint32]*group{},
		f:       f,
		propCh:  make(chan proposal, 4096),
		msgCh:   make(chan []inMsg, 8192),
		ctlCh:   make(chan uint32, 64),
		waiters: map[uint64]chan bool{},
	}
	for _, gid := range gids {
		ms := raft.NewMemoryStorage()
		snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
			Index: new(uint64(1)), Term: new(uint64(1)),
			ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}},
		}}
		if err := ms.ApplySnapshot(snap); err != nil {
			log.Fatal(err)
		}
		ms.SetHardState(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(1))})
		rn, err := raft.NewRawNode(&raft.Config{
			ID:              me,
			ElectionTick:    100, // 1 s at 10 ms ticks
			HeartbeatTick:   10,  // 100 ms
			Storage:         ms,
			MaxSizePerMsg:   1 << 20,
			MaxInflightMsgs: 256,
			Logger:          quietLogger(),
		})
		if err != nil {
			log.Fatal(err)
		}
		g := &group{gid: gid, rn: rn, ms: ms, kv: map[string]string{}}
		d.groups[gid] = g
		d.glist = append(d.glist, g)
	}
	return d
}

func quietLogger() raft.Logger {
	l := &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}
	return l
}

func (d *driver) run() {
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			for _, g := range d.glist {
				g.rn.Tick()
			}
		case p := <-d.propCh:
			d.propose(p)
		case ms := <-d.msgCh:
			d.step(ms)
		case gid := <-d.ctlCh:
			d.groups[gid].rn.Campaign()
		}
		// drain whatever else is pending (bounded)
	drain:
		for i := 0; i < 4096; i++ {
			select {
			case p := <-d.propCh:
				d.propose(p)
			case ms := <-d.msgCh:
				d.step(ms)
			default:
				break drain
			}
		}
		d.flushProps()
		d.processReady()
	}
}

func (d *driver) propose(p proposal) {
	g := d.groups[p.gid]
	if g == nil {
		p.reply <- false
		return
	}
	if propBatch {
		g.pend = append(g.pend, p)
		return
	}
	if err := g.rn.Propose(p.data); err != nil {
		p.reply <- false
		return
	}
	d.waiters[binary.LittleEndian.Uint64(p.data)] = p.reply
}

// flushProps steps each group's drained proposals as one MsgProp.
func (d *driver) flushProps() {
	for _, g := range d.glist {
		if len(g.pend) == 0 {
			continue
		}
		ents := make([]*pb.Entry, len(g.pend))
		for i, p := range g.pend {
			ents[i] = &pb.Entry{Data: p.data}
		}
		err := g.rn.Step(&pb.Message{Type: pb.MsgProp.Enum(), From: new(d.me), Entries: ents})
		for i, p := range g.pend {
			if err != nil {
				p.reply <- false
			} else {
				d.waiters[binary.LittleEndian.Uint64(p.data)] = p.reply
			}
			g.pend[i] = proposal{}
		}
		g.pend = g.pend[:0]
	}
}

func (d *driver) step(ms []inMsg) {
	for _, im := range ms {
		if g := d.groups[im.gid]; g != nil {
			g.rn.Step(im.m)
		}
	}
}

func (d *driver) processReady() {
	d.rds = d.rds[:0]
	for _, g := range d.glist {
		if g.rn.HasReady() {
			d.rds = append(d.rds, gready{g, g.rn.Ready()})
		}
	}
	if len(d.rds) == 0 {
		return
	}
	// 1. persist all groups' hard states + entries: one write, one fdatasync.
	buf := d.wbuf[:0]
	for _, r := range d.rds {
		rd := &r.rd
		if rd.SoftState != nil {
			r.g.lead.Store(rd.SoftState.Lead)
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			buf = binary.LittleEndian.AppendUint32(buf, r.g.gid)
			buf = append(buf, 'H')
			buf = binary.LittleEndian.AppendUint64(buf, rd.HardState.GetTerm())
			buf = binary.LittleEndian.AppendUint64(buf, rd.HardState.GetVote())
			buf = binary.LittleEndian.AppendUint64(buf, rd.HardState.GetCommit())
			r.g.ms.SetHardState(rd.HardState)
		}
		if len(rd.Entries) > 0 {
			for _, e := range rd.Entries {
				buf = binary.LittleEndian.AppendUint32(buf, r.g.gid)
				buf = append(buf, 'E', byte(e.GetType()))
				buf = binary.LittleEndian.AppendUint64(buf, e.GetTerm())
				buf = binary.LittleEndian.AppendUint64(buf, e.GetIndex())
				buf = binary.LittleEndian.AppendUint32(buf, uint32(len(e.Data)))
				buf = append(buf, e.Data...)
			}
			r.g.ms.Append(rd.Entries)
		}
	}
	if len(buf) > 0 {
		if _, err := d.f.Write(buf); err != nil {
			log.Fatal(err)
		}
		if err := syscall.Fdatasync(int(d.f.Fd())); err != nil {
			log.Fatal(err)
		}
		d.fsyncs.Add(1)
	}
	d.wbuf = buf
	// 2. messages: one frame per peer, one Write each.
	for p := range d.frames {
		d.frames[p] = d.frames[p][:0]
	}
	for _, r := range d.rds {
		for _, m := range r.rd.Messages {
			to := m.GetTo()
			fr := d.frames[to]
			if len(fr) == 0 {
				fr = append(fr, 0, 0, 0, 0) // frame length placeholder
			}
			fr = binary.LittleEndian.AppendUint32(fr, r.g.gid)
			at := len(fr)
			fr = append(fr, 0, 0, 0, 0)
			fr, _ = mo.MarshalAppend(fr, m)
			binary.LittleEndian.PutUint32(fr[at:], uint32(len(fr)-at-4))
			d.frames[to] = fr
			d.msgCount.Add(1)
		}
	}
	for p := range d.frames {
		fr := d.frames[p]
		if len(fr) == 0 {
			continue
		}
		binary.LittleEndian.PutUint32(fr, uint32(len(fr)-4))
		c := d.peers[p].Load()
		if c == nil {
			continue // dropped; raft retries
		}
		if _, err := c.Write(fr); err != nil {
			c.Close()
			d.peers[p].CompareAndSwap(c, nil)
			continue
		}
		d.frameCount.Add(1)
	}
	// 3. apply committed entries, answer waiters; 4. Advance.
	for _, r := range d.rds {
		for _, e := range r.rd.CommittedEntries {
			if e.GetType() != pb.EntryType_EntryNormal || len(e.Data) < 8 {
				continue
			}
			id := binary.LittleEndian.Uint64(e.Data)
			payload := e.Data[8:]
			k, v := splitKV(payload)
			r.g.kv[k] = v
			if w, ok := d.waiters[id]; ok {
				w <- true
				delete(d.waiters, id)
			}
		}
		r.g.rn.Advance(r.rd)
	}
	for i := range d.rds {
		d.rds[i] = gready{}
	}
}

func splitKV(b []byte) (string, string) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), string(b[i+1:])
		}
	}
	return string(b), ""
}

// ---- node process ----

type nodeProc struct {
	me      int
	groups  int
	mode    string
	drivers []*driver
	byGroup []*driver
	nextID  atomic.Uint64
}

func runNode(me, groups int, mode, dir string) {
	np := &nodeProc{me: me, groups: groups, mode: mode, byGroup: make([]*driver, groups)}
	rid := uint64(me + 1)
	np.nextID.Store(uint64(me) << 56)
	if mode == "shared" {
		gids := make([]uint32, groups)
		for g := range gids {
			gids[g] = uint32(g)
		}
		d := newDriver(rid, gids, filepath.Join(dir, fmt.Sprintf("node%d.log", me)))
		np.drivers = []*driver{d}
		for g := range groups {
			np.byGroup[g] = d
		}
	} else {
		for g := range groups {
			d := newDriver(rid, []uint32{uint32(g)}, filepath.Join(dir, fmt.Sprintf("node%d-g%d.log", me, g)))
			np.drivers = append(np.drivers, d)
			np.byGroup[g] = d
		}
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port(me)))
	if err != nil {
		log.Fatal(err)
	}
	go np.accept(ln)
	// outbound: one connection per driver per peer
	var wg sync.WaitGroup
	for _, d := range np.drivers {
		for p := range nNodes {
			if p == me {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); np.dial(d, p) }()
		}
	}
	wg.Wait()
	for _, d := range np.drivers {
		go d.run()
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	say("CONNECTED")
	// control from parent via stdin
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "GO":
			go np.elect(say)
		case "STATS":
			var fs, fr, ms uint64
			for _, d := range np.drivers {
				fs += d.fsyncs.Load()
				fr += d.frameCount.Load()
				ms += d.msgCount.Load()
			}
			say(fmt.Sprintf("STATS %d %d %d", fs, fr, ms))
		}
	}
	os.Exit(0) // parent gone
}

func (np *nodeProc) elect(say func(string)) {
	deadline := time.Now()
	for {
		ok := true
		for g := range np.groups {
			want := uint64(g%nNodes + 1)
			d := np.byGroup[g]
			if d.groups[uint32(g)].lead.Load() != want {
				ok = false
				if g%nNodes == np.me && time.Since(deadline) >= 0 {
					d.ctlCh <- uint32(g)
				}
			}
		}
		if ok {
			say("READY")
			return
		}
		if time.Since(deadline) >= 0 {
			deadline = time.Now().Add(1500 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (np *nodeProc) dial(d *driver, p int) {
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port(p)))
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		tc := c.(*net.TCPConn)
		tc.SetNoDelay(true)
		if _, err := tc.Write([]byte{'R'}); err != nil {
			tc.Close()
			continue
		}
		d.peers[p+1].Store(tc)
		return
	}
}

func (np *nodeProc) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		c.(*net.TCPConn).SetNoDelay(true)
		go func() {
			br := bufio.NewReaderSize(c, 64<<10)
			h, err := br.ReadByte()
			if err != nil {
				c.Close()
				return
			}
			switch h {
			case 'R':
				np.raftReader(br)
			case 'C':
				np.clientConn(c, br)
			}
			c.Close()
		}()
	}
}

func (np *nodeProc) raftReader(br *bufio.Reader) {
	var hdr [4]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return
		}
		var ms []inMsg
		for b := buf; len(b) > 0; {
			gid := binary.LittleEndian.Uint32(b)
			ml := int(binary.LittleEndian.Uint32(b[4:]))
			m := &pb.Message{}
			if err := proto.Unmarshal(b[8:8+ml], m); err != nil {
				log.Fatal(err)
			}
			ms = append(ms, inMsg{gid, m})
			b = b[8+ml:]
		}
		// a connection carries only one driver's groups
		np.byGroup[ms[0].gid].msgCh <- ms
	}
}

// client protocol: request = u32 len | u32 gid | key \0 value ; reply = 1 byte (1 ok, 0 failed)
func (np *nodeProc) clientConn(c net.Conn, br *bufio.Reader) {
	var hdr [8]byte
	reply := make(chan bool, 1)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		gid := binary.LittleEndian.Uint32(hdr[4:])
		data := make([]byte, 8+n)
		binary.LittleEndian.PutUint64(data, np.nextID.Add(1))
		if _, err := io.ReadFull(br, data[8:]); err != nil {
			return
		}
		if int(gid) >= np.groups {
			return
		}
		np.byGroup[gid].propCh <- proposal{gid: gid, data: data, reply: reply}
		ok := <-reply
		b := byte(0)
		if ok {
			b = 1
		}
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
	}
}
