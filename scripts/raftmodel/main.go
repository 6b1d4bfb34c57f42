package main

// Parent: starts 3 node processes (re-exec with -node i), waits until every
// group has its intended leader (group g led by node g%3), runs C client
// goroutines against the leaders, and reports ops/s and node CPU per op.

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	groups := flag.Int("groups", 1, "raft groups")
	clients := flag.Int("clients", 64, "client goroutines")
	duration := flag.Duration("duration", 6*time.Second, "measured window")
	warmup := flag.Duration("warmup", time.Second, "unmeasured load before the window")
	mode := flag.String("mode", "shared", "shared|pergroup")
	node := flag.Int("node", -1, "internal: run as node i")
	dir := flag.String("dir", "", "internal: data dir")
	flag.BoolVar(&propBatch, "propbatch", true, "step all proposals drained in one iteration for a group as one MsgProp")
	flag.Parse()
	if *mode != "shared" && *mode != "pergroup" {
		log.Fatal("bad -mode")
	}
	if *node >= 0 {
		runNode(*node, *groups, *mode, *dir)
		return
	}
	runParent(*groups, *clients, *duration, *warmup, *mode)
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func (c *child) send(s string) { io.WriteString(c.stdin, s+"\n") }

func (c *child) expect(prefix string, timeout time.Duration) string {
	t := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				log.Fatalf("node %d exited", c.cmd.Process.Pid)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-t:
			log.Fatalf("timeout waiting for %s", prefix)
		}
	}
}

var children []*child
var tmpDir string

func cleanup() {
	for _, c := range children {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
}

func fatal(format string, a ...any) {
	cleanup()
	log.Fatalf(format, a...)
}

func runParent(groups, clients int, duration, warmup time.Duration, mode string) {
	var err error
	tmpDir, err = os.MkdirTemp("", "mraft-")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	self, _ := os.Executable()
	for i := range nNodes {
		cmd := exec.Command(self, "-node", strconv.Itoa(i), "-groups", strconv.Itoa(groups),
			"-mode", mode, "-dir", tmpDir, "-propbatch="+strconv.FormatBool(propBatch))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fatal("%v", err)
		}
		c := &child{cmd: cmd, stdin: in, lines: make(chan string, 16)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
			close(c.lines)
		}()
		children = append(children, c)
	}
	for _, c := range children {
		c.expect("CONNECTED", 20*time.Second)
	}
	for _, c := range children {
		c.send("GO")
	}
	for _, c := range children {
		c.expect("READY", 30*time.Second)
	}

	var ops, fails atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conns [nNodes]net.Conn
			var brs [nNodes]*bufio.Reader
			req := make([]byte, 0, 64)
			var rep [1]byte
			for n := 0; !stop.Load(); n++ {
				g := (i + n) % groups
				nd := g % nNodes
				if conns[nd] == nil {
					c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port(nd)))
					if err != nil {
						fatal("client dial: %v", err)
					}
					c.(*net.TCPConn).SetNoDelay(true)
					c.Write([]byte{'C'})
					conns[nd], brs[nd] = c, bufio.NewReader(c)
				}
				payload := fmt.Sprintf("k%d-%d\x00value-%010d", i, n%1000, n)
				req = req[:0]
				req = binary.LittleEndian.AppendUint32(req, uint32(len(payload)))
				req = binary.LittleEndian.AppendUint32(req, uint32(g))
				req = append(req, payload...)
				if _, err := conns[nd].Write(req); err != nil {
					return
				}
				if _, err := io.ReadFull(brs[nd], rep[:]); err != nil {
					return
				}
				if rep[0] == 1 {
					ops.Add(1)
				} else {
					fails.Add(1)
				}
			}
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
		}()
	}
	time.Sleep(warmup)
	s0 := stats()
	cpu0 := cpuTicks()
	ops0, t0 := ops.Load(), time.Now()
	time.Sleep(duration)
	cpu1 := cpuTicks()
	ops1, t1 := ops.Load(), time.Now()
	s1 := stats()
	stop.Store(true)
	n := float64(ops1 - ops0)
	secs := t1.Sub(t0).Seconds()
	cpuUs := float64(cpu1-cpu0) * 1e6 / 100 // CLK_TCK = 100
	fmt.Printf("propbatch=%v mode=%s groups=%d ops/s=%.0f cpu_us_per_op=%.1f fsyncs_per_op=%.3f frames_per_op=%.3f msgs_per_op=%.3f node_cpu_cores=%.2f fails=%d\n",
		propBatch, mode, groups, n/secs, cpuUs/n, float64(s1[0]-s0[0])/n, float64(s1[1]-s0[1])/n,
		float64(s1[2]-s0[2])/n, cpuUs/1e6/secs, fails.Load())
	cleanup()
	children = nil
	tmpDir = ""
	os.Exit(0)
}

// sum of fsyncs, frames, msgs over nodes
func stats() [3]uint64 {
	var s [3]uint64
	for _, c := range children {
		c.send("STATS")
	}
	for _, c := range children {
		f := strings.Fields(c.expect("STATS", 10*time.Second))
		for i := range 3 {
			v, _ := strconv.ParseUint(f[i+1], 10, 64)
			s[i] += v
		}
	}
	return s
}

// utime+stime of all node processes, in clock ticks
func cpuTicks() uint64 {
	var t uint64
	for _, c := range children {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
		if err != nil {
			fatal("%v", err)
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		t += u + st
	}
	return t
}
