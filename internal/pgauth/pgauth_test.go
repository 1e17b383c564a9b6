package pgauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/youmark/pkcs8"

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
		if ClientCertificate(Login{Mode: m, Secret: secret}) != nil {
			t.Errorf("%q: a client certificate", m)
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
		return ClientCertificate(Login{Mode: ModeKeyFile, KeyFile: keyFile, CertFile: certFile,
			Secret: func() (string, error) { return pass, nil }})()
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
