//go:build ignore

// connmodel is a toy server for one measurement (scripts/connmodel.sh,
// redisproto/DESIGN.md, the event loop): how much CPU a Go server spends per durable write in
// each connection model, before any work of its own. It answers PING with
// PONG, SET with +OK once the batch that holds it is on disk (its bytes
// written into a preallocated file, one fdatasync per batch), and anything
// else with +OK at once. It keeps nothing and checks nothing: it is not
// lockd, and not a Redis either.
//
//	-mode wait    a goroutine per connection hands each SET to one batcher
//	              goroutine, waits for its batch's fdatasync, writes +OK
//	              (lockd's shape)
//	-mode direct  the same, but the batcher writes every reply itself and the
//	              connections' goroutines only read
//	-mode epoll   one locked thread: an epoll loop over raw non-blocking
//	              sockets reads every ready connection, makes the SETs it read
//	              durable with one fdatasync, then writes every reply (Redis's
//	              shape with appendfsync always)
//
// Run: go run scripts/connmodel/connmodel.go -mode epoll -port 7777 -file /tmp/x
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

var (
	okReply   = []byte("+OK\r\n")
	pongReply = []byte("+PONG\r\n")
)

// fileSize is the preallocated file's size; a batch that would pass its end
// starts again at the beginning.
const fileSize = 1 << 30

// disk appends batches to a preallocated file, each made durable by one fdatasync.
type disk struct {
	f   *os.File
	off int64
}

func openDisk(name string) (*disk, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, fileSize); err != nil {
		return nil, err
	}
	return &disk{f: f}, f.Sync()
}

// commit writes b and waits for it to be on disk.
func (d *disk) commit(b []byte) {
	if d.off+int64(len(b)) > fileSize {
		d.off = 0
	}
	if _, err := d.f.WriteAt(b, d.off); err != nil {
		log.Fatal(err)
	}
	d.off += int64(len(b))
	if err := unix.Fdatasync(int(d.f.Fd())); err != nil {
		log.Fatal(err)
	}
}

// parse takes one complete command (an array of bulk strings) off the front
// of b: its name, its arguments' bytes and what follows it; ok is false
// while the command is incomplete.
func parse(b []byte) (name, args, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 2 {
		return nil, nil, b, false
	}
	if b[0] != '*' {
		log.Fatalf("connmodel: not an array: %q", b[:i])
	}
	n, err := strconv.Atoi(string(b[1 : i-1]))
	if err != nil {
		log.Fatalf("connmodel: bad array length %q", b[:i])
	}
	p := i + 1
	for k := 0; k < n; k++ {
		j := bytes.IndexByte(b[p:], '\n')
		if j < 2 {
			return nil, nil, b, false
		}
		m, err := strconv.Atoi(string(b[p+1 : p+j-1]))
		if err != nil {
			log.Fatalf("connmodel: bad bulk length %q", b[p:p+j])
		}
		s := p + j + 1
		if s+m+2 > len(b) {
			return nil, nil, b, false
		}
		if k == 0 {
			name = b[s : s+m]
		} else {
			args = append(args, b[s:s+m]...)
		}
		p = s + m + 2
	}
	return name, args, b[p:], true
}

// reply is a command's reply: +PONG to PING, +OK to anything else.
func reply(name []byte) []byte {
	if bytes.EqualFold(name, []byte("PING")) {
		return pongReply
	}
	return okReply
}

// cmd is a command handed to the batcher: a SET (its arguments' bytes go to
// disk) or, in mode direct, any other command, whose reply must not overtake
// the SETs before it.
type cmd struct {
	args  []byte
	isSet bool
	reply []byte        // mode direct: what the batcher writes back
	conn  net.Conn      // mode direct
	done  chan struct{} // mode wait: the batch is on disk
}

// batcher commits what the connections hand it, a batch at a time: whatever
// queued while the previous batch was written.
func batcher(d *disk, in chan cmd, direct bool) {
	var buf []byte
	for c := range in {
		batch := []cmd{c}
	more:
		for {
			select {
			case c := <-in:
				batch = append(batch, c)
			default:
				break more
			}
		}
		buf = buf[:0]
		sets := false
		for _, c := range batch {
			buf = append(buf, c.args...)
			sets = sets || c.isSet
		}
		if sets {
			d.commit(buf)
		}
		for _, c := range batch {
			if direct {
				c.conn.Write(c.reply)
			} else {
				c.done <- struct{}{}
			}
		}
	}
}

// serveConn is a connection's goroutine in modes wait and direct.
func serveConn(c net.Conn, in chan cmd, direct bool) {
	defer c.Close()
	done := make(chan struct{}, 1)
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		pending = append(pending, buf[:n]...)
		for {
			name, args, rest, ok := parse(pending)
			if !ok {
				break
			}
			pending = rest
			isSet := bytes.EqualFold(name, []byte("SET"))
			switch {
			case direct:
				in <- cmd{args: args, isSet: isSet, reply: reply(name), conn: c}
			case isSet:
				in <- cmd{args: args, isSet: true, done: done}
				<-done
				c.Write(okReply)
			default:
				c.Write(reply(name))
			}
		}
	}
}

func listenGo(port int, d *disk, direct bool) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	in := make(chan cmd, 4096)
	go batcher(d, in, direct)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go serveConn(c, in, direct)
	}
}

// epollLoop is mode epoll: everything on one locked thread.
func epollLoop(port int, d *disk) error {
	runtime.LockOSThread()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return err
	}
	unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return err
	}
	if err := unix.Listen(ln, 1024); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(0)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, ln, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ln)}); err != nil {
		return err
	}
	pending := map[int][]byte{} // a connection's unparsed input
	out := map[int][]byte{}     // the replies of this turn of the loop, per connection
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	var batch []byte // this turn's SETs
	sets := false
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		} else if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == ln {
				for {
					c, _, err := unix.Accept4(ln, unix.SOCK_NONBLOCK)
					if err != nil {
						break
					}
					unix.SetsockoptInt(c, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
					pending[c] = nil
					unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c)})
				}
				continue
			}
			m, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			if m <= 0 || err != nil {
				unix.Close(fd)
				delete(pending, fd)
				delete(out, fd)
				continue
			}
			p := append(pending[fd], buf[:m]...)
			for {
				name, args, rest, ok := parse(p)
				if !ok {
					break
				}
				p = rest
				if bytes.EqualFold(name, []byte("SET")) {
					batch = append(batch, args...)
					sets = true
				}
				out[fd] = append(out[fd], reply(name)...)
			}
			pending[fd] = p
		}
		if sets {
			d.commit(batch)
			batch, sets = batch[:0], false
		}
		for fd, b := range out {
			unix.Write(fd, b) // a reply larger than the socket's buffer is cut short: the toy's clients read one at a time
			delete(out, fd)
		}
	}
}

func main() {
	mode := flag.String("mode", "wait", "wait, direct or epoll")
	port := flag.Int("port", 16390, "port on 127.0.0.1")
	file := flag.String("file", "connmodel.dat", "the preallocated file the SETs go to (1 GiB)")
	flag.Parse()
	d, err := openDisk(*file)
	if err != nil {
		log.Fatal(err)
	}
	switch *mode {
	case "wait", "direct":
		err = listenGo(*port, d, *mode == "direct")
	case "epoll":
		err = epollLoop(*port, d)
	default:
		err = fmt.Errorf("connmodel: unknown -mode %q", *mode)
	}
	if err != nil {
		log.Fatal(err)
	}
}
