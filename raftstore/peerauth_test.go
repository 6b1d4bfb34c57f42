package raftstore

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/lockd/lockd/raftstore/group"
)

// names lists the names a certificate holds, for a failure's message.
func names(c *x509.Certificate) string {
	return fmt.Sprint("CN=", c.Subject.CommonName, " ", c.DNSNames, " ", c.IPAddresses)
}

// leaf is a certificate holding names (an IP or a DNS name each), as the
// member check sees it once TLS has verified it.
func leaf(cn string, names ...string) *x509.Certificate {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			c.IPAddresses = append(c.IPAddresses, ip)
		} else {
			c.DNSNames = append(c.DNSNames, n)
		}
	}
	return c
}

// With -tls-ca alone a verified certificate is a peer's only while it names
// the host of a member's peer address in the node's latest configuration:
// a RESP client certificate (a user's name, no host) never is, and a host is
// let in when it is added to the configuration and shut out when removed.
func TestMemberCheckFollowsConfiguration(t *testing.T) {
	nd := openLoneNode(t, Config{})
	check := nd.members.Check
	if err := check(leaf("n1", "127.0.0.1")); err != nil {
		t.Fatalf("the member's own certificate: %v", err)
	}
	for _, c := range []*x509.Certificate{leaf("payouts"), leaf("127.0.0.1"), leaf("app", "app.example"), leaf("n9", "127.0.0.9")} {
		if err := check(c); !errors.Is(err, group.ErrNotMember) {
			t.Fatalf("certificate %s: %v, want group.ErrNotMember", names(c), err)
		}
	}
	r := nd.Group(0).Raft()
	// 127.0.0.9: another host, on loopback so that dials to it fail at once.
	if err := r.AddNonvoter("n9", "127.0.0.9:7379", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := check(leaf("n9", "127.0.0.9")); err != nil {
		t.Fatalf("a member just added: %v", err)
	}
	if err := r.RemoveServer("n9", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := check(leaf("n9", "127.0.0.9")); !errors.Is(err, group.ErrNotMember) {
		t.Fatalf("a member removed: %v, want group.ErrNotMember", err)
	}
}

// Until a node has a configuration (it is joining), the peer addresses its
// -join member named, and -peers, stand in: DNS names match as
// VerifyHostname matches them (wildcards included).
func TestMemberCheckSeeds(t *testing.T) {
	c := group.NewMemberCheck(Config{JoinMembers: []string{"n1.lockd.test:7379", "10.0.0.2:7379"},
		Peers: []Peer{{ID: "n3", Addr: "n3.lockd.test:7379"}}})
	for _, ok := range []*x509.Certificate{leaf("n1", "n1.lockd.test"), leaf("n2", "10.0.0.2"), leaf("n3", "*.lockd.test")} {
		if err := c.Check(ok); err != nil {
			t.Errorf("certificate %s: %v", names(ok), err)
		}
	}
	for _, bad := range []*x509.Certificate{leaf("payouts"), leaf("x", "n4.other.test"), leaf("n1.lockd.test")} {
		if err := c.Check(bad); !errors.Is(err, group.ErrNotMember) {
			t.Errorf("certificate %s: %v, want group.ErrNotMember", names(bad), err)
		}
	}
	// Once a group has a configuration, the seeds no longer count.
	nd := openLoneNode(t, Config{JoinMembers: []string{"10.0.0.2:7379"}})
	if err := nd.members.Check(leaf("n2", "10.0.0.2")); !errors.Is(err, group.ErrNotMember) {
		t.Fatalf("a seed after the node has a configuration: %v, want group.ErrNotMember", err)
	}
}
