package cli_test

import (
	"database/sql"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

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
		p.OK("setup")
		r := p.OK("doctor")
		if !strings.HasSuffix(r.Stdout, " ok, 0 warning(s), 0 failed\n") || !strings.Contains(r.Stdout, "[OK  ] Cloning: scope all: after each run, into schema main") {
			t.Fatalf("doctor:\n%s", r.Stdout)
		}
	})
	t.Run("postgres+postgres", func(t *testing.T) {
		p := newProject(t, engine.Postgres, "")
		section, env, _ := e2e.PGWarehouse(t, "public")
		p.WithWarehouse(section, env)
		p.Write("craft-connector.yml", p.Config()+"Cloning:\n  dev:\n    Enabled: true\n    Scope: all\n")
		p.OK("setup")
		r := p.OK("doctor")
		lines := checkLines(r.Stdout)
		if !strings.HasSuffix(r.Stdout, " ok, 0 warning(s), 0 failed\n") || !strings.Contains(lines["Warehouse connection"], "Postgres, schema public exists") ||
			!strings.Contains(lines["Engine DB privileges"], "[OK  ]") || !strings.Contains(lines["Engine DB secret"], "resolved from ENGINE_SECRET") {
			t.Fatalf("doctor:\n%s", r.Stdout)
		}
		var doc struct {
			Schema string `json:"schema"`
			Checks []struct{ Status, Name, Detail string }
			Failed int `json:"failed"`
		}
		r = p.OK("doctor", "--format", "json")
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || doc.Schema != "etl-craft/doctor/1" || len(doc.Checks) < 8 || doc.Failed != 0 {
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
		p.Write("migrations/0001_a.sql", "CREATE TABLE a (id INTEGER);\n")
		p.OK("setup")
		section, env, _ := e2e.PGWarehouse(t, "no_such_schema")
		p.WithWarehouse(section, env)
		p.Write("migrations/0001_a.sql", "CREATE TABLE a (id BIGINT);\n")
		r := p.Run(nil, "doctor")
		lines := checkLines(r.Stdout)
		if r.Code != 1 || !strings.Contains(lines["Engine DB migrations"], "[FAIL]") || !strings.Contains(lines["Engine DB migrations"], "'0001_a.sql' has changed since it was applied") {
			t.Fatalf("edited migration:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if !regexp.MustCompile(`\[FAIL\] Warehouse connection: the Warehouse schema \w+\.no_such_schema does not exist; create it first`).MatchString(r.Stdout) {
			t.Fatalf("missing schema:\n%s", r.Stdout)
		}
		p.Write("migrations/0001_a.sql", "CREATE TABLE a (id INTEGER);\n")
		p.Write("migrations/0002_b.sql", "CREATE TABLE b (id INTEGER);\n")
		r = p.Run(nil, "doctor")
		if !strings.Contains(r.Stdout, "[FAIL] Engine DB migrations: 1 pending: project/0002_b.sql; run `etl-craft migrate`") ||
			!strings.Contains(r.Stdout, "[OK  ] Engine DB kind") {
			t.Fatalf("pending migration:\n%s", r.Stdout)
		}
	})
	t.Run("password, secret, own schema", func(t *testing.T) {
		enginetest.AdminURL(t)
		p := newProject(t, engine.Postgres, "")
		p.OK("init-db")
		yml := p.Config()
		engineURL := regexp.MustCompile(`jdbc:postgresql://\S+`).FindString(yml)
		// The warehouse is the Engine DB's own database and schema, with an unset secret.
		p.WithWarehouse("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: "+engineURL+"\n    schema: PUBLIC\n    auth_mode: password\n    user: ETL_USER_NAME\n    secret: WAREHOUSE_SECRET_NOT_SET\n", nil)
		p.Write("craft-connector.yml", p.Config()+"Cloning:\n  dev:\n    Enabled: true\n    Scope: cfg\n")
		r := p.Run([]string{"ENGINE_SECRET=wrong-password"}, "doctor")
		lines := checkLines(r.Stdout)
		want := map[string]string{
			"Engine DB connection":    "[FAIL]",
			"Warehouse secret":        "WAREHOUSE_SECRET_NOT_SET",
			"Cloning":                 "is the Engine DB's own schema in the same database",
			"Setting used as written": "Warehouse.dev.user is 'ETL_USER_NAME'",
			"Project folders":         "[OK  ]",
		}
		for name, text := range want {
			if !strings.Contains(lines[name], text) {
				t.Errorf("%s: want %q in:\n%s", name, text, r.Stdout)
			}
		}
		if r.Code != 1 || strings.Contains(r.Stdout+r.Stderr, "wrong-password") {
			t.Fatalf("exit %d or the password shown:\n%s", r.Code, r.Stdout)
		}
	})
}

func TestDoctorReportsWriteGrantsWithTheirRevoke(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		if kind == engine.SQLite {
			return
		}
		p := newProject(t, kind, "")
		p.OK("setup")
		db := enginetest.Plain(t, p.Engine)
		suffix := strings.ToLower(strings.TrimPrefix(p.Engine.DSN[strings.LastIndex(p.Engine.DSN, "/")+1:], "etl_craft_test_"))
		suffix = strings.SplitN(suffix, "?", 2)[0]
		login, group, member := "dr_login_"+suffix, "dr_group_"+suffix, "dr_member_"+suffix
		e2e.MustExec(t, db,
			"CREATE ROLE "+login+" LOGIN", "CREATE ROLE "+group+" NOLOGIN", "CREATE ROLE "+member+" LOGIN IN ROLE "+group,
			"GRANT INSERT ON cfg_tasks TO "+login, "GRANT UPDATE ON cfg_pipelines TO "+group, "GRANT DELETE ON aud_actions TO PUBLIC")
		t.Cleanup(func() {
			admin, _ := sql.Open("pgx", enginetest.AdminURL(t))
			defer admin.Close()
			for _, r := range []string{member, group, login} {
				admin.Exec("DROP ROLE IF EXISTS " + r)
			}
		})
		r := p.Run(nil, "doctor")
		for _, want := range []string{
			`REVOKE INSERT ON "public"."cfg_tasks" FROM "` + login + `";`,
			`REVOKE UPDATE ON "public"."cfg_pipelines" FROM "` + group + `";`,
			`REVOKE DELETE ON "public"."aud_actions" FROM PUBLIC;`,
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("doctor lacks %s:\n%s", want, r.Stdout)
			}
		}
		if r.Code != 1 || strings.Contains(r.Stdout, member) {
			t.Fatalf("exit %d; a member of the group must not be reported:\n%s", r.Code, r.Stdout)
		}
		detail := checkLines(r.Stdout)["Engine DB privileges"]
		for _, stmt := range regexp.MustCompile(`REVOKE [^;]+;`).FindAllString(detail, -1) {
			e2e.MustExec(t, db, stmt)
		}
		if r := p.OK("doctor"); !strings.Contains(r.Stdout, "[OK  ] Engine DB privileges") {
			t.Fatalf("after the REVOKEs:\n%s", r.Stdout)
		}
	})
}

