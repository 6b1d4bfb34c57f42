package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/tlsconf"
)

// DefaultTLSWatchInterval is how often the certificate files are checked for
// a change when Config.TLSWatchInterval is 0.
const DefaultTLSWatchInterval = 10 * time.Second

// ErrNoTLS: ReloadTLS was called on a server that runs without TLS.
var ErrNoTLS = errors.New("server: TLS is not configured")

// tlsSetup is what New derives from Config.TLS: the client ports'
// configuration, the peer port's (nil without a CA) and the join client's.
type tlsSetup struct {
	loader *tlsconf.Loader
	client *tls.Config // RESP and HTTP listeners
	peer   *mux.TLS    // nil: plain peer port
	join   *tls.Config // dialing a member's RESP port
}

// loadTLS loads the files named in cfg.TLS; nil, nil when TLS is off.
func (s *Server) loadTLS() (*tlsSetup, error) {
	if !s.cfg.TLS.Enabled() {
		return nil, nil
	}
	l, err := tlsconf.Load(s.cfg.TLS, s.log)
	if err != nil {
		return nil, err
	}
	t := &tlsSetup{loader: l, client: l.ServerConfig(), join: l.ClientConfig()}
	if ln, dial := l.PeerConfigs(); ln != nil {
		t.peer = &mux.TLS{Listen: ln, Dial: dial}
	}
	return t, nil
}

// watchTLS reloads the certificate pair when its files change, until Close.
func (s *Server) watchTLS() {
	if s.tls == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch = cancel
	go s.tls.loader.Watch(ctx, cmp.Or(s.cfg.TLSWatchInterval, DefaultTLSWatchInterval))
}

// ReloadTLS re-reads the certificate pair (lockd calls it on SIGHUP); new
// connections on every port present the new certificate, existing ones
// keep theirs. On failure the previous pair stays in use. It returns
// ErrNoTLS when the server runs without TLS.
func (s *Server) ReloadTLS() error {
	if s.tls == nil {
		return ErrNoTLS
	}
	return s.tls.loader.Reload()
}
