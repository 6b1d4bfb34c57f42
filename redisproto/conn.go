package redisproto

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockd/lockd/raftstore/command"
	"github.com/lockd/lockd/resp"
)

// conn is one client connection. Its goroutine reads a batch of requests (all that
// are already buffered: a pipeline), answers them in order and flushes once.
type conn struct {
	srv     *Server
	nc      net.Conn
	rd      *reader
	wr      *bufio.Writer
	id      int64
	created time.Time
	addr    string
	laddr   string

	mu      sync.Mutex // guards the fields CLIENT LIST reads
	name    string
	libName string
	libVer  string
	proto   int
	lastCmd string
	lastAt  time.Time

	quit    bool
	tx      *txState          // open MULTI, or nil
	watches []command.Watched // WATCHed keys and their versions
}

func newConn(s *Server, nc net.Conn) *conn {
	now := time.Now()
	return &conn{srv: s, nc: nc, rd: newReader(nc, s.cfg.Limits), wr: bufio.NewWriterSize(nc, 16<<10),
		id: s.nextID.Add(1), created: now, lastAt: now, proto: 2,
		addr: nc.RemoteAddr().String(), laddr: nc.LocalAddr().String()}
}

func (c *conn) serve() {
	defer c.nc.Close()
	var out []byte
	var batch []command.Request
	var batchAt []int // reply slot of each batched request
	var replies []resp.Value
	var protos []int // the protocol each reply is written in: HELLO may switch mid-pipeline
	for {
		replies, protos = replies[:0], protos[:0]
		batch, batchAt = batch[:0], batchAt[:0]
		var perr error
		for n := 0; ; n++ {
			args, err := c.rd.next(n == 0)
			if err != nil {
				perr = err
				break
			}
			if args == nil {
				break
			}
			c.srv.stats.commands.Add(1)
			if c.tx != nil && !txControl(args[0]) {
				replies = append(replies, c.enqueue(args))
				protos = append(protos, c.protocol())
				continue
			}
			if spec, ok := command.Lookup(args[0]); ok {
				c.touch(spec.Name)
				protos = append(protos, c.protocol())
				op, err := spec.Parse(args)
				if err != nil {
					replies = append(replies, resp.Error(err.Error()))
					continue
				}
				batch = append(batch, command.Request{Args: args, Op: op, Spec: spec})
				batchAt = append(batchAt, len(replies))
				replies = append(replies, resp.Value{})
				continue
			}
			// A local command: keyspace commands before it are answered first.
			replies = c.flushBatch(batch, batchAt, replies)
			batch, batchAt = batch[:0], batchAt[:0]
			replies = append(replies, c.local(args))
			protos = append(protos, c.protocol())
			if c.quit {
				break
			}
			if n > 4096 {
				break // answer a long pipeline in slices
			}
		}
		replies = c.flushBatch(batch, batchAt, replies)
		out = out[:0]
		for i, r := range replies {
			out = resp.Append(out, r, protos[i])
		}
		var pe protocolError
		if errors.As(perr, &pe) {
			out = resp.Append(out, resp.Error("ERR "+pe.Error()), c.protocol())
		}
		if len(out) > 0 {
			if _, err := c.wr.Write(out); err != nil {
				return
			}
			if err := c.wr.Flush(); err != nil {
				return
			}
		}
		if perr != nil || c.quit {
			return
		}
		if cap(out) > 1<<20 {
			out = nil
		}
	}
}

// flushBatch sends the batched keyspace requests to the store and puts each reply
// in its slot.
func (c *conn) flushBatch(batch []command.Request, at []int, replies []resp.Value) []resp.Value {
	if len(batch) == 0 {
		return replies
	}
	res := c.srv.store.Do(c.srv.ctx, batch)
	for i, v := range res {
		replies[at[i]] = v
	}
	return replies
}

func (c *conn) protocol() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proto
}

func (c *conn) touch(name string) {
	c.mu.Lock()
	c.lastCmd = name
	c.lastAt = time.Now()
	c.mu.Unlock()
}

// errUnknownCommand words the reply to a command nobody knows, as Redis 7 does.
func errUnknownCommand(args [][]byte) resp.Value {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		s := string(a)
		if room := 128 - b.Len(); len(s) > room {
			s = s[:room]
		}
		b.WriteString("'" + s + "' ")
	}
	name := string(args[0])
	if len(name) > 128 {
		name = name[:128]
	}
	return resp.Error("ERR unknown command '" + name + "', with args beginning with: " + b.String())
}
