package sqltask_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/protocoltest"
)

// No live Databricks, Trino or Snowflake can be reached from the machines
// these tests run on. The SQL handler therefore runs against local servers
// of the Databricks Statement Execution API and the Trino client protocol
// (internal/warehouse/protocoltest), which check each request as the
// service does and answer from a small scripted catalog: the target's
// columns, the SELECT's columns, and counts. The exact statements each
// action sends are pinned in testdata/golden/<case>.sql (go test -run
// TestCloudGolden -update rewrites them).
//
// Each statement form, checked against the platform's documented grammar:
//
// Databricks (https://docs.databricks.com/en/sql/language-manual/):
//   - CREATE TABLE … AS, CREATE OR REPLACE TABLE … USING DELTA [LOCATION]
//     [TBLPROPERTIES] AS: sql-ref-syntax-ddl-create-table-using.html
//   - MERGE INTO … USING … ON … WHEN MATCHED [AND …] THEN UPDATE SET | DELETE:
//     delta-merge-into.html
//   - INSERT INTO … (cols) SELECT: sql-ref-syntax-dml-insert-into.html
//   - DELETE FROM … WHERE: delta-delete-from.html; UPDATE … SET: delta-update.html
//   - ALTER TABLE … ADD COLUMN: sql-ref-syntax-ddl-alter-table-manage-column.html
//   - DROP TABLE IF EXISTS: sql-ref-syntax-ddl-drop-table.html
//   - information_schema.columns/tables: sql-ref-information-schema.html
//
// Trino (https://trino.io/docs/current/sql/):
//   - create-table-as.html (CREATE [OR REPLACE] TABLE … WITH (location) AS),
//     create-table.html, merge.html, insert.html, delete.html, update.html,
//     alter-table.html (ADD COLUMN), drop-table.html; the Iceberg
//     connector's table properties: ../connector/iceberg.html

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// cloudCase is a warehouse served by a protocol server.
type cloudCase struct {
	name   string
	format warehouse.TableFormat
	kind   warehouse.Kind
}

var cloudCases = []cloudCase{
	{"databricks", warehouse.Native, warehouse.Databricks},
	{"databricks_iceberg", warehouse.Iceberg, warehouse.Databricks},
	{"trino_iceberg", warehouse.Iceberg, warehouse.Trino},
	{"snowflake", warehouse.Native, warehouse.Snowflake},
	{"snowflake_iceberg", warehouse.Iceberg, warehouse.Snowflake},
}

// catalog is the scripted warehouse behind a protocol server: the columns
// of the target and of the SELECT, in the service's type names.
type catalog struct {
	target  []protocoltest.Column // nil: the target does not exist
	source  []protocoltest.Column
	tables  []string          // what information_schema.tables lists
	failing func(string) bool // statements that fail
	running func(string) bool // statements that run until cancelled
}

// answer answers the handler's statements by what they are.
func (c *catalog) answer(s protocoltest.Statement) protocoltest.Result {
	q := s.SQL
	switch {
	case c.failing != nil && c.failing(q):
		return protocoltest.Result{Error: "[DELTA_CONCURRENT_APPEND] the statement failed", ErrorCode: "BAD_REQUEST"}
	case c.running != nil && c.running(q):
		return protocoltest.Result{Running: true}
	case strings.Contains(q, "information_schema.columns"):
		cols := c.target
		if len(s.Args) > 1 && s.Args[1] != nil && strings.HasPrefix(*s.Args[1], "etl_stage_") {
			cols = c.source
		}
		var rows [][]*string
		for _, col := range cols {
			rows = append(rows, []*string{protocoltest.Text(col.Name), protocoltest.Text(col.Type)})
		}
		return protocoltest.Result{Columns: []protocoltest.Column{{Name: "column_name", Type: "varchar"}, {Name: "data_type", Type: "varchar"}}, Rows: rows}
	case strings.Contains(q, "information_schema.tables"):
		var rows [][]*string
		for _, t := range c.tables {
			rows = append(rows, []*string{protocoltest.Text(t)})
		}
		return protocoltest.Result{Columns: []protocoltest.Column{{Name: "table_name", Type: "varchar"}}, Rows: rows}
	case strings.HasSuffix(q, "LIMIT 0"):
		return protocoltest.Result{Columns: c.source}
	case strings.HasPrefix(q, "SELECT COUNT"):
		head, _, _ := strings.Cut(q, " FROM ")
		n := strings.Count(head, "COUNT(")
		cols := make([]protocoltest.Column, n)
		row := make([]*string, n)
		for i := range cols {
			v := "2"
			if strings.HasSuffix(q, " IS NULL") || strings.Contains(q, "HAVING COUNT(*) > 1") {
				v = "0"
			}
			cols[i], row[i] = protocoltest.Column{Name: fmt.Sprintf("c%d", i), Type: "bigint"}, protocoltest.Text(v)
		}
		return protocoltest.Result{Columns: cols, Rows: [][]*string{row}}
	}
	return protocoltest.Result{}
}

