package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Certs is a throw-away certificate authority with a server certificate
// (for 127.0.0.1 and localhost, also usable as a client certificate, as Redis
// uses it for replication, the cluster bus and Sentinel's connections) and a
// client certificate, written as PEM files into a temporary directory.
type Certs struct {
	Dir                   string
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	pool                  *x509.CertPool
	client                tls.Certificate
}

// NewCerts generates a CA and its certificates for one test.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	c := &Certs{Dir: t.TempDir()}
	caKey, caCert, caDER := c.issue(t, "solocron test CA", nil, nil, true, nil)
	c.CAFile = c.write(t, "ca.crt", "CERTIFICATE", caDER)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(caCert)

	sKey, _, sDER := c.issue(t, "redis", caKey, caCert, false, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ServerCert = c.write(t, "server.crt", "CERTIFICATE", sDER)
	c.ServerKey = c.writeKey(t, "server.key", sKey)

	cKey, _, cDER := c.issue(t, "solocron", caKey, caCert, false, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	c.ClientCert = c.write(t, "client.crt", "CERTIFICATE", cDER)
	c.ClientKey = c.writeKey(t, "client.key", cKey)
	var err error
	if c.client, err = tls.LoadX509KeyPair(c.ClientCert, c.ClientKey); err != nil {
		t.Fatalf("redistest: client key pair: %v", err)
	}
	return c
}

// ClientConfig is what a client needs to reach the servers: the CA, and the
// client certificate (Redis requires one: --tls-auth-clients yes).
func (c *Certs) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{c.client}, MinVersion: tls.VersionTLS12}
}

// ServerArgs are the redis-server arguments that serve TLS with these
// certificates and require client certificates; replication and the cluster
// bus run over TLS too.
func (c *Certs) ServerArgs() []string {
	return []string{
		"--tls-cert-file", c.ServerCert, "--tls-key-file", c.ServerKey, "--tls-ca-cert-file", c.CAFile,
		"--tls-auth-clients", "yes", "--tls-replication", "yes",
	}
}

var tlsProbe struct {
	once sync.Once
	err  error
}

// requireTLS skips the test (fails it, when Required) if redis-server was
// built without TLS: such a build refuses the tls-port directive.
func requireTLS(t testing.TB, bin string) {
	t.Helper()
	tlsProbe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Listening nowhere, a TLS-capable server exits at once.
		out, _ := exec.CommandContext(ctx, bin, "--port", "0", "--tls-port", "0").CombinedOutput()
		if !strings.Contains(string(out), "not to listen anywhere") && !strings.Contains(string(out), "not listen anywhere") {
			tlsProbe.err = fmt.Errorf("%s seems to lack TLS support (built without BUILD_TLS=yes?): %s", bin, strings.TrimSpace(string(out)))
		}
	})
	if tlsProbe.err == nil {
		return
	}
	if Required() {
		t.Fatal(tlsProbe.err.Error() + " (SOLOCRON_REQUIRE_REDIS=1 forbids skipping)")
	}
	t.Skip(tlsProbe.err.Error())
}

// StartTLS starts a redis-server that speaks only TLS (no plain port) with
// the given certificates; extra arguments as for Start. Its TLS field holds
// the client configuration, which Client uses.
func StartTLS(t testing.TB, certs *Certs, extra ...string) *Server {
	t.Helper()
	return startServer(t, certs, nil, append(certs.ServerArgs(), extra...))
}

func (c *Certs) issue(t testing.TB, cn string, parentKey *ecdsa.PrivateKey, parent *x509.Certificate, ca bool, usage []x509.ExtKeyUsage) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: key: %v", err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatalf("redistest: certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("redistest: certificate: %v", err)
	}
	return key, cert, der
}

func (c *Certs) write(t testing.TB, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(c.Dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return path
}

func (c *Certs) writeKey(t testing.TB, name string, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c.write(t, name, "EC PRIVATE KEY", der)
}
