// Package tlsconf loads lockd's TLS material (-tls-cert, -tls-key, -tls-ca)
// and builds the tls.Configs of its three doors: the client ports (RESP and
// HTTP), the peer port's listener and its dialer (mutual TLS). The
// certificate pair is re-read on Reload (SIGHUP) and by Watch when the files
// change; every Config built here asks the Loader for the current pair on
// each handshake, so new connections see a new certificate without a
// restart. The CA bundle is read once, at Load.
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
// (served on the client ports and, with CAFile, presented to and by peers);
// CAFile, when set, turns on mutual TLS on the peer port; ClientAuth makes
// the client ports require a client certificate signed by CAFile too.
type Options struct {
	CertFile, KeyFile, CAFile string
	ClientAuth                bool
}

// Enabled reports whether any TLS was asked for.
func (o Options) Enabled() bool { return o.CertFile != "" || o.KeyFile != "" || o.CAFile != "" }

// Loader holds the current certificate pair and the CA pool.
type Loader struct {
	opts Options
	log  *slog.Logger
	cas  *x509.CertPool // nil without CAFile
	cert atomic.Pointer[tls.Certificate]

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
	if (opts.CertFile == "") != (opts.KeyFile == "") || opts.CertFile == "" && opts.CAFile != "" {
		return nil, ErrIncomplete
	}
	if opts.ClientAuth && opts.CAFile == "" {
		return nil, ErrNoCA
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Loader{opts: opts, log: log.With("component", "tls")}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: CA bundle: %w", err)
		}
		l.cas = x509.NewCertPool()
		if !l.cas.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s", ErrBadCA, opts.CAFile)
		}
	}
	if err := l.Reload(); err != nil {
		return nil, err
	}
	return l, nil
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
// with ClientAuth a client certificate signed by the CA is required.
func (l *Loader) ServerConfig() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate}
	if l.opts.ClientAuth {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = l.cas
	}
	return c
}

// PeerConfigs returns the peer port's listener and dialer configurations
// (mutual TLS: each side presents the current pair and accepts only
// certificates signed by the CA), or nil, nil without a CA bundle. A node
// certificate must therefore allow both server and client authentication
// and name the host that peers dial (its advertise address).
func (l *Loader) PeerConfigs() (listen, dial *tls.Config) {
	if l.cas == nil {
		return nil, nil
	}
	listen = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: l.cas}
	dial = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: l.cas, GetClientCertificate: l.getClientCertificate}
	return listen, dial
}

// ClientConfig is for this node dialing another node's client port (-join):
// the CA bundle (or the system roots without one) verifies the member, and
// the node's pair is presented if asked for.
func (l *Loader) ClientConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: l.cas, GetClientCertificate: l.getClientCertificate}
}
