package pemkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/youmark/pkcs8"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// equaler is a private key that compares itself with another.
type equaler interface {
	Equal(x crypto.PrivateKey) bool
}

// Every form of key is read, RSA and EC; a wrong passphrase on an
// encrypted one is a configuration error naming the file, never the
// passphrase.
func TestRead(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const pass = "k3y-pass"
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	traditional := func(typ string, der []byte) *pem.Block {
		b, err := x509.EncryptPEMBlock(rand.Reader, typ, der, []byte(pass), x509.PEMCipherAES256)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ecDER := must(x509.MarshalECPrivateKey(ecKey))
	for _, c := range []struct {
		form      string
		key       equaler
		block     *pem.Block
		encrypted bool
	}{
		{"encrypted PKCS#8", rsaKey, &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: must(pkcs8.MarshalPrivateKey(rsaKey, []byte(pass), nil))}, true},
		{"PKCS#8", rsaKey, &pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(rsaKey))}, false},
		{"encrypted PKCS#1", rsaKey, traditional("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), true},
		{"PKCS#1", rsaKey, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}, false},
		{"encrypted EC", ecKey, traditional("EC PRIVATE KEY", ecDER), true},
		{"encrypted EC PKCS#8", ecKey, &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: must(pkcs8.MarshalPrivateKey(ecKey, []byte(pass), nil))}, true},
	} {
		path := filepath.Join(t.TempDir(), "key.pem")
		if err := os.WriteFile(path, pem.EncodeToMemory(c.block), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(path, pass)
		if err != nil || !c.key.Equal(got) {
			t.Errorf("%s: %v", c.form, err)
		}
		if !c.encrypted {
			continue
		}
		_, err = Read(path, "wr0ng-pass")
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "could not decrypt key_file "+path) || strings.Contains(err.Error(), "wr0ng-pass") {
			t.Errorf("%s with a wrong passphrase: %v", c.form, err)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.pem"), ""); !exit.Is(err, exit.Configuration) {
		t.Errorf("a missing file: %v", err)
	}
}

// selfSigned writes a certificate for key, PEM, to a file and returns its
// path.
func selfSigned(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etl_craft_cert"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A key_file login presents its certificate with its key, decrypted with
// the secret; a wrong passphrase, or a certificate of another key, fails
// with a configuration error naming the files and not the passphrase.
func TestClientCertificate(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := pkcs8.MarshalPrivateKey(key, []byte("right-pass"), nil)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "client.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	own, foreign := selfSigned(t, key), selfSigned(t, other)
	cert := func(certFile, pass string) (tls.Certificate, error) {
		return ClientCertificate(keyFile, certFile, func() (string, error) { return pass, nil })()
	}
	if c, err := cert(own, "right-pass"); err != nil || !key.Equal(c.PrivateKey) || len(c.Certificate) != 1 {
		t.Errorf("right passphrase: %v", err)
	}
	for _, c := range []struct{ certFile, pass, want string }{
		{own, "wrong-pass", "could not decrypt key_file " + keyFile},
		{foreign, "right-pass", "cert_file " + foreign + " is not the certificate of the key in key_file " + keyFile},
		{"", "right-pass", "auth_mode key_file needs the client certificate"},
	} {
		if _, err := cert(c.certFile, c.pass); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), c.want) ||
			strings.Contains(err.Error(), c.pass) {
			t.Errorf("%s, %s: %v", c.certFile, c.pass, err)
		}
	}
}
