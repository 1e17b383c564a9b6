package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withEngine returns a file whose Engine dev block is body (indented fields).
func withEngine(body string) string {
	return secretsEnv + orchLocal + "Engine:\n  dev:\n" + body
}

func TestSQLiteEngine(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "abs.db")
	cases := []struct {
		name string
		url  string
		want func(dir string) string
	}{
		{"relative beside the config", "jdbc:sqlite:state/engine.db", func(dir string) string { return filepath.Join(dir, "state", "engine.db") }},
		{"absolute kept", "jdbc:sqlite:" + abs, func(string) string { return abs }},
		{"dot segments cleaned", "jdbc:sqlite:./a/../engine.db", func(dir string) string { return filepath.Join(dir, "engine.db") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, withEngine("    jdbc_url: "+c.url+"\n    schema: main\n    auth_mode: NONE\n"))
			want := c.want(cfg.ProjectDir)
			if cfg.Engine.SQLitePath != want || cfg.Engine.JDBCURL != "jdbc:sqlite:"+want {
				t.Errorf("path %q url %q; want %q", cfg.Engine.SQLitePath, cfg.Engine.JDBCURL, want)
			}
			if cfg.Engine.DSN() != "" {
				t.Errorf("DSN %q for SQLite; want empty", cfg.Engine.DSN())
			}
		})
	}
}

func TestPostgresEngineSchemaIsFoldedAsPostgreSQLFoldsIt(t *testing.T) {
	t.Setenv("PG_SECRET", "pw")
	pg := mustLoad(t, withEngine("    jdbc_url: jdbc:postgresql://db/etl\n    schema: ETL_Craft\n    auth_mode: password\n    user: etl\n    secret: PG_SECRET\n"))
	if pg.Engine.Schema != "etl_craft" {
		t.Errorf("PostgreSQL schema %q, want etl_craft", pg.Engine.Schema)
	}
	lite := mustLoad(t, withEngine("    jdbc_url: jdbc:sqlite:engine.db\n    schema: Main\n"))
	if lite.Engine.Schema != "Main" {
		t.Errorf("SQLite schema %q, want it as written", lite.Engine.Schema)
	}
}

func TestPostgresEngine(t *testing.T) {
	t.Setenv("PG_SECRET", "pw")
	cfg := mustLoad(t, secretsEnv+orchLocal+`Engine:
  Name: postgres
  dev:
    jdbc_url: jdbc:postgresql://db.example.com/etl?sslmode=verify-full&sslrootcert=certs/root.pem&application_name=etl craft&sslpassword=kp
    schema: etl_meta
    auth_mode: key_file
    user: etl
    key_file: certs/client.key
    cert_file: /etc/ssl/client.crt
    secret: PG_SECRET
`)
	e := cfg.Engine
	root := filepath.Join(cfg.ProjectDir, "certs", "root.pem")
	if e.Kind != "postgres" || e.Name != "PostgreSQL" || e.Host != "db.example.com" || e.Port != 5432 || e.Database != "etl" {
		t.Errorf("engine %+v", e)
	}
	if e.Params["sslrootcert"] != root || e.Params["sslmode"] != "verify-full" || e.Params["application_name"] != "etl craft" {
		t.Errorf("params %v; want sslrootcert made absolute", e.Params)
	}
	if e.KeyFile != filepath.Join(cfg.ProjectDir, "certs", "client.key") || e.CertFile != "/etc/ssl/client.crt" {
		t.Errorf("key %q cert %q", e.KeyFile, e.CertFile)
	}
	dsn := e.DSN()
	for _, want := range []string{"postgres://etl@db.example.com:5432/etl?", "sslmode=verify-full", "sslrootcert=" + strings.ReplaceAll(root, "/", "%2F")} {
		if !strings.Contains(dsn, want) {
			t.Errorf("DSN %q lacks %q", dsn, want)
		}
	}
	if red := e.RedactedURL(); strings.Contains(red, "sslpassword") || !strings.Contains(red, "sslmode=verify-full") {
		t.Errorf("RedactedURL %q; want sslpassword left out and sslmode kept", red)
	}
}

func TestPostgresAuthModes(t *testing.T) {
	t.Setenv("PG_SECRET", "pw")
	cases := []struct {
		mode, fields string
		check        func(Auth) bool
	}{
		{"password", "    user: u\n    secret: PG_SECRET\n", func(a Auth) bool { return a.User == "u" && a.SecretVar == "PG_SECRET" }},
		{"token", "    user: u\n    secret: PG_SECRET\n", func(a Auth) bool { return a.SecretVar == "PG_SECRET" }},
		{"oauth", "    user: u\n    client_id: c\n    secret: PG_SECRET\n    token_url: https://idp/token\n    scope: s\n",
			func(a Auth) bool { return a.ClientID == "c" && a.TokenURL == "https://idp/token" && a.Scope == "s" }},
		{"sso", "    user: u\n    issuer: https://idp\n    client_id: c\n", func(a Auth) bool { return a.Issuer == "https://idp" && a.SecretVar == "" }},
		{"sts", "    user: u\n    region: eu-west-1\n    role_arn: arn:aws:iam::1:role/x\n", func(a Auth) bool { return a.Region == "eu-west-1" && a.RoleARN != "" }},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			cfg := mustLoad(t, withEngine("    jdbc_url: jdbc:postgresql://h:6000/d\n    schema: s\n    auth_mode: "+c.mode+"\n"+c.fields))
			if cfg.Engine.AuthMode != c.mode || !c.check(cfg.Engine.Auth) || cfg.Engine.Port != 6000 {
				t.Errorf("auth %+v port %d", cfg.Engine.Auth, cfg.Engine.Port)
			}
		})
	}
}

