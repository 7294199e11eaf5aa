package plugin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// standIn is a loopback HTTPS server that answers for a real API's host
// name: a certificate for that name, and a resolver that points the name
// at 127.0.0.1. The network guard still checks the address it dials.
type standIn struct {
	srv   *httptest.Server
	roots *x509.CertPool
	res   mapResolver
}

func newStandIn(t *testing.T, host string, h http.Handler) *standIn {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &standIn{srv: srv, roots: roots, res: mapResolver{host: netip.MustParseAddr("127.0.0.1")}}
}

// port is the stand-in's port, for a URL that names the real host.
func (s *standIn) port() string {
	return s.srv.Listener.Addr().(interface{ String() string }).String()[len("127.0.0.1:"):]
}

// mapResolver answers fixed addresses for names; others do not exist.
type mapResolver map[string]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &netErr{host}
}

type netErr struct{ host string }

func (e *netErr) Error() string { return "no such host " + e.host }
