package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/shard"
)

// fakeSlots serves CLUSTER SLOTS on 127.0.0.1 as a two-leader cluster would:
// slots 0-8191 led by leaderA, 8192-16383 by leaderB, and INFO with
// cluster_enabled:1. Other commands get +OK (HELLO an error, so that go-redis
// stays on RESP2).
func fakeSlots(t *testing.T, leaderA, leaderB string) string {
	return fakeNode(t, leaderA, leaderB, true)
}

// fakeNode is fakeSlots, or with clustered false a standalone server: INFO
// says cluster_enabled:0 and CLUSTER is refused as redis-server refuses it.
func fakeNode(t *testing.T, leaderA, leaderB string, clustered bool) string {
	t.Helper()
	enabled, clusterReply := "0", "-ERR This instance has cluster support disabled\r\n"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	node := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		id := "id-" + port
		return fmt.Sprintf("*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(host), host, len(port), port, len(id), id)
	}
	if clustered {
		enabled = "1"
		clusterReply = "*2\r\n*3\r\n:0\r\n:8191\r\n" + node(leaderA) + "*3\r\n:8192\r\n:16383\r\n" + node(leaderB)
	}
	info := "# Cluster\r\ncluster_enabled:" + enabled + "\r\n"
	info = "$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n"
	serve := func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n') // *N
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			var args []string
			for range n {
				if _, err := r.ReadString('\n'); err != nil { // $len
					return
				}
				a, err := r.ReadString('\n')
				if err != nil {
					return
				}
				args = append(args, strings.ToLower(strings.TrimSpace(a)))
			}
			reply := "+OK\r\n"
			switch {
			case len(args) > 0 && args[0] == "cluster":
				reply = clusterReply
			case len(args) > 0 && args[0] == "info":
				reply = info
			case len(args) > 0 && args[0] == "hello":
				reply = "-ERR unknown command 'HELLO'\r\n"
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

// planDirect spreads the clients over the leaders CLUSTER SLOTS names, gives
// each uncontended client a hash tag in a slot its leader leads, and puts
// every contended client on the contended name's leader.
func TestPlanDirect(t *testing.T) {
	const a, b = "127.0.0.1:7001", "127.0.0.1:7002"
	addr := fakeSlots(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := &config{addrs: []string{addr}, clients: 6, workload: "uncontended", resp: 2, timeout: 5 * time.Second}
	s := &shared{cfg: cfg, keyPrefix: "lockbench:x"}
	routes, err := planDirect(ctx, cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	per := map[string]int{}
	for i, r := range routes {
		slot := int(shard.Slot([]byte("lockbench:x:u:" + r.tag + "3:7"))) // a name the client would use
		leader := a
		if slot > 8191 {
			leader = b
		}
		if r.addr != leader {
			t.Errorf("client %d: connects to %s, but its names' slot %d is led by %s", i, r.addr, slot, leader)
		}
		if r.tag == "" || tags[r.tag] {
			t.Errorf("client %d: tag %q empty or shared", i, r.tag)
		}
		tags[r.tag] = true
		per[r.addr]++
	}
	if per[a] != 3 || per[b] != 3 {
		t.Errorf("clients per leader %v, want 3 each", per)
	}

	cfg.workload, cfg.names = "contended", 1
	routes, err = planDirect(ctx, cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	want := a
	if shard.Slot([]byte(s.contendedName(0))) > 8191 {
		want = b
	}
	for i, r := range routes {
		if r.addr != want || r.tag != "" {
			t.Errorf("contended client %d: route %+v, want every client on %s", i, r, want)
		}
	}
}

// On a single node (cluster_enabled:0) planDirect sends every client to the
// first address, with no hash tag, and never asks CLUSTER SLOTS (which a
// standalone server refuses).
func TestPlanDirectSingleNode(t *testing.T) {
	addr := fakeNode(t, "127.0.0.1:7001", "127.0.0.1:7002", false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, w := range []string{"uncontended", "contended"} {
		cfg := &config{addrs: []string{addr}, clients: 4, workload: w, names: 1, resp: 2, timeout: 5 * time.Second}
		routes, err := planDirect(ctx, cfg, &shared{cfg: cfg, keyPrefix: "lockbench:x"})
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if len(routes) != 4 {
			t.Fatalf("%s: %d routes, want 4", w, len(routes))
		}
		for i, r := range routes {
			if r.addr != addr || r.tag != "" {
				t.Errorf("%s client %d: route %+v, want %s with no tag", w, i, r, addr)
			}
		}
	}
}
