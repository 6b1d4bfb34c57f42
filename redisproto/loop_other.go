//go:build !linux

package redisproto

import (
	"net"
	"syscall"
)

// loop is Linux only (loop_linux.go); elsewhere every connection has a
// goroutine of its own.
type loop struct{}

// EnableEventLoop fails where there is no epoll: ErrNoEventLoop.
func (s *Server) EnableEventLoop() error { return ErrNoEventLoop }

func (s *Server) rawConn(net.Conn) syscall.RawConn { return nil }
func (s *Server) loopClients() int                 { return 0 }
func (l *loop) take(*conn) bool                    { return false }
func (l *loop) wake()                              {}

// kill closes c from another goroutine (CLIENT KILL, ACL DELUSER).
func (c *conn) kill() { c.nc.Close() }