func TestDoctorReportsColumnWriteGrantsWithTheirRevoke(t *testing.T) {
	t.Parallel()
	enginetest.AdminURL(t)
	p := newProject(t, engine.Postgres, "")
	p.OK("setup")
	db := enginetest.Plain(t, p.Engine)
	suffix := strings.SplitN(p.Engine.DSN[strings.LastIndex(p.Engine.DSN, "/")+1:], "?", 2)[0]
	suffix = strings.ToLower(strings.TrimPrefix(suffix, "etl_craft_test_"))
	bi, group, member := "dc_bi_"+suffix, "dc_group_"+suffix, "dc_member_"+suffix
	e2e.MustExec(t, db,
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
	r := p.Run(nil, "doctor")
	detail := checkLines(r.Stdout)["Engine DB privileges"]
	for _, want := range []string{
		`REVOKE UPDATE ("error_message") ON "public"."aud_task_run_log" FROM "` + bi + `";`,
		`REVOKE DELETE, INSERT ("pipeline_code"), UPDATE ("pipeline_code", "pipeline_name") ON "public"."cfg_pipelines" FROM "` + group + `";`,
		`REVOKE INSERT ("error_message") ON "public"."aud_task_run_log" FROM PUBLIC;`,
	} {
		if !strings.Contains(detail, want) {
			t.Errorf("doctor lacks %s:\n%s", want, r.Stdout)
		}
	}
	if r.Code != 1 || !strings.Contains(detail, "[FAIL] Engine DB privileges: 3 grant(s)") || strings.Contains(r.Stdout, member) {
		t.Fatalf("exit %d; three grants, and no member of the group:\n%s", r.Code, r.Stdout)
	}
	for _, stmt := range regexp.MustCompile(`REVOKE [^;]+;`).FindAllString(detail, -1) {
		e2e.MustExec(t, db, stmt)
	}
	if r := p.OK("doctor"); !strings.Contains(r.Stdout, "[OK  ] Engine DB privileges") {
		t.Fatalf("after the REVOKEs:\n%s", r.Stdout)
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
		p.Write("craft-connector.yml", strings.Replace(p.Config(), "schema: public\n", "schema: ETL_CRAFT\n", 1))
		r := p.Run(nil, "doctor")
		create := regexp.MustCompile(`\(CREATE SCHEMA [^;]+;\)`).FindString(checkLines(r.Stdout)["Engine DB connection"])
		if r.Code != 1 || create != "(CREATE SCHEMA etl_craft;)" {
			t.Fatalf("doctor before the schema exists: exit %d\n%s", r.Code, r.Stdout)
		}
		db := enginetest.Plain(t, p.Engine)
		e2e.MustExec(t, db, strings.Trim(create, "()"))
		p.OK("setup")
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'etl_craft' AND tablename = 'cfg_pipelines'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("setup did not create the tables in etl_craft: %d, %v", n, err)
		}
		if r := p.OK("doctor"); !strings.Contains(r.Stdout, "[OK  ] Engine DB connection: PostgreSQL, schema etl_craft\n") {
			t.Fatalf("doctor:\n%s", r.Stdout)
		}
		if r := p.OK("setup", "--print-grants"); !strings.Contains(r.Stdout, `GRANT USAGE, CREATE ON SCHEMA "etl_craft" TO etl_craft_owner;`) {
			t.Fatalf("the grants name another schema:\n%s", r.Stdout)
		}
	})
	t.Run("warehouse", func(t *testing.T) {
		p := newProject(t, engine.SQLite, "")
		p.OK("setup")
		section, env, raw := e2e.PGWarehouse(t, "Analytics")
		p.WithWarehouse(section, env)
		wh, err := sql.Open("pgx", raw)
		if err != nil {
			t.Fatal(err)
		}
		defer wh.Close()
		e2e.MustExec(t, wh, `CREATE SCHEMA "Analytics"`)
		// "Analytics" is not the schema etl-craft writes to: analytics is.
		r := p.Run(nil, "doctor")
		if r.Code != 1 || !strings.Contains(checkLines(r.Stdout)["Warehouse connection"], "[FAIL]") {
			t.Fatalf("a schema that differs in case passed:\n%s", r.Stdout)
		}
		e2e.MustExec(t, wh, "CREATE SCHEMA analytics")
		if r := p.Run(nil, "doctor"); !strings.Contains(checkLines(r.Stdout)["Warehouse connection"], "[OK  ] Warehouse connection: Postgres, schema Analytics exists") {
			t.Fatalf("doctor:\n%s", r.Stdout)
		}
	})
}

