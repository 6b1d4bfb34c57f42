//go:build !linux

package redisproto

// loop is Linux only (loop_linux.go); elsewhere every connection has a
// goroutine of its own.
type loop struct{}

// EnableEventLoop fails where there is no epoll: ErrNoEventLoop.
func (s *Server) EnableEventLoop() error { return ErrNoEventLoop }

func (s *Server) loopClients() int { return 0 }
func (l *loop) take(*conn) bool    { return false }
func (l *loop) wake()              {}

// Without the loop no connection has a descriptor of its own (conn.fd).
func shutdownFD(int) {}
func closeFD(int)    {}
