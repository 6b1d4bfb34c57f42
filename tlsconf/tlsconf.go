// Package tlsconf loads lockd's TLS material (-tls-cert, -tls-key, -tls-ca,
// -peer-tls-ca) and builds the tls.Configs of its three doors: the client
// ports (RESP and HTTP), the peer port's listener and its dialer (mutual
// TLS). The certificate pair is re-read on Reload (SIGHUP) and by Watch when
// the files change; every Config built here asks the Loader for the current
// pair on each handshake, so new connections see a new certificate without a
// restart. The CA bundles are read once, at Load.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Load.
var (
	// ErrIncomplete: only one of the certificate and the key was given.
	ErrIncomplete = errors.New("tls: -tls-cert and -tls-key go together")
	// ErrNoCA: client certificates are required but no CA bundle says
	// which ones to accept.
	ErrNoCA = errors.New("tls: -tls-client-auth needs -tls-ca")
	// ErrBadCA: the CA bundle holds no PEM certificate.
	ErrBadCA = errors.New("tls: the CA bundle holds no PEM certificate")
)

// Options names the files. CertFile and KeyFile are this node's certificate
// (served on the client ports and, with a CA, presented to and by peers);
// CAFile, when set, turns on mutual TLS on the peer port; ClientAuth makes
// the client ports require a client certificate signed by CAFile too.
// PeerCAFile, when set, is the peer port's CA of its own: the peer port (and
// this node dialing peers or -join's member) trusts it alone, and CAFile
// only verifies clients. Without it the peer port trusts CAFile, which may
// also sign client certificates: a peer's certificate must then also name a
// member of the cluster (MembersOnly).
type Options struct {
	CertFile, KeyFile, CAFile string
	ClientAuth                bool
	PeerCAFile                string
}

// Enabled reports whether any TLS was asked for.
func (o Options) Enabled() bool {
	return o.CertFile != "" || o.KeyFile != "" || o.CAFile != "" || o.PeerCAFile != ""
}

// Loader holds the current certificate pair and the CA pools.
type Loader struct {
	opts    Options
	log     *slog.Logger
	cas     *x509.CertPool // nil without CAFile
	peerCAs *x509.CertPool // PeerCAFile's, else cas
	clients *x509.CertPool // the client ports' client CAs: cas, and PeerCAFile's (-join presents a node's certificate)
	cert    atomic.Pointer[tls.Certificate]

	mu    sync.Mutex // serialises Reload
	stamp fileStamp  // of the pair last loaded
}

// fileStamp identifies a version of the two files cheaply.
type fileStamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func stampOf(cert, key string) (fileStamp, error) {
	ci, err := os.Stat(cert)
	if err != nil {
		return fileStamp{}, err
	}
	ki, err := os.Stat(key)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{ci.ModTime(), ki.ModTime(), ci.Size(), ki.Size()}, nil
}

// Load reads the pair and the CA bundle. A nil log discards output.
func Load(opts Options, log *slog.Logger) (*Loader, error) {
	if (opts.CertFile == "") != (opts.KeyFile == "") || opts.CertFile == "" && (opts.CAFile != "" || opts.PeerCAFile != "") {
		return nil, ErrIncomplete
	}
	if opts.ClientAuth && opts.CAFile == "" {
		return nil, ErrNoCA
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Loader{opts: opts, log: log.With("component", "tls")}
	var err error
	if l.cas, err = readPool(opts.CAFile); err != nil {
		return nil, err
	}
	if l.peerCAs, err = readPool(opts.PeerCAFile); err != nil {
		return nil, err
	}
	if l.peerCAs == nil {
		l.peerCAs = l.cas
	}
	l.clients = l.cas
	if opts.CAFile != "" && opts.PeerCAFile != "" {
		if l.clients, err = readPool(opts.CAFile, opts.PeerCAFile); err != nil {
			return nil, err
		}
	}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
}

// readPool reads CA bundles into one pool (nil, nil for no file).
func readPool(files ...string) (*x509.CertPool, error) {
	var p *x509.CertPool
	for _, file := range files {
		if file == "" {
			continue
		}
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls: CA bundle: %w", err)
		}
		if p == nil {
			p = x509.NewCertPool()
		}
		if !p.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s", ErrBadCA, file)
		}
	}
	return p, nil
}

// Reload re-reads the certificate pair. On failure the previous pair stays
// in use and the error is returned (and logged).
func (l *Loader) Reload() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, _ := stampOf(l.opts.CertFile, l.opts.KeyFile)
	pair, err := tls.LoadX509KeyPair(l.opts.CertFile, l.opts.KeyFile)
	if err != nil {
		err = fmt.Errorf("tls: loading %s and %s: %w", l.opts.CertFile, l.opts.KeyFile, err)
		if l.cert.Load() != nil {
			l.log.Error("certificate reload failed; keeping the previous certificate", "err", err)
		}
		return err
	}
	old := l.cert.Swap(&pair)
	l.stamp = st
	if old != nil {
		l.log.Info("certificate reloaded", "cert", l.opts.CertFile)
	}
	return nil
}

// Watch polls the files every interval until ctx ends and reloads the pair
// when either file's size or modification time changes (a half-written pair
// fails to load and is retried at the next change or tick).
func (l *Loader) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := stampOf(l.opts.CertFile, l.opts.KeyFile)
		l.mu.Lock()
		changed := err == nil && st != l.stamp
		l.mu.Unlock()
		if changed {
			l.Reload() // logged
		}
	}
}

// Certificate returns the pair in use.
func (l *Loader) Certificate() *tls.Certificate { return l.cert.Load() }

func (l *Loader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return l.cert.Load(), nil
}

func (l *Loader) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return l.cert.Load(), nil
}

// ServerConfig is the client ports' configuration: the current pair, and
// with ClientAuth a client certificate signed by the CA is required (or by
// the peer CA: a node that joins presents its own).
func (l *Loader) ServerConfig() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate}
	if l.opts.ClientAuth {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = l.clients
	}
	return c
}

// PeerConfigs returns the peer port's listener and dialer configurations
// (mutual TLS: each side presents the current pair and accepts only
// certificates signed by the peer CA: PeerCAFile, else CAFile), or nil, nil
// without either bundle. A node certificate must therefore allow both
// server and client authentication and name the host that peers dial (its
// advertise address). Without PeerCAFile the caller must also check that an
// inbound certificate names a member (MembersOnly).
func (l *Loader) PeerConfigs() (listen, dial *tls.Config) {
	if l.peerCAs == nil {
		return nil, nil
	}
	listen = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: l.peerCAs}
	dial = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: l.peerCAs, GetClientCertificate: l.getClientCertificate}
	return listen, dial
}

// MembersOnly reports whether the peer port trusts the client ports' CA
// (-tls-ca without -peer-tls-ca): that CA may sign RESP client
// certificates, so a certificate is a peer's only if it also names a member
// of the cluster.
func (l *Loader) MembersOnly() bool { return l.opts.PeerCAFile == "" && l.cas != nil }

// ClientConfig is for this node dialing another node's client port (-join):
// the peer CA (PeerCAFile, else CAFile; the system roots without either)
// verifies the member, whose certificate is a node's, and the node's pair
// is presented if asked for.
func (l *Loader) ClientConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: l.peerCAs, GetClientCertificate: l.getClientCertificate}
}

// DialConfig is the TLS configuration of a connection this node opens to a
// server outside the cluster (a Redis master that REPLICAOF follows): the
// server's certificate verified against caFile (the system's roots when
// empty), and certFile/keyFile presented when set (read once).
func DialConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	pool, err := readPool(caFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
