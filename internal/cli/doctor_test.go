package cli_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// pgWarehouse returns a Warehouse section on a fresh PostgreSQL database and
// the environment its secret needs.
func pgWarehouse(t *testing.T, schema string) (yaml string, env []string) {
	yaml, env, _ = pgWarehouseAt(t, schema)
	return yaml, env
}

// pgWarehouseAt is pgWarehouse that also returns the database's URL.
func pgWarehouseAt(t *testing.T, schema string) (yaml string, env []string, raw string) {
	raw = enginetest.NewPGDatabase(t)
	u, _ := url.Parse(raw)
	pw, _ := u.User.Password()
	yaml = fmt.Sprintf("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: %s\n    auth_mode: password\n    user: %s\n    secret: WAREHOUSE_SECRET\n",
		u.Host, u.Path, schema, u.User.Username())
	return yaml, []string{"WAREHOUSE_SECRET=" + pw}, raw
}

// withWarehouse replaces the project's DuckDB Warehouse section.
func (p *project) withWarehouse(section string, env []string) {
	p.t.Helper()
	b, _ := os.ReadFile(p.dir + "/craft-connector.yml")
	yml := string(b)
	i := strings.Index(yml, "Warehouse:\n")
	j := strings.Index(yml, "Cloning:")
	rest := ""
	if j > i {
		rest = yml[j:]
	}
	p.write("craft-connector.yml", yml[:i]+section+rest)
	p.env = append(p.env, env...)
}

func checkLines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[") && len(l) > 7 {
			name, _, _ := strings.Cut(l[7:], ":")
			m[name] = m[name] + l + "\n"
		}
	}
	return m
}

