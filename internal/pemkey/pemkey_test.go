package pemkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
