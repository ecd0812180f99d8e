package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority of a test's own, for TLS between parts
// the test starts (an engine and sandboxd).
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes an authority good for a day.
func NewCA(t T, name string) *CA {
	t.Helper()
	ca := &CA{}
	ca.cert, ca.key, ca.pem = certify(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true,
	}, nil)
	return ca
}

// WriteCert writes the authority's certificate (PEM) to path.
func (ca *CA) WriteCert(t T, path string) {
	t.Helper()
	if err := os.WriteFile(path, ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue writes dir/name.pem and dir/name-key.pem: a server certificate
// for hosts (addresses or names) or, with none, a client certificate.
func (ca *CA) Issue(t T, dir, name string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	_, key, certPEM := certify(t, tmpl, ca)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// certify signs tmpl with a new key, by parent (nil: by itself).
func certify(t T, tmpl *x509.Certificate, parent *CA) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
