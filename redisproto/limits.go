package redisproto

import (
	"net"
	"time"
)

// Limits against abusive clients (besides the request limits in Limits):
// connected clients (Config.MaxClients) and queued output per client
// (Config.MaxOutputBuffer). Each refusal is counted (SecurityCounters).

// defaultMaxClients is Redis's maxclients default.
const defaultMaxClients = 10000

// errMaxClients is what Redis writes to a connection over maxclients before
// closing it.
const errMaxClients = "-ERR max number of clients reached\r\n"

func (s *Server) maxClients() int {
	if s.cfg.MaxClients > 0 {
		return s.cfg.MaxClients
	}
	return defaultMaxClients
}

func (s *Server) maxOutput() int64 {
	if s.cfg.MaxOutputBuffer > 0 {
		return s.cfg.MaxOutputBuffer
	}
	return maxPending
}

// refuse answers a connection over MaxClients and closes it, without holding
// up the accept loop for a client that does not read.
func (s *Server) refuse(nc net.Conn) {
	s.stats.maxClients.Add(1)
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte(errMaxClients))
	nc.Close()
}

// SecurityCounters are the front door's refusals since start, for metrics.
type SecurityCounters struct {
	NoAuth            int64 // commands answered NOAUTH
	NoPerm            int64 // commands answered NOPERM
	AuthFailures      int64 // failed AUTH / HELLO AUTH / HTTP credentials
	MaxClients        int64 // connections refused at the client limit
	OutputDisconnects int64 // clients disconnected past the output buffer limit or stalled (output.go)
	ProtocolErrors    int64 // requests refused as malformed or over a request limit
	AcceptErrors      int64 // failed accepts, retried (Server.Serve)
	IdleTimeouts      int64 // clients closed idle past Config.IdleTimeout
	AuthTimeouts      int64 // clients closed unauthenticated past Config.AuthTimeout
	AuthThrottled     int64 // authentication attempts slowed down or refused (authlimit.go)
}

// SecurityCounters reads the refusal counters.
func (s *Server) SecurityCounters() SecurityCounters {
	return SecurityCounters{NoAuth: s.stats.noAuth.Load(), NoPerm: s.stats.noPerm.Load(),
		AuthFailures: s.stats.authFailures.Load(), MaxClients: s.stats.maxClients.Load(),
		OutputDisconnects: s.stats.outputDisconnects.Load(), ProtocolErrors: s.stats.protocolErrors.Load(),
		AcceptErrors: s.stats.acceptErrors.Load(), IdleTimeouts: s.stats.idleTimeouts.Load(),
		AuthTimeouts: s.stats.authTimeouts.Load(), AuthThrottled: s.stats.authThrottled.Load()}
}