func TestDoctorOnHealthyProjects(t *testing.T) {
	t.Parallel()
	t.Run("sqlite+duckdb", func(t *testing.T) {
		p := newProject(t, engine.SQLite, "Cloning:\n  dev:\n    Enabled: true\n    Scope: all\n")
		p.ok("setup")
		r := p.ok("doctor")
		if !strings.HasSuffix(r.stdout, " ok, 0 warning(s), 0 failed\n") || !strings.Contains(r.stdout, "[OK  ] Cloning: scope all: after each run, into schema main") {
			t.Fatalf("doctor:\n%s", r.stdout)
		}
	})
	t.Run("postgres+postgres", func(t *testing.T) {
		p := newProject(t, engine.Postgres, "")
		p.withWarehouse(pgWarehouse(t, "public"))
		p.write("craft-connector.yml", readFile(t, p.dir+"/craft-connector.yml")+"Cloning:\n  dev:\n    Enabled: true\n    Scope: all\n")
		p.ok("setup")
		r := p.ok("doctor")
		lines := checkLines(r.stdout)
		if !strings.HasSuffix(r.stdout, " ok, 0 warning(s), 0 failed\n") || !strings.Contains(lines["Warehouse connection"], "Postgres, schema public exists") ||
			!strings.Contains(lines["Engine DB privileges"], "[OK  ]") || !strings.Contains(lines["Engine DB secret"], "resolved from ENGINE_SECRET") {
			t.Fatalf("doctor:\n%s", r.stdout)
		}
		var doc struct {
			Schema string `json:"schema"`
			Checks []struct{ Status, Name, Detail string }
			Failed int `json:"failed"`
		}
		r = p.ok("doctor", "--format", "json")
		if err := jsonUnmarshal(r.stdout, &doc); err != nil || doc.Schema != "etl-craft/doctor/1" || len(doc.Checks) < 8 || doc.Failed != 0 {
			t.Fatalf("json: %v %+v", err, doc)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDoctorReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	t.Run("migrations and warehouse schema", func(t *testing.T) {
		p := newProject(t, engine.SQLite, "")
		p.write("migrations/0001_a.sql", "CREATE TABLE a (id INTEGER);\n")
		p.ok("setup")
		p.withWarehouse(pgWarehouse(t, "no_such_schema"))
		p.write("migrations/0001_a.sql", "CREATE TABLE a (id BIGINT);\n")
		r := p.run(nil, "doctor")
		lines := checkLines(r.stdout)
		if r.code != 1 || !strings.Contains(lines["Engine DB migrations"], "[FAIL]") || !strings.Contains(lines["Engine DB migrations"], "'0001_a.sql' has changed since it was applied") {
			t.Fatalf("edited migration:\n%s\n%s", r.stdout, r.stderr)
		}
		if !regexp.MustCompile(`\[FAIL\] Warehouse connection: the Warehouse schema \w+\.no_such_schema does not exist; create it first`).MatchString(r.stdout) {
			t.Fatalf("missing schema:\n%s", r.stdout)
		}
		p.write("migrations/0001_a.sql", "CREATE TABLE a (id INTEGER);\n")
		p.write("migrations/0002_b.sql", "CREATE TABLE b (id INTEGER);\n")
		r = p.run(nil, "doctor")
		if !strings.Contains(r.stdout, "[FAIL] Engine DB migrations: 1 pending: project/0002_b.sql; run `etl-craft migrate`") ||
			!strings.Contains(r.stdout, "[OK  ] Engine DB kind") {
			t.Fatalf("pending migration:\n%s", r.stdout)
		}
	})
	t.Run("password, secret, own schema", func(t *testing.T) {
		enginetest.AdminURL(t)
		p := newProject(t, engine.Postgres, "")
		p.ok("init-db")
		yml := readFile(t, p.dir+"/craft-connector.yml")
		engineURL := regexp.MustCompile(`jdbc:postgresql://\S+`).FindString(yml)
		// The warehouse is the Engine DB's own database and schema, with an unset secret.
		p.withWarehouse("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: "+engineURL+"\n    schema: PUBLIC\n    auth_mode: password\n    user: ETL_USER_NAME\n    secret: WAREHOUSE_SECRET_NOT_SET\n", nil)
		p.write("craft-connector.yml", readFile(t, p.dir+"/craft-connector.yml")+"Cloning:\n  dev:\n    Enabled: true\n    Scope: cfg\n")
		r := p.run([]string{"ENGINE_SECRET=wrong-password"}, "doctor")
		lines := checkLines(r.stdout)
		want := map[string]string{
			"Engine DB connection":    "[FAIL]",
			"Warehouse secret":        "WAREHOUSE_SECRET_NOT_SET",
			"Cloning":                 "is the Engine DB's own schema in the same database",
			"Setting used as written": "Warehouse.dev.user is 'ETL_USER_NAME'",
			"Project folders":         "[OK  ]",
		}
		for name, text := range want {
			if !strings.Contains(lines[name], text) {
				t.Errorf("%s: want %q in:\n%s", name, text, r.stdout)
			}
		}
		if r.code != 1 || strings.Contains(r.stdout+r.stderr, "wrong-password") {
			t.Fatalf("exit %d or the password shown:\n%s", r.code, r.stdout)
		}
	})
}

func TestDoctorReportsWriteGrantsWithTheirRevoke(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		if kind == engine.SQLite {
			return
		}
		p := newProject(t, kind, "")
		p.ok("setup")
		db := enginetest.Plain(t, p.opts)
		suffix := strings.ToLower(strings.TrimPrefix(p.opts.DSN[strings.LastIndex(p.opts.DSN, "/")+1:], "etl_craft_test_"))
		suffix = strings.SplitN(suffix, "?", 2)[0]
		login, group, member := "dr_login_"+suffix, "dr_group_"+suffix, "dr_member_"+suffix
		mustExec(t, db,
			"CREATE ROLE "+login+" LOGIN", "CREATE ROLE "+group+" NOLOGIN", "CREATE ROLE "+member+" LOGIN IN ROLE "+group,
			"GRANT INSERT ON cfg_tasks TO "+login, "GRANT UPDATE ON cfg_pipelines TO "+group, "GRANT DELETE ON aud_actions TO PUBLIC")
		t.Cleanup(func() {
			admin, _ := sql.Open("pgx", enginetest.AdminURL(t))
			defer admin.Close()
			for _, r := range []string{member, group, login} {
				admin.Exec("DROP ROLE IF EXISTS " + r)
			}
		})
		r := p.run(nil, "doctor")
		for _, want := range []string{
			`REVOKE INSERT ON "public"."cfg_tasks" FROM "` + login + `";`,
			`REVOKE UPDATE ON "public"."cfg_pipelines" FROM "` + group + `";`,
			`REVOKE DELETE ON "public"."aud_actions" FROM PUBLIC;`,
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("doctor lacks %s:\n%s", want, r.stdout)
			}
		}
		if r.code != 1 || strings.Contains(r.stdout, member) {
			t.Fatalf("exit %d; a member of the group must not be reported:\n%s", r.code, r.stdout)
		}
		detail := checkLines(r.stdout)["Engine DB privileges"]
		for _, stmt := range regexp.MustCompile(`REVOKE [^;]+;`).FindAllString(detail, -1) {
			mustExec(t, db, stmt)
		}
		if r := p.ok("doctor"); !strings.Contains(r.stdout, "[OK  ] Engine DB privileges") {
			t.Fatalf("after the REVOKEs:\n%s", r.stdout)
		}
	})
}

