package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/lockd/lockd/raftstore/mux"
	"github.com/lockd/lockd/tlsconf"
	"github.com/redis/go-redis/v9"
)

// DefaultTLSWatchInterval is how often the certificate files are checked for
// a change when Config.TLSWatchInterval is 0.
const DefaultTLSWatchInterval = 10 * time.Second

// ErrNoTLS: ReloadTLS was called on a server that runs without TLS.
var ErrNoTLS = errors.New("server: TLS is not configured")

// tlsSetup is what New derives from Config.TLS: the client ports'
// configuration, the peer port's (nil without a CA) and the join client's.
type tlsSetup struct {
	loader      *tlsconf.Loader
	client      *tls.Config // RESP and HTTP listeners
	peer        *mux.TLS    // nil: plain peer port
	membersOnly bool        // the peer CA is the client CA: peer certificates must name members
	join        *tls.Config // dialing a member's RESP port
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
		t.membersOnly = l.MembersOnly()
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

// peerSecret is the peer port's cluster secret of cfg (nil without one), or
// an error for one too short to be worth having.
func peerSecret(cfg Config) (*mux.Secret, error) {
	if cfg.ClusterSecret == "" {
		if cfg.ClusterSecretOptional {
			return nil, errors.New("-cluster-secret-mode accept needs -cluster-secret")
		}
		return nil, nil
	}
	if len(cfg.ClusterSecret) < mux.MinSecretLen {
		return nil, fmt.Errorf("-cluster-secret: %w (%d given; e.g. openssl rand -hex 32)", mux.ErrShortSecret, len(cfg.ClusterSecret))
	}
	return &mux.Secret{Key: []byte(cfg.ClusterSecret), Optional: cfg.ClusterSecretOptional}, nil
}

// warnOpenPeerPort logs, at Error, a node that asks clients for a password
// while anyone who reaches its peer port on a non-loopback address can
// send it Raft traffic and forwarded requests: no TLS, no cluster secret.
// lockd starts anyway: refusing would stop the upgraded nodes of clusters
// that run so on a private network, which can only add the secret with a
// rolling restart (docs/operations.md).
func (s *Server) warnOpenPeerPort(secret *mux.Secret) {
	cfg := s.cfg
	if cfg.RequirePass == "" || secret != nil && !secret.Optional || s.tls != nil && s.tls.peer != nil || loopbackOnly(cfg.PeerAddr) {
		return
	}
	s.log.Error("SECURITY: the peer port is open to anyone who can reach it: -requirepass guards the client ports only, "+
		"and a peer connection runs any command without a password. Set -cluster-secret (or -tls-ca/-peer-tls-ca), "+
		"or bind -peer-addr to a loopback or firewalled address (SECURITY.md, Peer port)",
		"peer_addr", cfg.PeerAddr, "cluster_secret", secretState(secret))
}

// secretState names the cluster secret's mode for the log.
func secretState(s *mux.Secret) string {
	switch {
	case s == nil:
		return "none"
	case s.Optional:
		return "accept (unauthenticated peers still accepted)"
	}
	return "required"
}

// loopbackOnly reports whether addr (host:port) binds loopback only.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// memberPeerAddrs asks a member (by its RESP address) for the cluster's peer
// addresses (RAFT MEMBERS), retrying (bounded by ctx) while it does not
// answer: the members a joining node lets in on a peer port that requires
// member certificates, until it has a configuration of its own.
func memberPeerAddrs(ctx context.Context, member, password string, tc *tls.Config) ([]string, error) {
	c := redis.NewClient(&redis.Options{Addr: member, Password: password, MaxRetries: -1, TLSConfig: joinTLS(tc, member)})
	defer c.Close()
	for {
		v, err := c.Do(ctx, "RAFT", "MEMBERS").Slice()
		if err == nil {
			var addrs []string
			for _, m := range v {
				if a := fieldOf(m, "addr"); a != "" {
					addrs = append(addrs, a)
				}
			}
			if len(addrs) > 0 {
				return addrs, nil
			}
			err = errors.New("RAFT MEMBERS named no peer address")
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fieldOf is the string value of key in a map reply (RESP3) or a flat
// key-value array (RESP2); "" when absent.
func fieldOf(v any, key string) string {
	switch m := v.(type) {
	case map[any]any:
		s, _ := m[key].(string)
		return s
	case map[string]any:
		s, _ := m[key].(string)
		return s
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if k, _ := m[i].(string); k == key {
				s, _ := m[i+1].(string)
				return s
			}
		}
	}
	return ""
}

// checkClusterSecret, before this node asks to join, authenticates to the
// peer port of each member that member names (mux.Probe), so that a node
// whose -cluster-secret is not the cluster's is refused with a clear error
// instead of being added as a voter that no member can reach. Members that
// do not answer are left for Raft to retry.
func checkClusterSecret(ctx context.Context, member, password string, tc *tls.Config, peer *mux.TLS, secret *mux.Secret) error {
	addrs, err := memberPeerAddrs(ctx, member, password, tc)
	if err != nil {
		return fmt.Errorf("asking %s for its members: %w", member, err)
	}
	for _, a := range addrs {
		err := mux.Probe(a, 5*time.Second, peer, secret)
		if errors.Is(err, mux.ErrPeerAuth) || errors.Is(err, mux.ErrPeerHasNoSecret) {
			return fmt.Errorf("the peer port of member %s refused this node's -cluster-secret (it holds another, or none): %w", a, err)
		}
	}
	return nil
}
