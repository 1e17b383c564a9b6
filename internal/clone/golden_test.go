package clone

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenDialects are the warehouses whose clone statements are pinned in
// testdata/golden/<name>.sql; the cloud warehouses are checked only here.
var goldenDialects = []struct {
	name    string
	kind    warehouse.Kind
	format  warehouse.TableFormat
	storage warehouse.Storage
}{
	{"duckdb", warehouse.DuckDB, warehouse.Native, warehouse.Storage{}},
	{"postgres", warehouse.Postgres, warehouse.Native, warehouse.Storage{}},
	{"trino", warehouse.Trino, warehouse.Iceberg, warehouse.Storage{}},
	{"databricks", warehouse.Databricks, warehouse.Native, warehouse.Storage{}},
	{"databricks_base_location", warehouse.Databricks, warehouse.Native, warehouse.Storage{BaseLocation: "s3://lake/etl-craft/"}},
	{"databricks_iceberg", warehouse.Databricks, warehouse.Iceberg, warehouse.Storage{}},
	{"snowflake", warehouse.Snowflake, warehouse.Native, warehouse.Storage{}},
	{"snowflake_iceberg", warehouse.Snowflake, warehouse.Iceberg, warehouse.Storage{ExternalVolume: "lake_volume", BaseLocation: "etl_craft/mirrors"}},
}

// goldenProjectTable is a project table whose names need quoting, cloned in
// the golden tests beside the packaged CFG_PIPELINES.
const goldenProjectTable = `CREATE TABLE "AUD_Odd Notes" ("Note Id" INTEGER, "Body ""Quoted""" VARCHAR, SCORE NUMERIC, SEEN_AT TIMESTAMP, SEEN_ON DATE, OK BOOLEAN)`

// engineColumns reads the columns of CFG_PIPELINES and of the project table
// from a live Engine DB of the dialect.
func engineColumns(t *testing.T, kind engine.Kind) map[string][]column {
	t.Helper()
	ctx := context.Background()
	db := pipelinetest.DB(t, kind)
	pipelinetest.New(t, db).Exec(goldenProjectTable)
	out := map[string][]column{}
	tables, err := engineTables(ctx, db, []string{"CFG_PIPELINES", "AUD_ODD NOTES"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tables {
		if out[strings.ToUpper(name)], err = columns(ctx, db, name); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// renderPlans writes what a clone does with each table on the dialect: the
// mirror's DDL when it is missing and when it lacks two columns, then the
// row replacement (TRUNCATE, and the INSERT the warehouses without a bulk
// path use: here a last batch of two rows).
func renderPlans(d warehouse.Dialect, tables map[string][]column) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- dialect %s\n", d.Name())
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		cols := tables[name]
		mirror := warehouse.Table{Catalog: "Analytics", Schema: "etl_craft", Name: name}
		created := planMirror(d, mirror, cols, nil)
		fmt.Fprintf(&b, "\n-- %s: a missing mirror is created\n%s;\n", name, strings.Join(created.ddl, ";\n"))
		var existing []warehouse.ColumnInfo
		for _, c := range created.load[:len(created.load)-2] {
			existing = append(existing, warehouse.ColumnInfo{Name: c.Name})
		}
		grown := planMirror(d, mirror, cols, existing)
		fmt.Fprintf(&b, "\n-- %s: a mirror lacking its last two columns gains them (added %s)\n%s;\n",
			name, strings.Join(grown.added, ", "), strings.Join(grown.ddl, ";\n"))
		fmt.Fprintf(&b, "\n-- %s: every clone replaces the rows, %d to an INSERT without a bulk path\n%s;\n%s;\n",
			name, warehouse.RowsPerInsert(len(grown.load)), d.Truncate(mirror), warehouse.Insert(d, mirror, grown.load, 2))
	}
	return b.String()
}

// checkGolden compares got with testdata/golden/<name>.sql, rewriting it
// under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".sql")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/clone -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; if the change is intended, rerun with -update\ngot:\n%s", path, got)
	}
}

func TestGoldenCloneStatements(t *testing.T) {
	t.Parallel()
	tables := engineColumns(t, engine.SQLite)
	for _, c := range goldenDialects {
		t.Run(c.name, func(t *testing.T) {
			d, err := warehouse.NewDialect(c.kind, c.format, c.storage)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.name, renderPlans(d, tables))
		})
	}
}

func TestGoldenEngineReads(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, kind := range []engine.Kind{engine.SQLite, engine.Postgres} {
		db := pipelinetest.DB(t, kind)
		pipelinetest.New(t, db).Exec(goldenProjectTable)
		tables, err := engineTables(context.Background(), db, []string{"CFG_PIPELINES", "AUD_ODD NOTES"})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range tables {
			cols, err := columns(context.Background(), db, name)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "-- %s, %s\n%s;\n\n", kind.Label(), displayName(name), selectQuery(db, name, cols))
			if db.Capabilities().CopyOut {
				fmt.Fprintf(&b, "-- %s, %s, into a PostgreSQL warehouse\n%s;\n\n", kind.Label(), displayName(name), engine.CopyOutStatement(selectQuery(db, name, cols)))
			}
		}
	}
	checkGolden(t, "engine_reads", b.String())
}

func TestBothEngineDialectsGiveTheSameMirrors(t *testing.T) {
	t.Parallel()
	sqlite, postgres := engineColumns(t, engine.SQLite), engineColumns(t, engine.Postgres)
	for name, cols := range sqlite {
		var a, b []string
		for _, c := range cols {
			a = append(a, strings.ToUpper(c.Name)+" "+c.typ.String())
		}
		for _, c := range postgres[name] {
			b = append(b, strings.ToUpper(c.Name)+" "+c.typ.String())
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s mirrors differently:\nSQLite     %v\nPostgreSQL %v", name, a, b)
		}
	}
}
