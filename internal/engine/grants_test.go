package engine_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// privilegeCheck is a has_*_privilege question and its expected answer once
// the grants have run.
type privilegeCheck struct {
	query string
	want  bool
}

// privilegeChecks are the questions about the roles the grants create.
var privilegeChecks = []privilegeCheck{
	{"SELECT has_table_privilege('etl_craft_engine', 'cfg_tasks', 'INSERT, UPDATE, DELETE')", true},
	{"SELECT has_table_privilege('etl_craft_engine', 'cfg_tasks', 'TRUNCATE')", false},
	{"SELECT has_schema_privilege('etl_craft_engine', current_schema(), 'CREATE')", false},
	{"SELECT has_sequence_privilege('etl_craft_engine', 'cfg_api_tokens_token_id_seq', 'USAGE')", true},
	{"SELECT has_table_privilege('etl_craft_reader', 'aud_pipelines_run_log', 'SELECT')", true},
	{"SELECT has_table_privilege('etl_craft_reader', 'aud_pipelines_run_log', 'INSERT')", false},
	{"SELECT has_schema_privilege('etl_craft_owner', current_schema(), 'CREATE')", true},
	{"SELECT bool_and(tableowner = 'etl_craft_owner') FROM pg_tables WHERE schemaname = current_schema()", true},
	{`SELECT bool_and(pg_get_userbyid(proowner) = 'etl_craft_owner') FROM pg_proc
	   WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`, true},
	{`SELECT bool_and(pg_get_userbyid(relowner) = 'etl_craft_owner') FROM pg_class
	   WHERE relkind = 'S' AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`, true},
	// Grants that existed before are gone, PUBLIC's too.
	{"SELECT has_table_privilege('public', 'cfg_tasks', 'INSERT')", false},
}

func TestGrantsRunOnAnEngineDB(t *testing.T) {
	t.Parallel()
	opts := enginetest.NewOptions(t, engine.Postgres)
	db := initialized(t, opts)
	seed(t, db)
	admin := enginetest.Plain(t, opts) // a superuser, as the text expects
	ctx := context.Background()
	b := make([]byte, 4)
	rand.Read(b)
	writer := "etl_craft_test_writer_" + hex.EncodeToString(b)
	for _, q := range []string{
		"CREATE ROLE " + writer + " NOLOGIN",
		"GRANT UPDATE ON cfg_tasks TO " + writer,
		"GRANT INSERT ON cfg_tasks TO PUBLIC",
		// Column-level grants, which relacl does not show.
		"GRANT UPDATE (sla_status) ON aud_pipelines_run_log TO " + writer,
		"GRANT INSERT (handler), UPDATE (handler) ON cfg_tasks TO PUBLIC",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		admin.Exec("DROP OWNED BY " + writer)
		admin.Exec("DROP ROLE " + writer)
	})
	text := engine.Grants(opts.Schema)
	// As a program would run it, statement by statement.
	for _, s := range sqlscan.Split(text, sqlscan.Postgres) {
		if _, err := admin.ExecContext(ctx, s.Text); err != nil {
			t.Fatalf("grants line %d: %v\n%s", s.Line, err, s.Text)
		}
	}
	// As a person would run it, piped into psql; a second run changes nothing.
	cmd := exec.Command(enginetest.Client(t, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", opts.DSN)
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	checks := append(privilegeChecks,
		privilegeCheck{fmt.Sprintf("SELECT has_table_privilege('%s', 'cfg_tasks', 'UPDATE')", writer), false},
		privilegeCheck{fmt.Sprintf("SELECT has_any_column_privilege('%s', 'aud_pipelines_run_log', 'UPDATE')", writer), false},
		privilegeCheck{"SELECT has_any_column_privilege('public', 'cfg_tasks', 'INSERT, UPDATE')", false})
	for _, c := range checks {
		var got sql.NullBool
		if err := admin.QueryRowContext(ctx, c.query).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if got.Bool != c.want {
			t.Errorf("%s = %v, want %v", c.query, got.Bool, c.want)
		}
	}
	// The engine role writes rows through the guards; the owner role creates
	// tables, which the engine may then write.
	asRole := func(role string, statements ...string) error {
		tx, err := admin.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, s := range append([]string{"SET LOCAL ROLE " + role,
			"SELECT set_config('etl_craft.actor', 'alice', true), set_config('etl_craft.actor_kind', 'HUMAN', true)"},
			statements...) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	if err := asRole(engine.EngineRole,
		"INSERT INTO cfg_pipelines (pipeline_code, pipeline_name, refresh_type) VALUES ('R', 'R', 'FULL')",
		"INSERT INTO cfg_api_tokens (name, token_sha256, role, created_by, created_at) VALUES ('x', 'y', 'admin', 'alice', now())",
		"UPDATE aud_pipelines_run_log SET sla_status = 'MET'"); err != nil {
		t.Errorf("the engine role cannot write rows: %v", err)
	}
	for _, s := range []string{"TRUNCATE aud_gate_waits", "CREATE TABLE cfg_mine (id integer)"} {
		if err := asRole(engine.EngineRole, s); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("the engine role: %s: %v", s, err)
		}
	}
	if err := asRole(engine.ReaderRole, "UPDATE cfg_tasks SET handler = handler"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the reader role could write: %v", err)
	}
	if err := asRole(engine.OwnerRole, "CREATE TABLE cfg_owned (id integer)",
		"SET LOCAL ROLE "+engine.EngineRole, "INSERT INTO cfg_owned (id) VALUES (1)"); err != nil {
		t.Errorf("a table the owner creates: %v", err)
	}
}

func TestGrantsQuoteTheSchema(t *testing.T) {
	t.Parallel()
	text := engine.Grants(`Odd "$grants$" name`)
	for _, want := range []string{
		`GRANT USAGE, CREATE ON SCHEMA "Odd ""$grants$"" name" TO etl_craft_owner;`,
		`WHERE n.nspname = 'Odd "$grants$" name'`,
		"DO $grants1$\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the grants text lacks %q", want)
		}
	}
	if strings.Contains(text, "DO $grants$") {
		t.Error("a DO body is quoted with a tag the schema name holds")
	}
	stmts := sqlscan.Split(text, sqlscan.Postgres)
	if len(stmts) != 14 {
		t.Errorf("the text splits into %d statements, want 14", len(stmts))
	}
}

func TestSQLiteFileAdvice(t *testing.T) {
	t.Parallel()
	got := engine.SQLiteFileAdvice("/srv/etl/it's here/engine.db")
	for _, want := range []string{
		"file permissions are the boundary",
		`chmod 700 '/srv/etl/it'\''s here'`,
		`chmod 600 '/srv/etl/it'\''s here/engine.db'`,
		`chmod go-w '/srv/etl/it'\''s here/engine.db'`,
		`'/srv/etl/it'\''s here/engine.db-wal'`,
		"doctor warns",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the advice lacks %q:\n%s", want, got)
		}
	}
}