func TestDoctorReportsColumnWriteGrantsWithTheirRevoke(t *testing.T) {
	t.Parallel()
	enginetest.AdminURL(t)
	p := newProject(t, engine.Postgres, "")
	p.ok("setup")
	db := enginetest.Plain(t, p.opts)
	suffix := strings.SplitN(p.opts.DSN[strings.LastIndex(p.opts.DSN, "/")+1:], "?", 2)[0]
	suffix = strings.ToLower(strings.TrimPrefix(suffix, "etl_craft_test_"))
	bi, group, member := "dc_bi_"+suffix, "dc_group_"+suffix, "dc_member_"+suffix
	mustExec(t, db,
		"CREATE ROLE "+bi+" LOGIN", "CREATE ROLE "+group+" NOLOGIN", "CREATE ROLE "+member+" LOGIN IN ROLE "+group,
		"GRANT UPDATE (error_message) ON aud_task_run_log TO "+bi,
		"GRANT DELETE, UPDATE (pipeline_name, pipeline_code), INSERT (pipeline_code) ON cfg_pipelines TO "+group,
		"GRANT INSERT (error_message) ON aud_task_run_log TO PUBLIC")
	t.Cleanup(func() {
		db.Exec("DROP OWNED BY " + bi + ", " + group + ", " + member)
		for _, r := range []string{member, group, bi} {
			db.Exec("DROP ROLE IF EXISTS " + r)
		}
	})
	// bi, a plain login, can change a guarded table once it sets the actor.
	asBI := func() error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, s := range []string{"SET LOCAL ROLE " + bi,
			"SELECT set_config('etl_craft.actor', 'bi', true), set_config('etl_craft.actor_kind', 'HUMAN', true)",
			"UPDATE aud_task_run_log SET error_message = 'changed'"} {
			if _, err := tx.Exec(s); err != nil {
				return err
			}
		}
		return nil
	}
	if err := asBI(); err != nil {
		t.Fatalf("bi cannot write the column it was granted: %v", err)
	}
	r := p.run(nil, "doctor")
	detail := checkLines(r.stdout)["Engine DB privileges"]
	for _, want := range []string{
		`REVOKE UPDATE ("error_message") ON "public"."aud_task_run_log" FROM "` + bi + `";`,
		`REVOKE DELETE, INSERT ("pipeline_code"), UPDATE ("pipeline_code", "pipeline_name") ON "public"."cfg_pipelines" FROM "` + group + `";`,
		`REVOKE INSERT ("error_message") ON "public"."aud_task_run_log" FROM PUBLIC;`,
	} {
		if !strings.Contains(detail, want) {
			t.Errorf("doctor lacks %s:\n%s", want, r.stdout)
		}
	}
	if r.code != 1 || !strings.Contains(detail, "[FAIL] Engine DB privileges: 3 grant(s)") || strings.Contains(r.stdout, member) {
		t.Fatalf("exit %d; three grants, and no member of the group:\n%s", r.code, r.stdout)
	}
	for _, stmt := range regexp.MustCompile(`REVOKE [^;]+;`).FindAllString(detail, -1) {
		mustExec(t, db, stmt)
	}
	if r := p.ok("doctor"); !strings.Contains(r.stdout, "[OK  ] Engine DB privileges") {
		t.Fatalf("after the REVOKEs:\n%s", r.stdout)
	}
	if err := asBI(); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("bi still writes after the REVOKE: %v", err)
	}
}