// cloudServer serves a case's protocol over the catalog.
type cloudServer interface {
	Statements() []protocoltest.Statement
	Cancels() []string
}

// newCloudEnv returns an env whose warehouse is a protocol server over cat.
func newCloudEnv(t *testing.T, c cloudCase, cat *catalog) (*env, cloudServer) {
	t.Helper()
	var srv cloudServer
	var opts warehouse.Options
	switch c.kind {
	case warehouse.Databricks:
		d := protocoltest.NewDatabricks(t, cat.answer)
		host, port := d.HostPort()
		opts = warehouse.Options{Kind: warehouse.Databricks, TableFormat: c.format, Host: host, Port: port,
			HTTPPath: "/sql/1.0/warehouses/" + protocoltest.DatabricksWarehouse, Catalog: "main", Schema: "staging",
			AuthMode: warehouse.AuthToken, Password: func() (string, error) { return protocoltest.DatabricksToken, nil },
			HTTPClient: d.Client()}
		srv = d
	case warehouse.Snowflake:
		sf := protocoltest.NewSnowflake(t, cat.answer)
		host, port := sf.HostPort()
		opts = warehouse.Options{Kind: warehouse.Snowflake, TableFormat: c.format, Account: "xy12345", User: "loader",
			Catalog: "ANALYTICS", Schema: "STAGING", Warehouse: "LOAD_WH", Role: "LOADER", Host: host, Port: port,
			AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return "secret", nil }, HTTPClient: sf.Client()}
		if c.format == warehouse.Iceberg {
			opts.Storage = warehouse.Storage{ExternalVolume: "lake_volume", BaseLocation: "mirrors/"}
		}
		srv = sf
	default:
		tr := protocoltest.NewTrino(t, cat.answer)
		host, port := tr.HostPort()
		opts = warehouse.Options{Kind: warehouse.Trino, TableFormat: c.format, Host: host, Port: port, User: "etl",
			Catalog: "iceberg", Schema: "staging", AuthMode: warehouse.AuthNone, Params: map[string]string{"SSL": "true"},
			HTTPClient: tr.Client()}
		srv = tr
	}
	return newEngineEnv(t, opts), srv
}

// types names the portable column kinds in a case's type names.
func types(kind warehouse.Kind) map[string]string {
	if kind == warehouse.Snowflake {
		return map[string]string{"id": "NUMBER(38,0)", "text": "VARCHAR(16777216)", "num": "NUMBER(12,2)", "ts": "TIMESTAMP_TZ(9)"}
	}
	if kind == warehouse.Databricks {
		return map[string]string{"id": "bigint", "text": "string", "num": "decimal(12,2)", "ts": "timestamp"}
	}
	return map[string]string{"id": "bigint", "text": "varchar", "num": "decimal(12,2)", "ts": "timestamp(6) with time zone"}
}