func TestEngineErrors(t *testing.T) {
	t.Setenv("PG_SECRET", "pw")
	const pg = "    jdbc_url: jdbc:postgresql://db/etl\n    schema: etl\n"
	cases := []errorCase{
		{"empty sqlite path is in-memory", withEngine("    jdbc_url: 'jdbc:sqlite:'\n    schema: main\n"),
			":8: Engine.dev.jdbc_url: names an in-memory SQLite database"},
		{":memory: is in-memory", withEngine("    jdbc_url: jdbc:sqlite::memory:\n    schema: main\n"), "in-memory"},
		{"sqlite auth mode", withEngine("    jdbc_url: jdbc:sqlite:e.db\n    schema: main\n    auth_mode: password\n"),
			":10: Engine.dev.auth_mode: auth_mode must be 'none'"},
		{"unsupported scheme", withEngine("    jdbc_url: jdbc:mysql://h/d\n    schema: s\n"),
			":8: Engine.dev.jdbc_url: 'jdbc:mysql://h/d' is not a supported Engine DB URL"},
		{"postgres without database", withEngine("    jdbc_url: jdbc:postgresql://db\n    schema: s\n    auth_mode: password\n"),
			"is not a PostgreSQL URL of the form"},
		{"postgres with a bad port", withEngine("    jdbc_url: jdbc:postgresql://db:99999/etl\n    schema: s\n"),
			"is not a PostgreSQL URL of the form"},
		{"jdbc_url required", withEngine("    schema: s\n"), ":7: Engine.dev: needs jdbc_url"},
		{"schema required", withEngine("    jdbc_url: jdbc:sqlite:e.db\n"), ":7: Engine.dev: needs schema"},
		{"schema a plain identifier", withEngine("    jdbc_url: jdbc:sqlite:e.db\n    schema: my-schema\n"),
			":9: Engine.dev.schema: must be a plain identifier"},
		{"schema not quoted text", withEngine("    jdbc_url: jdbc:sqlite:e.db\n    schema: '\"x\"'\n"), "must be a plain identifier"},
		{"Name against the URL", secretsEnv + orchLocal + "Engine:\n  Name: SQLite\n  dev:\n" + pg + "    auth_mode: password\n    user: u\n    secret: PG_SECRET\n",
			":7: Engine.Name: is 'SQLite', but jdbc_url is a PostgreSQL URL"},
		{"unknown Name", secretsEnv + orchLocal + "Engine:\n  Name: Oracle\n  dev:\n    jdbc_url: jdbc:sqlite:e.db\n    schema: main\n",
			"Engine.Name: must be Postgres, PostgreSQL or SQLite; got 'Oracle'"},
		{"postgres auth mode required", withEngine(pg), ":7: Engine.dev: needs auth_mode: one of key_file, oauth, password, sso, sts, token"},
		{"postgres none refused", withEngine(pg + "    auth_mode: none\n"), "Engine.dev.auth_mode: must be one of key_file, oauth, password, sso, sts, token; got 'none'"},
		{"password needs user", withEngine(pg + "    auth_mode: password\n    secret: PG_SECRET\n"), "Engine.dev: needs user for auth_mode password"},
		{"key_file needs key_file", withEngine(pg + "    auth_mode: key_file\n    user: u\n    secret: PG_SECRET\n"), "needs key_file for auth_mode key_file"},
		{"sts needs region", withEngine(pg + "    auth_mode: sts\n    user: u\n"), "needs region for auth_mode sts"},
		{"unknown field", withEngine(pg + "    auth_mode: password\n    user: u\n    secret: PG_SECRET\n    pasword: x\n"),
			":13: Engine.dev: unknown key 'pasword'"},
	}
	checkErrors(t, asIs, cases)
}

func TestConfigElsewhereResolvesBesideIt(t *testing.T) {
	project := writeFiles(t, map[string]string{"other/" + FileName: minimal})
	t.Chdir(t.TempDir())
	cfg, err := Load(filepath.Join(project, "other", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(project, "other", "engine.db"); cfg.Engine.SQLitePath != want {
		t.Errorf("SQLite path %q; want %q beside the config, not the working folder", cfg.Engine.SQLitePath, want)
	}
}

func TestSymlinkedConfigResolvesBesideTheLink(t *testing.T) {
	real := writeFiles(t, map[string]string{"real/" + FileName: `Secrets:
  Source_type: file
  Path: .env
Orchestration:
  Mode: local
  Email:
    transport: sendmail
    from_address: a@b
    sendmail_path: bin/sendmail
Engine:
  dev:
    jdbc_url: jdbc:sqlite:engine.db
    schema: main
Warehouse:
  dev:
    jdbc_url: jdbc:duckdb:wh.duckdb
    schema: s
`})
	link := writeFiles(t, map[string]string{"proj/.env": "A=1\n"})
	linkPath := filepath.Join(link, "proj", FileName)
	if err := os.Symlink(filepath.Join(real, "real", FileName), linkPath); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(linkPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(link, "proj")
	checks := map[string][2]string{
		"ProjectDir":   {cfg.ProjectDir, dir},
		"Secrets.Path": {cfg.Secrets.Path, filepath.Join(dir, ".env")},
		"SQLite":       {cfg.Engine.SQLitePath, filepath.Join(dir, "engine.db")},
		"DuckDB":       {cfg.Warehouse.DuckDBPath, filepath.Join(dir, "wh.duckdb")},
		"Log_dir":      {cfg.Orchestration.LogDir, filepath.Join(dir, "logs")},
		"sendmail":     {cfg.Orchestration.Email.SendmailPath, filepath.Join(dir, "bin", "sendmail")},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q; want %q", name, c[0], c[1])
		}
	}
}