func TestPostgresSchemasAreTheOnesPostgreSQLFolds(t *testing.T) {
	t.Parallel()
	t.Run("engine", func(t *testing.T) {
		enginetest.AdminURL(t)
		p := newProject(t, engine.Postgres, "")
		p.write("craft-connector.yml", strings.Replace(readFile(t, p.dir+"/craft-connector.yml"), "schema: public\n", "schema: ETL_CRAFT\n", 1))
		r := p.run(nil, "doctor")
		create := regexp.MustCompile(`\(CREATE SCHEMA [^;]+;\)`).FindString(checkLines(r.stdout)["Engine DB connection"])
		if r.code != 1 || create != "(CREATE SCHEMA etl_craft;)" {
			t.Fatalf("doctor before the schema exists: exit %d\n%s", r.code, r.stdout)
		}
		db := enginetest.Plain(t, p.opts)
		mustExec(t, db, strings.Trim(create, "()"))
		p.ok("setup")
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'etl_craft' AND tablename = 'cfg_pipelines'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("setup did not create the tables in etl_craft: %d, %v", n, err)
		}
		if r := p.ok("doctor"); !strings.Contains(r.stdout, "[OK  ] Engine DB connection: PostgreSQL, schema etl_craft\n") {
			t.Fatalf("doctor:\n%s", r.stdout)
		}
		if r := p.ok("setup", "--print-grants"); !strings.Contains(r.stdout, `GRANT USAGE, CREATE ON SCHEMA "etl_craft" TO etl_craft_owner;`) {
			t.Fatalf("the grants name another schema:\n%s", r.stdout)
		}
	})
	t.Run("warehouse", func(t *testing.T) {
		p := newProject(t, engine.SQLite, "")
		p.ok("setup")
		section, env, raw := pgWarehouseAt(t, "Analytics")
		p.withWarehouse(section, env)
		wh, err := sql.Open("pgx", raw)
		if err != nil {
			t.Fatal(err)
		}
		defer wh.Close()
		mustExec(t, wh, `CREATE SCHEMA "Analytics"`)
		// "Analytics" is not the schema etl-craft writes to: analytics is.
		r := p.run(nil, "doctor")
		if r.code != 1 || !strings.Contains(checkLines(r.stdout)["Warehouse connection"], "[FAIL]") {
			t.Fatalf("a schema that differs in case passed:\n%s", r.stdout)
		}
		mustExec(t, wh, "CREATE SCHEMA analytics")
		if r := p.run(nil, "doctor"); !strings.Contains(checkLines(r.stdout)["Warehouse connection"], "[OK  ] Warehouse connection: Postgres, schema Analytics exists") {
			t.Fatalf("doctor:\n%s", r.stdout)
		}
	})
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestDoctorWarnsAboutAGroupWritableSQLiteFile(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.ok("setup")
	os.Chmod(p.opts.Path, 0o664)
	r := p.ok("doctor")
	line := checkLines(r.stdout)["Engine DB file access"]
	if !strings.HasPrefix(line, "[WARN]") || !strings.Contains(line, "chmod go-w") {
		t.Fatalf("doctor after chmod g+w:\n%s", r.stdout)
	}
	os.Chmod(p.opts.Path, 0o644)
	if line := checkLines(p.ok("doctor").stdout)["Engine DB file access"]; !strings.HasPrefix(line, "[OK  ]") {
		t.Fatalf("after chmod go-w: %s", line)
	}
}

func TestDoctorNamesTheReleaseTheLedgerComesFrom(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.ok("setup")
	// The checksum the reference's 0.2.0 release recorded for its SQLite 0001.
	mustExec(t, enginetest.Plain(t, p.opts), "UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = "+
		"'3b8f0b0b4d759894d7ee1c2aceac6424e7c450e4a62f795fe46e9498a3ce3ff5' WHERE VERSION = '0001_pipeline_pauses.sql'")
	line := checkLines(p.ok("doctor").stdout)["Engine DB migrations"]
	if !strings.HasPrefix(line, "[OK  ]") || !strings.Contains(line, "up to date; the ledger comes from etl-craft 0.2.0 (Python reference)") {
		t.Fatalf("doctor: %s", line)
	}
}

// doctor warns when the HTTP API would listen beyond this machine, and says
// nothing of a loopback address.
func TestDoctorWarnsAboutAnAPIAddressBeyondLoopback(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.ok("setup")
	if line, ok := checkLines(p.ok("doctor").stdout)["API address"]; ok {
		t.Fatalf("the loopback 127.0.0.1:0 of the test projects drew %s", line)
	}
	yml, err := os.ReadFile(p.dir + "/craft-connector.yml")
	if err != nil {
		t.Fatal(err)
	}
	p.write("craft-connector.yml", strings.Replace(string(yml), "  Api_address: 127.0.0.1:0\n", "  Api_address: 0.0.0.0:8730\n", 1))
	line := checkLines(p.ok("doctor").stdout)["API address"]
	if !strings.HasPrefix(line, "[WARN]") || !strings.Contains(line, "0.0.0.0:8730 is not a loopback address") || !strings.Contains(line, "TLS") {
		t.Fatalf("doctor with Api_address 0.0.0.0:8730: %q", line)
	}
}
