package chaos_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB database/sql driver, to compare two warehouse files

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// cloning turns cloning of every Engine DB table on: each run ends with a
// clone into the warehouse's schema.
const cloning = "\nCloning:\n  Enabled: true\n  Scope: all\n"

// fullClone is the second warehouse the mirrors are compared with: a
// DuckDB file beside the project's, or a schema beside its PostgreSQL one.
const fullClone = "fullclone"

// checkMirrors catches the mirrors up with `etl-craft clone`, as the next
// run would, then clones the Engine DB in full into a second warehouse
// (another DuckDB file, or another schema of the PostgreSQL warehouse)
// with a second configuration, and checks that every mirror holds exactly
// the rows of its full clone.
func checkMirrors(t testing.TB, p *e2e.Project) {
	t.Helper()
	p.OK("clone")
	yml := p.Config()
	at := strings.Index(yml, "Warehouse:\n")
	section := yml[at:]
	if p.WarehouseURL == "" {
		section = strings.Replace(section, "jdbc:duckdb:warehouse.duckdb", "jdbc:duckdb:"+fullClone+".duckdb", 1)
	} else {
		p.WarehouseExec("CREATE SCHEMA " + fullClone)
		section = strings.Replace(section, "schema: "+e2e.Schema+"\n", "schema: "+fullClone+"\n", 1)
	}
	p.Write(fullClone+".yml", yml[:at]+section)
	out := p.OK("clone", "--full", "--config", fullClone+".yml")
	var tables []string
	for line := range strings.Lines(out.Stdout) {
		if table, _, ok := strings.Cut(line, "\t"); ok {
			tables = append(tables, table)
		}
	}
	if len(tables) < 10 {
		t.Fatalf("the full clone copied %d tables:\n%s", len(tables), out.Stdout)
	}
	var query func(string) string
	var rows func(string) []string
	if p.WarehouseURL == "" {
		db, err := sql.Open("duckdb", filepath.Join(p.Dir, "warehouse.duckdb")+"?access_mode=read_only")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // the ATTACH belongs to the one connection
		e2e.MustExec(t, db, fmt.Sprintf("ATTACH '%s' AS %s (READ_ONLY)", filepath.Join(p.Dir, fullClone+".duckdb"), fullClone))
		rows = func(q string) []string { return e2e.QueryRows(t, db, q) }
	} else {
		rows = p.WarehouseRows
	}
	query = func(q string) string { return rows(q)[0] }
	// The clone commands record their requests in AUD_ACTIONS before they
	// copy: the full clone's own request is in its copy and not in the
	// mirror, which the clones of runs (they record none) leave alone.
	where := map[string]string{"AUD_ACTIONS": ` WHERE "COMMAND" <> 'clone'`}
	other := fullClone
	if p.WarehouseURL == "" {
		other += "." + e2e.Schema
	}
	for _, table := range tables {
		mirror := fmt.Sprintf(`(SELECT * FROM %s."%s"%s)`, e2e.Schema, table, where[table])
		full := fmt.Sprintf(`(SELECT * FROM %s."%s"%s)`, other, table, where[table])
		diff := query(fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT * FROM %[1]s a EXCEPT ALL SELECT * FROM %[2]s b) c) || ' ' ||
			(SELECT count(*) FROM (SELECT * FROM %[2]s b EXCEPT ALL SELECT * FROM %[1]s a) c) || ' ' || (SELECT count(*) FROM %[2]s b)`, mirror, full))
		var only, missing, total int
		fmt.Sscan(diff, &only, &missing, &total)
		if only != 0 || missing != 0 {
			sample := func(a, b string) string {
				return strings.Join(rows(fmt.Sprintf("SELECT * FROM (SELECT * FROM %s a EXCEPT ALL SELECT * FROM %s b) c LIMIT 5", a, b)), "\n")
			}
			t.Errorf("the mirror %s differs from a full clone of %d rows: %d row(s) only in the mirror, %d missing from it; only in the mirror:\n%s\nmissing:\n%s",
				table, total, only, missing, sample(mirror, full), sample(full, mirror))
		}
	}
}
