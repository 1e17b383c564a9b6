package warehouse

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/youmark/pkcs8"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// keyFiles writes key in each PEM form a key_file may hold, encrypted with
// passphrase where the form is, and returns the paths by form.
func keyFiles(t *testing.T, key *rsa.PrivateKey, passphrase string) map[string]string {
	t.Helper()
	encPKCS8, err := pkcs8.MarshalPrivateKey(key, []byte(passphrase), nil)
	if err != nil {
		t.Fatal(err)
	}
	plainPKCS8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	encPKCS1, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), []byte(passphrase), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]*pem.Block{
		"encrypted PKCS#8": {Type: "ENCRYPTED PRIVATE KEY", Bytes: encPKCS8},
		"PKCS#8":           {Type: "PRIVATE KEY", Bytes: plainPKCS8},
		"encrypted PKCS#1": encPKCS1,
		"PKCS#1":           {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)},
	}
	dir := t.TempDir()
	paths := map[string]string{}
	for form, b := range blocks {
		p := filepath.Join(dir, strings.NewReplacer(" ", "_", "#", "").Replace(form)+".pem")
		if err := os.WriteFile(p, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
		paths[form] = p
	}
	return paths
}

// Every form of key is read; a wrong passphrase on an encrypted one is a
// configuration error naming the file, never the passphrase.
func TestReadRSAKey(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for form, path := range keyFiles(t, key, "k3y-pass") {
		got, err := readRSAKey(path, "k3y-pass")
		if err != nil || !got.Equal(key) {
			t.Errorf("%s: %v", form, err)
		}
		if !strings.HasPrefix(form, "encrypted") {
			continue
		}
		_, err = readRSAKey(path, "wr0ng-pass")
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "key_file "+path) || strings.Contains(err.Error(), "wr0ng-pass") {
			t.Errorf("%s with a wrong passphrase: %v", form, err)
		}
	}
	if _, err := readRSAKey(filepath.Join(t.TempDir(), "none.pem"), ""); !exit.Is(err, exit.Configuration) {
		t.Errorf("a missing file: %v", err)
	}
}

// A key_file login to Snowflake sends a JWT signed with the user's key,
// whose subject is ACCOUNT.USER, with the SNOWFLAKE_JWT authenticator.
func TestSnowflakeKeyPair(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	svc := newSnowflakeService(t)
	opts := svc.options(AuthKeyFile)
	opts.KeyFile = keyFiles(t, key, "k3y-pass")["encrypted PKCS#8"]
	opts.Password = func() (string, error) { return "k3y-pass", nil }
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	login := svc.logins.all()[0].data
	signed, _ := login["TOKEN"].(string)
	tok, err := jwt.Parse(signed, func(*jwt.Token) (any, error) { return &key.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"}))
	if err != nil || login["AUTHENTICATOR"] != "SNOWFLAKE_JWT" || login["PASSWORD"] != nil {
		t.Fatalf("login %v: %v", login, err)
	}
	if sub, _ := tok.Claims.GetSubject(); sub != "XY12345.LOADER" {
		t.Fatalf("subject %q", sub)
	}

	opts.Password = func() (string, error) { return "wr0ng-pass", nil }
	bad, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "could not read the private key in key_file "+opts.KeyFile) || strings.Contains(err.Error(), "wr0ng") {
		t.Fatalf("a wrong passphrase: %v", err)
	}
}
