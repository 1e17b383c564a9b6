package cli_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The variables scripts/test.sh sets: the CA the test server trusts for
// client certificates (and whose certificate it serves), and its key.
const (
	caVariable    = "ETL_CRAFT_TEST_PG_CA"
	caKeyVariable = "ETL_CRAFT_TEST_PG_CA_KEY"
)

// certRole is the role the test server lets in with a client certificate
// only (its pg_hba.conf's cert line).
const certRole = "etl_craft_cert"

// testCA returns the test server's CA certificate path and the CA itself,
// to sign client certificates with. Without it the test is skipped, unless
// CI is set, where it fails.
func testCA(t *testing.T) (string, *x509.Certificate, any) {
	t.Helper()
	caPath, keyPath := os.Getenv(caVariable), os.Getenv(caKeyVariable)
	if caPath == "" || keyPath == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s and %s are not set: the client-certificate tests cannot be skipped in CI (run scripts/test.sh)", caVariable, caKeyVariable)
		}
		t.Skipf("%s and %s are not set: run scripts/test.sh for the client-certificate tests", caVariable, caKeyVariable)
	}
	block := readPEM(t, caPath)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS8PrivateKey(readPEM(t, keyPath).Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return caPath, ca, key
}

// readPEM returns the first PEM block of the file.
func readPEM(t *testing.T, path string) *pem.Block {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(buf)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	return block
}

// writeClientCert writes, in the project folder, a certificate for
// certRole signed by the CA (certs/client.crt) and its RSA key encrypted
// with passphrase in the traditional PEM form (certs/client.key).
func writeClientCert(t *testing.T, p *e2e.Project, ca *x509.Certificate, caKey any, passphrase string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: certRole},
		NotBefore:    ca.NotBefore,
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), []byte(passphrase), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	p.Write("certs/client.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	p.Write("certs/client.key", string(pem.EncodeToMemory(enc)))
}

// keyFileProject writes a project whose PostgreSQL Engine DB and
// warehouse, one database owned by certRole, are logged in to with
// auth_mode key_file over SSL (verify-ca against the test CA), the key's
// passphrase in KEY_PASSPHRASE.
func keyFileProject(t *testing.T, passphrase string) *e2e.Project {
	t.Helper()
	caPath, ca, caKey := testCA(t)
	raw := enginetest.NewPGDatabase(t)
	u, _ := url.Parse(raw)
	admin, err := sql.Open("pgx", raw)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// The role is the cluster's, and other runs may create it at the same
	// time: an existing one is kept, never dropped.
	for _, q := range []string{
		fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`, certRole),
		fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", strings.TrimPrefix(u.Path, "/"), certRole),
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	p := &e2e.Project{T: t, Dir: t.TempDir(), Env: []string{"KEY_PASSPHRASE=" + passphrase},
		Pair: e2e.Pair{Engine: engine.Postgres, Warehouse: warehouse.Postgres}, Engine: engine.Options{Kind: engine.Postgres, DSN: raw, Schema: "public"}}
	writeClientCert(t, p, ca, caKey, passphrase)
	login := fmt.Sprintf(`    jdbc_url: jdbc:postgresql://%s%s?sslmode=verify-ca&sslrootcert=%s
    schema: public
    auth_mode: key_file
    user: %s
    key_file: certs/client.key
    cert_file: certs/client.crt
    secret: KEY_PASSPHRASE
`, u.Host, u.Path, caPath, certRole)
	p.Write("craft-connector.yml", e2e.ConnectorYAML(login, "Warehouse:\n  Name: Postgres\n  dev:\n"+login))
	return p
}

// An Engine DB logged in to with auth_mode key_file: no password is sent;
// the client certificate and its encrypted key (paths from the project
// folder), unlocked with the secret, log in as certRole, whom the server
// lets in by certificate only. A wrong passphrase exits 3 naming the key
// file and never printing the passphrase. The key may also be encrypted
// PKCS#8, as `openssl pkcs8 -topk8` makes it.
func TestEngineDBKeyFileLogin(t *testing.T) {
	t.Parallel()
	const passphrase = "key-pass-Q3v9"
	p := keyFileProject(t, passphrase)
	r := p.OK("--log-level", "DEBUG", "init-db")
	d := p.OK("--log-level", "DEBUG", "doctor")
	if !strings.Contains(d.Stdout, "[OK  ] Engine DB connection: PostgreSQL, schema public") ||
		!strings.Contains(d.Stdout, "[OK  ] Warehouse connection: Postgres, schema public exists") {
		t.Fatalf("doctor:\n%s", d.Stdout)
	}
	if out := r.Stdout + r.Stderr + d.Stdout + d.Stderr; strings.Contains(out, passphrase) {
		t.Fatalf("the passphrase was printed:\n%s", out)
	}
	var tables int
	var owned bool
	if err := enginetest.Plain(t, p.Engine).QueryRow(
		"SELECT count(*), bool_and(tableowner = $1) FROM pg_tables WHERE schemaname = 'public'", certRole).Scan(&tables, &owned); err != nil ||
		tables == 0 || !owned {
		t.Fatalf("%d tables, all owned by %s: %v, %v: init-db did not log in as %[2]s", tables, certRole, owned, err)
	}

	const wrong = "wrong-pass-7Kx2"
	undecrypted := "could not decrypt key_file " + filepath.Join(p.Dir, "certs", "client.key")
	r = p.Run([]string{"KEY_PASSPHRASE=" + wrong}, "--log-level", "DEBUG", "init-db")
	if out := r.Stdout + r.Stderr; r.Code != 3 || !strings.Contains(r.Stderr, undecrypted) ||
		strings.Contains(out, wrong) || strings.Contains(out, passphrase) {
		t.Fatalf("wrong passphrase: init-db exit %d\n%s", r.Code, out)
	}
	d = p.Run([]string{"KEY_PASSPHRASE=" + wrong}, "--log-level", "DEBUG", "doctor")
	if out := d.Stdout + d.Stderr; d.Code == 0 || !strings.Contains(d.Stdout, "[FAIL] Engine DB connection: "+undecrypted) ||
		strings.Contains(out, wrong) || strings.Contains(out, passphrase) {
		t.Fatalf("wrong passphrase: doctor exit %d\n%s", d.Code, out)
	}

	pkcs8 := exec.Command("openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc",
		"-in", "certs/client.key", "-passin", "env:KEY_PASSPHRASE", "-passout", "env:KEY_PASSPHRASE", "-out", "certs/client.p8")
	pkcs8.Dir, pkcs8.Env = p.Dir, append(os.Environ(), "KEY_PASSPHRASE="+passphrase)
	if out, err := pkcs8.CombinedOutput(); err != nil {
		t.Fatalf("openssl pkcs8: %v\n%s", err, out)
	}
	if err := os.Rename(filepath.Join(p.Dir, "certs", "client.p8"), filepath.Join(p.Dir, "certs", "client.key")); err != nil {
		t.Fatal(err)
	}
	if d := p.OK("doctor"); !strings.Contains(d.Stdout, "[OK  ] Engine DB connection: PostgreSQL, schema public") ||
		strings.Contains(d.Stdout+d.Stderr, passphrase) {
		t.Fatalf("encrypted PKCS#8 key: doctor\n%s%s", d.Stdout, d.Stderr)
	}

	// Without SSL there is no certificate to present.
	p.EditConfig("sslmode=verify-ca", "sslmode=disable")
	e2e.WantExit(t, p.Run(nil, "init-db"), 3, "a client-certificate login (auth_mode key_file) needs SSL")
}
