package group

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/mux"
)

// Who may speak on the peer port (SECURITY.md, "Peer port"). With
// Config.PeerTLSMembers the peer port's CA also signs certificates that are
// not nodes' (the RESP client certificates of -tls-client-auth), so a
// verified certificate is taken as a peer's only when it names a member: it
// must be valid (x509 VerifyHostname: a DNS or IP SAN) for the host of a
// peer address in the latest configuration of one of this node's groups.
// That is the host peers dial, which a node's certificate already names for
// the dial to verify, so existing node certificates pass unchanged. The
// configuration is read at each inbound handshake, so a member added or
// removed is let in or shut out from its next connection on. Until this
// node has a configuration of its own (a node that is joining, or one
// started with -peers before it bootstraps), the hosts of Config.Peers and
// Config.JoinMembers stand in for it.

// ErrNotMember: a verified peer certificate names no member of the cluster.
var ErrNotMember = errors.New("the certificate names no member of the cluster")

// configurationWait bounds how long an inbound handshake waits for a group's
// configuration (Raft's main loop answers it; a long snapshot install can
// hold that loop); past it the hosts last read stand in.
const configurationWait = 2 * time.Second

// MemberCheck is the peer port's TLS Check under Config.PeerTLSMembers.
type MemberCheck struct {
	seeds  []string                 // hosts of Config.Peers and Config.JoinMembers
	groups atomic.Pointer[[]*Store] // set once the node's groups are open
	last   atomic.Pointer[[]string] // the member hosts last read in time
}

// NewMemberCheck returns the check of a node configured by cfg.
func NewMemberCheck(cfg Config) *MemberCheck {
	c := &MemberCheck{}
	for _, p := range cfg.Peers {
		c.seeds = append(c.seeds, hostOf(p.Addr))
	}
	for _, a := range cfg.JoinMembers {
		c.seeds = append(c.seeds, hostOf(a))
	}
	return c
}

// SetGroups publishes the node's groups: from then on their configurations
// decide.
func (c *MemberCheck) SetGroups(groups []*Store) { c.groups.Store(&groups) }

// hostOf is addr's host ("" when addr is not host:port).
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return h
}

// Check accepts leaf when it names the host of a member (see above): the
// TLS Check, whose error refuses the handshake (ErrNotMember).
func (c *MemberCheck) Check(leaf *x509.Certificate) error {
	hosts := c.hosts()
	for _, h := range hosts {
		if h != "" && leaf.VerifyHostname(h) == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: it names %s; the members' hosts are %s", ErrNotMember, certNames(leaf), strings.Join(hosts, ", "))
}

// hosts are the member hosts: those of every group's latest configuration,
// or the seeds while there is none.
func (c *MemberCheck) hosts() []string {
	var hosts []string
	seen := map[string]bool{}
	late := false
	if gs := c.groups.Load(); gs != nil {
		for _, s := range *gs {
			servers, ok := serversWithin(s.raft, configurationWait)
			late = late || !ok
			for _, srv := range servers {
				if h := hostOf(string(srv.Address)); !seen[h] {
					seen[h] = true
					hosts = append(hosts, h)
				}
			}
		}
	}
	switch {
	case late:
		if last := c.last.Load(); last != nil {
			return *last
		}
	case len(hosts) > 0:
		c.last.Store(&hosts)
	}
	if len(hosts) == 0 {
		return c.seeds
	}
	return hosts
}

// serversWithin is r's latest configuration, if Raft answers within d (ok
// false when it does not, or cannot).
func serversWithin(r consensus, d time.Duration) ([]raft.Server, bool) {
	if r == nil {
		return nil, false
	}
	var servers []raft.Server
	var answered bool
	done := make(chan struct{})
	go func() {
		f := r.GetConfiguration()
		if f.Error() == nil {
			servers, answered = f.Configuration().Servers, true
		}
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return servers, answered
	case <-t.C:
		return nil, false
	}
}

// certNames lists the names a certificate holds, for the refusal message.
func certNames(cert *x509.Certificate) string {
	names := []string{"CN=" + cert.Subject.CommonName}
	names = append(names, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	return strings.Join(names, ", ")
}

// PeerTLS is cfg.PeerTLS with the member check on, under PeerTLSMembers.
func PeerTLS(cfg Config, c *MemberCheck) *mux.TLS {
	if cfg.PeerTLS == nil || !cfg.PeerTLSMembers || c == nil {
		return cfg.PeerTLS
	}
	t := *cfg.PeerTLS
	t.Check = c.Check
	return &t
}
