package pgauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// The sts mode builds an RDS IAM token: a SigV4-presigned connect request
// for the user at the server, signed with the environment's AWS
// credentials in the profile's region, valid 15 minutes. A new one is
// built for each connection.
func TestSTSBuildsAnRDSIAMToken(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	password := Password(Login{Mode: ModeSTS, Host: "engine.abc.eu-west-1.rds.amazonaws.com", Port: 5432, User: "etl_craft", Region: "eu-west-1"})
	tok, err := password()
	if err != nil {
		t.Fatal(err)
	}
	host, query, ok := strings.Cut(tok, "?")
	if !ok || host != "engine.abc.eu-west-1.rds.amazonaws.com:5432" {
		t.Fatalf("token %q", tok)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	cred := strings.Split(q.Get("X-Amz-Credential"), "/")
	if q.Get("Action") != "connect" || q.Get("DBUser") != "etl_craft" || q.Get("X-Amz-Expires") != "900" ||
		len(cred) != 5 || cred[0] != "AKIDEXAMPLE" || cred[2] != "eu-west-1" || cred[3] != "rds-db" || q.Get("X-Amz-Signature") == "" {
		t.Fatalf("token query %v", q)
	}
	if strings.Contains(tok, "wJalrXUtnFEMI") {
		t.Fatal("the token holds the secret access key")
	}
}

// The secret modes send the secret itself; key_file sends no password, its
// secret being the key's passphrase; sso and unknown modes fail every
// connection with a configuration error.
func TestModes(t *testing.T) {
	secret := func() (string, error) { return "s3cret", nil }
	for _, m := range []string{"", ModePassword, ModeToken} {
		pw, err := Password(Login{Mode: m, Secret: secret})()
		if err != nil || pw != "s3cret" {
			t.Errorf("%q: %q, %v", m, pw, err)
		}
		if KeyPassphrase(Login{Mode: m, Secret: secret}) != nil {
			t.Errorf("%q: a key passphrase", m)
		}
	}
	if Password(Login{Mode: ModePassword}) != nil {
		t.Error("a login without a secret sends a password")
	}
	if Password(Login{Mode: ModeKeyFile, Secret: secret}) != nil {
		t.Error("a key_file login sends a password")
	}
	for m, want := range map[string]string{
		ModeSSO:    "auth_mode sso is libpq's interactive OAuth device flow",
		"kerberos": "auth_mode kerberos is not a PostgreSQL auth mode",
	} {
		_, err := Password(Login{Mode: m, Secret: secret})()
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// A key_file login's passphrase is checked against its key: the right one
// is returned for the driver, a wrong one fails with a configuration error
// naming the file and not the passphrase; a key that is not encrypted is
// left to the driver.
func TestKeyPassphrase(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", der, []byte("right-pass"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	encrypted, plain := filepath.Join(dir, "enc.key"), filepath.Join(dir, "plain.key")
	for file, block := range map[string]*pem.Block{encrypted: enc, plain: {Type: "EC PRIVATE KEY", Bytes: der}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	passphrase := func(file, pass string) (string, error) {
		return KeyPassphrase(Login{Mode: ModeKeyFile, KeyFile: file, Secret: func() (string, error) { return pass, nil }})()
	}
	if got, err := passphrase(encrypted, "right-pass"); err != nil || got != "right-pass" {
		t.Errorf("right passphrase: %q, %v", got, err)
	}
	if _, err := passphrase(encrypted, "wrong-pass"); !exit.Is(err, exit.Configuration) ||
		!strings.Contains(err.Error(), "could not decrypt key_file "+encrypted) || strings.Contains(err.Error(), "wrong-pass") {
		t.Errorf("wrong passphrase: %v", err)
	}
	if got, err := passphrase(plain, "unused"); err != nil || got != "unused" {
		t.Errorf("plain key: %q, %v", got, err)
	}
}
