package redisproto

import (
	"sync"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// turnParts puts a turn's replies in their connections' slots: as its store
// reports them (PartStore), and the rest when the batch is back. Once the turn
// has stalled and its connections left the loop, it hands each connection
// whose requests are all answered to a goroutine of its own with its replies
// (finish), without waiting for the rest of the batch. It lives in the loop
// goroutine's turnScratch, reset each turn; a goroutine whose turn stalled
// keeps its scratch.
type turnParts struct {
	l       *loop
	batch   []command.Request
	slots   []loopSlot
	ready   []*conn
	started time.Time

	mu     sync.Mutex
	filled []bool // filled[i]: batch[i]'s reply is in its slot
	// open is nil until the stall timer takes the turn's connections out of
	// the loop (release); then it holds each unfinished connection's count of
	// unanswered requests.
	open map[*conn]int
}

// reset readies p for a turn's batch.
func (p *turnParts) reset(l *loop, batch []command.Request, slots []loopSlot, ready []*conn, started time.Time) {
	p.l, p.batch, p.slots, p.ready, p.started = l, batch, slots, ready, started
	if cap(p.filled) < len(batch) {
		p.filled = make([]bool, len(batch))
	}
	p.filled = p.filled[:len(batch)]
	clear(p.filled)
	p.open = nil
}

// part is PartStore's callback: it puts each reply in its slot and, after a
// release, finishes the connections it completes.
func (p *turnParts) part(idx []int, res []resp.Value) {
	took := time.Since(p.started)
	p.mu.Lock()
	defer p.mu.Unlock()
	for j, i := range idx {
		if !p.fill(i, res[j], took) || p.open == nil {
			continue
		}
		c := p.slots[i].c
		if p.open[c]--; p.open[c] == 0 {
			p.finish(c)
		}
	}
}

// fill puts batch[i]'s reply v in its slot unless it is there already, and
// reports whether it put it. p.mu held, or no other goroutine left.
func (p *turnParts) fill(i int, v resp.Value, took time.Duration) bool {
	if p.filled[i] {
		return false
	}
	p.filled[i] = true
	sl := p.slots[i]
	sl.c.lt.replies[sl.at] = v
	sl.c.observe(p.batch[i].Spec.Name, p.batch[i].Args, v, took)
	return true
}

// release is called by the stall timer once the turn's connections are out of
// the epoll set: it finishes every connection already answered in full and
// counts what the others still wait for.
func (p *turnParts) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open = make(map[*conn]int, len(p.ready))
	for _, c := range p.ready {
		p.open[c] = 0
	}
	for i, sl := range p.slots {
		if !p.filled[i] {
			p.open[sl.c]++
		}
	}
	for _, c := range p.ready {
		if p.open[c] == 0 {
			p.finish(c)
		}
	}
}

// finish moves c, answered in full, to a goroutine of its own with its
// replies. p.mu held.
func (p *turnParts) finish(c *conn) {
	delete(p.open, c)
	p.l.moveOut(c, c.renderTurn(), c.ending())
}

// done is called on the loop goroutine when the batch is back (after every
// part call), with its replies, in a turn that stalled and was released: it
// fills what no part reported and finishes every connection not yet finished.
func (p *turnParts) done(res []resp.Value) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fillRest(res)
	for _, c := range p.ready {
		if _, waiting := p.open[c]; waiting {
			p.finish(c)
		}
	}
}

// fillRest puts in their slots the replies no part reported: on the loop
// goroutine once the batch is back (every part call is over), under p.mu in
// a stalled turn (done).
func (p *turnParts) fillRest(res []resp.Value) {
	took := time.Since(p.started)
	for i, v := range res {
		p.fill(i, v, took)
	}
}