// cols builds columns from name:kind pairs.
func cols(kind warehouse.Kind, pairs ...string) []protocoltest.Column {
	ty := types(kind)
	out := make([]protocoltest.Column, len(pairs))
	for i, p := range pairs {
		name, k, _ := strings.Cut(p, ":")
		if kind == warehouse.Snowflake {
			name = strings.ToUpper(name)
		}
		out[i] = protocoltest.Column{Name: name, Type: ty[k]}
	}
	return out
}

// auditOf returns the target columns of a writer besides the SELECT's.
func auditOf(kind warehouse.Kind, action string) []protocoltest.Column {
	ident := []string{"pipeline_id:id", "pipeline_run_id:id", "task_run_id:id"}
	scd1 := append(append([]string{}, ident...), "hash_key:text", "create_date:ts", "created_by:text", "update_date:ts", "updated_by:text", "delete_flag:text")
	var names []string
	switch action {
	case "OVERWRITE_TABLE":
		names = append(ident, "update_date:ts")
	case "APPEND_TABLE":
		names = append(ident, "create_date:ts")
	case "SCD1_MERGE", "DELETE_ROWS":
		names = scd1
	case "SCD2_MERGE":
		names = append(scd1, "active_flag:text")
	default:
		names = ident
	}
	return cols(kind, append(names, "row_id:id")...)
}

// goldenStatements renders the statements a server received, the bound
// values after each.
func goldenStatements(title string, sts []protocoltest.Statement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s\n", title)
	for _, s := range sts {
		b.WriteString(s.SQL)
		if len(s.Args) > 0 {
			vals := make([]string, len(s.Args))
			for i, a := range s.Args {
				vals[i] = "NULL"
				if a != nil {
					vals[i] = *a
				}
			}
			b.WriteString(" -- [" + strings.Join(vals, ", ") + "]")
		}
		b.WriteString(";\n")
	}
	return b.String() + "\n"
}

// scratchToken replaces the random part of scratch table names.
var scratchToken = regexp.MustCompile(`etl_stage_(\d+)_[0-9a-f]{8}`)

