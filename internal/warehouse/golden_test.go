package warehouse

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenCases are the dialects, table formats and storage settings whose SQL
// is pinned in testdata/golden/<name>.sql.
var goldenCases = []struct {
	name    string
	kind    Kind
	format  TableFormat
	storage Storage
}{
	{"duckdb", DuckDB, Native, Storage{}},
	{"postgres", Postgres, Native, Storage{}},
	{"trino", Trino, Native, Storage{}},
	{"databricks", Databricks, Native, Storage{}},
	{"databricks_base_location", Databricks, Native, Storage{BaseLocation: "s3://lake/etl-craft/"}},
	{"databricks_iceberg", Databricks, Iceberg, Storage{}},
	{"databricks_iceberg_base_location", Databricks, Iceberg, Storage{BaseLocation: "abfss://lake@acct.dfs.core.windows.net/mirrors"}},
	{"snowflake", Snowflake, Native, Storage{}},
	{"snowflake_iceberg", Snowflake, Iceberg, Storage{ExternalVolume: "lake_volume", BaseLocation: "etl_craft/mirrors/"}},
}

// mirrorColumns cover every portable type and a name that needs quoting.
var mirrorColumns = []Column{
	{"PIPELINE_ID", BigInt},
	{"PIPELINE_CODE", String},
	{"ACTIVE", Boolean},
	{"SLA_HOURS", Decimal},
	{"RUN_DATE", Date},
	{"CREATE_DATE", Timestamp},
	{`Odd "Name"`, String},
}

// goldenSQL renders everything a dialect generates, one labelled block each.
func goldenSQL(d Dialect) string {
	var b strings.Builder
	section := func(title string, lines ...string) {
		fmt.Fprintf(&b, "-- %s\n", title)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	caps := d.Capabilities()
	section("dialect", "-- name: "+d.Name(),
		fmt.Sprintf("-- replace: %s, row id: %s, transactions: %t, temp tables: %t, pk enforced: %t, single writer: %t",
			caps.Replace, caps.RowID, caps.Transactions, caps.TempTables, caps.PKEnforced, caps.SingleWriter),
		fmt.Sprintf("-- merge update: %t, ddl commits: %t", caps.MergeUpdate, caps.DDLCommits),
		"-- fold Mixed_Case: "+d.Fold("Mixed_Case"),
		"-- quote: "+d.Quote(`it's a "name"`))
	var types []string
	for _, t := range Types {
		types = append(types, fmt.Sprintf("-- %s: %s", t, d.TypeName(t)))
	}
	section("type mapping", types...)
	mirror := Table{Catalog: "Analytics", Schema: "etl_craft", Name: "CFG_PIPELINES"}
	section("create mirror", d.CreateTable(mirror, mirrorColumns)+";")
	section("add column", d.AddColumn(mirror, Column{"ROWS_WRITTEN", BigInt})+";",
		d.AddColumn(mirror, Column{"UPDATE_DATE", Timestamp})+";")
	section("truncate", d.Truncate(mirror)+";")
	per := RowsPerInsert(len(mirrorColumns))
	section(fmt.Sprintf("insert: %d columns, %d rows per statement (%d bound values at most); a last batch of 2 rows",
		len(mirrorColumns), per, MaxBoundValues), Insert(d, mirror, mirrorColumns, 2)+";")
	sq, sargs := d.schemaQuery("Analytics", "etl_craft")
	cq, cargs := d.columnsQuery(mirror)
	section("look-ups", fmt.Sprintf("%s; -- %q", sq, sargs), fmt.Sprintf("%s; -- %q", cq, cargs))
	return b.String()
}

func TestGoldenSQL(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDialect(c.kind, c.format, c.storage)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenSQL(d)
			path := filepath.Join("testdata", "golden", c.name+".sql")
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
				t.Fatalf("%v (run go test -run TestGoldenSQL -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the generated SQL (go test -run TestGoldenSQL -update rewrites it):\n%s", path, got)
			}
		})
	}
}

func TestRowsPerInsert(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cols, rows int }{{1, 250}, {3, 83}, {7, 35}, {250, 1}, {251, 1}, {400, 1}} {
		if got := RowsPerInsert(c.cols); got != c.rows {
			t.Errorf("RowsPerInsert(%d) = %d, want %d", c.cols, got, c.rows)
		}
		if c.cols <= MaxBoundValues && RowsPerInsert(c.cols)*c.cols > MaxBoundValues {
			t.Errorf("%d columns bind more than %d values", c.cols, MaxBoundValues)
		}
	}
}

func TestNewDialectRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		kind    Kind
		format  TableFormat
		storage Storage
		want    string
	}{
		{"postgres iceberg", Postgres, Iceberg, Storage{}, "PostgreSQL has no Iceberg"},
		{"duckdb iceberg", DuckDB, Iceberg, Storage{}, "DuckDB over an Iceberg REST catalog"},
		{"unknown format", DuckDB, "parquet", Storage{}, `"parquet" is not native or iceberg`},
		{"unknown kind", "oracle", Native, Storage{}, `"oracle" is not a warehouse`},
		{"snowflake iceberg without volume", Snowflake, Iceberg, Storage{BaseLocation: "x"}, "need both Cloning.External_volume and Cloning.Base_location"},
		{"snowflake iceberg without location", Snowflake, Iceberg, Storage{ExternalVolume: "v"}, "need both"},
		{"quote in volume", Snowflake, Iceberg, Storage{ExternalVolume: "v'x", BaseLocation: "b"}, "Cloning.External_volume \"v'x\" must not contain a quote"},
		{"quote in base location", Databricks, Native, Storage{BaseLocation: "s3://a'b"}, "Cloning.Base_location \"s3://a'b\" must not contain a quote"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDialect(c.kind, c.format, c.storage)
			if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a configuration error containing %q", err, c.want)
			}
		})
	}
}

// A table name is quoted exactly; the catalog and schema fold as the
// warehouse folds unquoted names.
func TestQualify(t *testing.T) {
	t.Parallel()
	tbl := Table{Catalog: "Analytics", Schema: "Staging", Name: `Odd "Name"`}
	for kind, want := range map[Kind]string{
		DuckDB:     `"Analytics"."Staging"."Odd ""Name"""`,
		Postgres:   `"analytics"."staging"."Odd ""Name"""`,
		Trino:      `"analytics"."staging"."Odd ""Name"""`,
		Databricks: "`analytics`.`staging`.`Odd \"Name\"`",
		Snowflake:  `"ANALYTICS"."STAGING"."Odd ""Name"""`,
	} {
		d, err := NewDialect(kind, Native, Storage{})
		if err != nil {
			t.Fatal(err)
		}
		if got := Qualify(d, tbl); got != want {
			t.Errorf("%s: Qualify = %s, want %s", kind, got, want)
		}
	}
	d, _ := NewDialect(Databricks, Native, Storage{})
	if got := d.Quote("a`b"); got != "`a``b`" {
		t.Errorf("Databricks quote = %s", got)
	}
}

// Trino writes Iceberg whatever the table format: the catalog decides.
func TestTrinoIsIcebergEitherWay(t *testing.T) {
	t.Parallel()
	native, _ := NewDialect(Trino, Native, Storage{})
	iceberg, _ := NewDialect(Trino, Iceberg, Storage{})
	if native != iceberg || native.Name() != "trino_iceberg" {
		t.Fatalf("native %v and iceberg %v differ", native, iceberg)
	}
}