func TestDoctorWarnsAboutAGroupWritableSQLiteFile(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("setup")
	os.Chmod(p.Engine.Path, 0o664)
	r := p.OK("doctor")
	line := checkLines(r.Stdout)["Engine DB file access"]
	if !strings.HasPrefix(line, "[WARN]") || !strings.Contains(line, "chmod go-w") {
		t.Fatalf("doctor after chmod g+w:\n%s", r.Stdout)
	}
	os.Chmod(p.Engine.Path, 0o644)
	if line := checkLines(p.OK("doctor").Stdout)["Engine DB file access"]; !strings.HasPrefix(line, "[OK  ]") {
		t.Fatalf("after chmod go-w: %s", line)
	}
}

func TestDoctorNamesTheReleaseTheLedgerComesFrom(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("setup")
	// The checksum the reference's 0.2.0 release recorded for its SQLite 0001.
	e2e.MustExec(t, enginetest.Plain(t, p.Engine), "UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = "+
		"'3b8f0b0b4d759894d7ee1c2aceac6424e7c450e4a62f795fe46e9498a3ce3ff5' WHERE VERSION = '0001_pipeline_pauses.sql'")
	line := checkLines(p.OK("doctor").Stdout)["Engine DB migrations"]
	if !strings.HasPrefix(line, "[OK  ]") || !strings.Contains(line, "up to date; the ledger comes from etl-craft 0.2.0 (Python reference)") {
		t.Fatalf("doctor: %s", line)
	}
}

// doctor warns when the HTTP API would listen beyond this machine, and says
// nothing of a loopback address.
func TestDoctorWarnsAboutAnAPIAddressBeyondLoopback(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("setup")
	if line, ok := checkLines(p.OK("doctor").Stdout)["API address"]; ok {
		t.Fatalf("the loopback 127.0.0.1:0 of the test projects drew %s", line)
	}
	yml, err := os.ReadFile(p.Dir + "/craft-connector.yml")
	if err != nil {
		t.Fatal(err)
	}
	p.Write("craft-connector.yml", strings.Replace(string(yml), "  Api_address: 127.0.0.1:0\n", "  Api_address: 0.0.0.0:8730\n", 1))
	line := checkLines(p.OK("doctor").Stdout)["API address"]
	if !strings.HasPrefix(line, "[WARN]") || !strings.Contains(line, "0.0.0.0:8730 is not a loopback address") || !strings.Contains(line, "TLS") {
		t.Fatalf("doctor with Api_address 0.0.0.0:8730: %q", line)
	}
}