func TestCloudGolden(t *testing.T) {
	t.Parallel()
	for _, c := range cloudCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			src := "SELECT id, name, amount FROM raw.orders"
			source := cols(c.kind, "id:id", "name:text", "amount:num")
			user := cols(c.kind, "id:id", "name:text", "amount:num")
			var storage []string
			switch {
			case c.kind == warehouse.Databricks || c.kind == warehouse.Trino:
				storage = []string{"EXTERNAL_LOCATION", "s3://lake/staging/orders"}
			case c.format == warehouse.Iceberg:
				storage = []string{"EXTERNAL_VOLUME", "lake_volume", "BASE_LOCATION", "staging/orders"}
			}
			for _, a := range []struct {
				title  string
				action string
				target []protocoltest.Column // nil: absent
				source []protocoltest.Column
				extra  []string
			}{
				{"CREATE_TABLE, the target absent", "CREATE_TABLE", nil, source, storage},
				{"CREATE_TABLE, the target exists", "CREATE_TABLE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "CREATE_TABLE")...), source, nil},
				{"SETUP_TABLE for SCD2_MERGE", "SETUP_TABLE", nil, source, append([]string{"SETUP_FOR", "SCD2_MERGE"}, storage...)},
				{"OVERWRITE_TABLE", "OVERWRITE_TABLE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "OVERWRITE_TABLE")...), source, nil},
				{"OVERWRITE_TABLE, evolved (SCHEMA_EVOLUTION adds note)", "OVERWRITE_TABLE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "OVERWRITE_TABLE")...),
					append(append([]protocoltest.Column{}, source...), cols(c.kind, "note:text")...), []string{"SCHEMA_EVOLUTION", "true"}},
				{"APPEND_TABLE", "APPEND_TABLE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "APPEND_TABLE")...), source, nil},
				{"SCD1_MERGE, PRESERVE_TARGET", "SCD1_MERGE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "SCD1_MERGE")...), source,
					[]string{"MERGE_KEY", "id", "PRESERVE_TARGET", "true"}},
				{"SCD2_MERGE, evolved, MERGE_DEDUPE_ORDER", "SCD2_MERGE", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "SCD2_MERGE")...),
					append(append([]protocoltest.Column{}, source...), cols(c.kind, "note:text")...), []string{"MERGE_KEY", "id", "SCHEMA_EVOLUTION", "true", "MERGE_DEDUPE_ORDER", "amount DESC"}},
				{"DELETE_ROWS, soft", "DELETE_ROWS", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "SCD1_MERGE")...), source, []string{"MERGE_KEY", "id"}},
				{"DELETE_ROWS, HARD_DELETE", "DELETE_ROWS", append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "SCD1_MERGE")...), source, []string{"MERGE_KEY", "id", "HARD_DELETE", "true"}},
				{"DROP_TABLE", "DROP_TABLE", user, nil, nil},
			} {
				cat := &catalog{target: a.target, source: a.source}
				e, srv := newCloudEnv(t, c, cat)
				p := params("SQL_ACTION", a.action, "TARGET_OBJECT", "staging.orders")
				if a.action != "DROP_TABLE" {
					p["SOURCE_SQL"] = src
				}
				for i := 0; i+1 < len(a.extra); i += 2 {
					p[a.extra[i]] = a.extra[i+1]
				}
				if strings.HasSuffix(a.action, "_MERGE") {
					sqltaskSetVersion(t, e)
				}
				if a.action == "DROP_TABLE" {
					create := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", src)
					id := e.b.Task("P", "make", "SQL", create)
					e.b.Exec("INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'SUCCESS')", id, e.runID)
				}
				if _, err := e.run(p); err != nil {
					t.Fatalf("%s: %v\n%s", a.title, err, e.logs.String())
				}
				out.WriteString(goldenStatements(a.title, srv.Statements()))
			}
			out.WriteString(rehashAndUpgrade(t, c, user))
			got := scratchToken.ReplaceAllString(out.String(), "etl_stage_${1}_<token>")
			path := filepath.Join("testdata", "golden", c.name+".sql")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestCloudGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the statements sent (go test -run TestCloudGolden -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// rehashAndUpgrade renders the statements of etl-craft rehash on a merge
// target and of etl-craft upgrade-targets on a target lacking the
// run-identity columns.
func rehashAndUpgrade(t *testing.T, c cloudCase, user []protocoltest.Column) string {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	merge := params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.orders", "MERGE_KEY", "id", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders")
	cat := &catalog{target: append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "SCD1_MERGE")...)}
	e, srv := newCloudEnv(t, c, cat)
	e.b.Task("P", "merge", "SQL", merge)
	w := e.open()
	r, err := sqltask.Rehash(ctx, e.db, w, "staging.orders", false)
	w.Close()
	if err != nil || r.Rows != 2 {
		t.Fatalf("rehash: %+v, %v", r, err)
	}
	out.WriteString(goldenStatements("etl-craft rehash --target staging.orders", srv.Statements()))

	cat = &catalog{target: append(append([]protocoltest.Column{}, user...), cols(c.kind, "pipeline_run_id:id", "create_date:ts")...)}
	e, srv = newCloudEnv(t, c, cat)
	e.b.Task("P", "append", "SQL", params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
	w = e.open()
	ups, err := sqltask.UpgradeTargets(ctx, e.db, w, "", "", false)
	w.Close()
	if err != nil || len(ups) != 1 || len(ups[0].Added) != 2 {
		t.Fatalf("upgrade-targets: %+v, %v", ups, err)
	}
	out.WriteString(goldenStatements("etl-craft upgrade-targets", srv.Statements()))
	return out.String()
}

// sqltaskSetVersion records change-hash version 2 for the golden target.
func sqltaskSetVersion(t *testing.T, e *env) {
	t.Helper()
	w, err := warehouse.Open(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, key, err := sqltask.ParseTarget(w, "staging.orders")
	if err != nil {
		t.Fatal(err)
	}
	if err := sqltask.NewEngineState(e.db, e.pipelineID, e.runID).SetHashVersion(context.Background(), key, 2); err != nil {
		t.Fatal(err)
	}
}
