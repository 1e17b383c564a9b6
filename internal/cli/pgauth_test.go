package cli_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/clientcred/clientcredtest"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// oauthProject writes a project whose PostgreSQL Engine DB and warehouse
// (one database) are logged in to with auth_mode mode as a role of its own,
// whose password is token.
func oauthProject(t *testing.T, mode, tokenURL, token string) *e2e.Project {
	t.Helper()
	raw := enginetest.NewPGDatabase(t)
	u, _ := url.Parse(raw)
	b := make([]byte, 4)
	rand.Read(b)
	role := "etl_craft_oauth_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", raw)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, token),
		fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", strings.TrimPrefix(u.Path, "/"), role),
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if a, err := sql.Open("pgx", enginetest.AdminURL(t)); err == nil {
			a.Exec("DROP DATABASE IF EXISTS " + strings.TrimPrefix(u.Path, "/") + " WITH (FORCE)")
			a.Exec("DROP ROLE IF EXISTS " + role)
			a.Close()
		}
	})
	p := &e2e.Project{T: t, Dir: t.TempDir(), Env: []string{"OAUTH_CLIENT_SECRET=client-s3cret"}}
	login := fmt.Sprintf(`    schema: public
    auth_mode: %s
    user: %s
    client_id: etl-craft-ci
    issuer: https://login.example.com
    secret: OAUTH_CLIENT_SECRET
    token_url: %s
`, mode, role, tokenURL)
	jdbc := fmt.Sprintf("    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n", u.Host, u.Path)
	p.Write("craft-connector.yml", e2e.ConnectorYAML(jdbc+login, "Warehouse:\n  Name: Postgres\n  dev:\n"+jdbc+login))
	return p
}

// An Engine DB and a PostgreSQL warehouse logged in to with auth_mode
// oauth: every connection's
// password is the access token of a client-credentials grant, asked for
// once and reused; a refused grant exits 3 naming the token endpoint and
// never printing the secret.
func TestEngineDBOAuthLogin(t *testing.T) {
	t.Parallel()
	srv := clientcredtest.New(t, "etl-craft-ci", "client-s3cret", "tok-7Yh2")
	p := oauthProject(t, "oauth", srv.URL+"/token", "tok-7Yh2")
	p.OK("init-db")
	if r := p.OK("doctor"); !strings.Contains(r.Stdout, "[OK  ] Engine DB connection: PostgreSQL, schema public") ||
		!strings.Contains(r.Stdout, "[OK  ] Warehouse connection: Postgres, schema public exists") {
		t.Fatalf("doctor:\n%s", r.Stdout)
	}
	if n, _ := srv.Asked(); n != 3 {
		t.Errorf("%d token grants, want one for init-db's Engine DB and one for each login of doctor", n)
	}

	refused := oauthProject(t, "oauth", srv.URL+"/token", "tok-7Yh2")
	refused.Env = []string{"OAUTH_CLIENT_SECRET=wrong-s3cret"}
	r := refused.Run(nil, "init-db")
	if r.Code != 3 || !strings.Contains(r.Stderr, "could not get an OAuth token from "+srv.URL+"/token for client etl-craft-ci") ||
		strings.Contains(r.Stderr+r.Stdout, "wrong-s3cret") {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
}

// auth_mode sso, libpq's interactive device flow, is refused with exit 3
// naming the modes to use instead.
func TestEngineDBSSOLoginIsRefused(t *testing.T) {
	t.Parallel()
	p := oauthProject(t, "sso", "https://login.example.com/token", "unused")
	r := p.Run(nil, "init-db")
	if r.Code != 3 || !strings.Contains(r.Stderr, "auth_mode sso is libpq's interactive OAuth device flow") {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
}
