package sqltask_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/protocoltest"
)

// These tests run against the protocol servers of cloud_golden_test.go:
// no live cloud warehouse is reachable from here.

// sqls returns the text of the statements a server received.
func sqls(srv cloudServer) []string {
	var out []string
	for _, s := range srv.Statements() {
		out = append(out, s.SQL)
	}
	return out
}

// inOrder fails unless each of want is a prefix of a statement of got, in
// this order.
func inOrder(t *testing.T, got []string, want ...string) {
	t.Helper()
	i := 0
	for _, s := range got {
		if i < len(want) && strings.HasPrefix(s, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("no statement starting %q after the earlier ones in:\n%s", want[i], strings.Join(got, ";\n"))
	}
}

// recoveryCases are the cloud warehouses whose replacements keep a
// recovery copy.
func recoveryCases() []cloudCase {
	var out []cloudCase
	for _, c := range cloudCases {
		d, err := warehouse.NewDialect(c.kind, c.format, warehouse.Storage{ExternalVolume: "v", BaseLocation: "b"})
		if err == nil && d.Capabilities().Replace == warehouse.CopyAndRestore {
			out = append(out, c)
		}
	}
	return out
}

// overwriteCatalog is a target with OVERWRITE_TABLE's columns.
func overwriteCatalog(kind warehouse.Kind) *catalog {
	user := cols(kind, "id:id", "name:text", "amount:num")
	return &catalog{target: append(append([]protocoltest.Column{}, user...), auditOf(kind, "OVERWRITE_TABLE")...), source: user}
}

// beside returns the quoted name of the table of the target's schema that
// name gives from the target's own table name (nil: the target).
func beside(t *testing.T, e *env, name func(target string) string) string {
	t.Helper()
	w := e.open()
	defer w.Close()
	tbl, _, err := sqltask.ParseTarget(w, "staging.orders")
	if err != nil {
		t.Fatal(err)
	}
	if name != nil {
		tbl.Name = name(tbl.Name)
	}
	return warehouse.Qualify(w, tbl)
}

// keepOf names a recovery copy of the target.
func keepOf(suffix string) func(string) string {
	return func(target string) string { return target + "__etl_keep_" + suffix }
}

// A replacement whose INSERT fails after the target's rows were deleted
// puts them back from the recovery copy, drops the copy and the scratch
// table, and fails with exit 15 naming the step.
func TestCloudRecoveryCopyOnFailure(t *testing.T) {
	t.Parallel()
	for _, c := range recoveryCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cat := overwriteCatalog(c.kind)
			cat.failing = func(q string) bool { return strings.HasPrefix(q, "INSERT INTO") && strings.Contains(q, "etl_stage_") }
			e, srv := newCloudEnv(t, c, cat)
			_, err := e.run(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
			if !exit.Is(err, exit.Handler) || !strings.Contains(err.Error(), "publish the replacement failed for staging.orders") ||
				!strings.Contains(err.Error(), "the statement failed") {
				t.Fatalf("got %v", err)
			}
			target, keep := beside(t, e, nil), beside(t, e, keepOf("101_1"))
			got := sqls(srv)
			inOrder(t, got,
				"CREATE TABLE "+keep+" AS SELECT * FROM "+target,
				"DELETE FROM "+target,
				"INSERT INTO "+target,
				"DELETE FROM "+target,
				"INSERT INTO "+target+" (",
				"DROP TABLE IF EXISTS "+keep,
				"DROP TABLE IF EXISTS ")
			restore := got[slices.IndexFunc(got, func(s string) bool { return strings.HasSuffix(s, "FROM "+keep) && strings.HasPrefix(s, "INSERT") })]
			if !strings.Contains(restore, "row_id") && !strings.Contains(restore, "ROW_ID") {
				t.Errorf("the restore does not put ROW_ID back: %s", restore)
			}
			if !slices.ContainsFunc(got, func(s string) bool {
				return strings.HasPrefix(s, "DROP TABLE IF EXISTS") && strings.Contains(s, "etl_stage_101_")
			}) {
				t.Errorf("the scratch table was not dropped:\n%s", strings.Join(got, ";\n"))
			}
		})
	}
}

// A recovery copy a crashed attempt left is found by the next attempt
// writing the target, which restores the target from it and drops it, and
// drops the scratch tables its task run's earlier attempt left, before it
// does its own work.
func TestCloudRecoveryCopyLeftByCrash(t *testing.T) {
	t.Parallel()
	for _, c := range recoveryCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cat := overwriteCatalog(c.kind)
			e, srv := newCloudEnv(t, c, cat)
			target, keep := beside(t, e, nil), beside(t, e, keepOf("77_2"))
			stale := beside(t, e, func(string) string { return "etl_stage_101_0badf00d" })
			var keepName string
			beside(t, e, func(n string) string { keepName = keepOf("77_2")(n); return n })
			cat.tables = []string{keepName, "etl_stage_101_0badf00d", "other_table"}
			e.must(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
			inOrder(t, sqls(srv),
				"DELETE FROM "+target,
				"INSERT INTO "+target+" (",
				"DROP TABLE IF EXISTS "+keep,
				"DROP TABLE IF EXISTS "+stale,
				"CREATE TABLE ",
				"CREATE TABLE "+beside(t, e, keepOf("101_1")))
			if strings.Contains(e.logs.String(), "other_table") {
				t.Error("a table of another name was touched")
			}
			if !strings.Contains(e.logs.String(), "restoring the target from its recovery copy") {
				t.Error("the restore was not logged")
			}
		})
	}
}

// Two recovery copies cannot both be right: the attempt refuses (exit 21)
// and names them.
func TestCloudRecoveryCopiesAmbiguous(t *testing.T) {
	t.Parallel()
	c := cloudCases[0]
	cat := overwriteCatalog(c.kind)
	cat.tables = []string{"orders__etl_keep_5_1", "orders__etl_keep_6_1"}
	e, _ := newCloudEnv(t, c, cat)
	_, err := e.run(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
	if !exit.Is(err, exit.SQLGuard) || !strings.Contains(err.Error(), "orders__etl_keep_5_1, orders__etl_keep_6_1") {
		t.Fatalf("got %v", err)
	}
}

// A statement that fails on the server is a handler error (exit 15, so
// retried); a refusal found by looking (the target missing) is exit 21.
func TestCloudErrorsExitCodes(t *testing.T) {
	t.Parallel()
	for _, c := range cloudCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			user := cols(c.kind, "id:id", "name:text", "amount:num")
			cat := &catalog{target: append(append([]protocoltest.Column{}, user...), auditOf(c.kind, "APPEND_TABLE")...), source: user}
			cat.failing = func(q string) bool { return strings.HasPrefix(q, "DELETE FROM") && strings.Contains(q, "WHERE") }
			e, _ := newCloudEnv(t, c, cat)
			_, err := e.run(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
			if !exit.Is(err, exit.Handler) || !strings.Contains(err.Error(), "remove this task run's earlier batch failed for staging.orders") {
				t.Fatalf("a failed statement: %v", err)
			}
			cat.target = nil
			_, err = e.run(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT id, name, amount FROM raw.orders"))
			if !exit.Is(err, exit.SQLGuard) || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("a missing target: %v", err)
			}
			_, err = e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", "SELECT 1 AS id", "TABLE_FORMAT", "parquet"))
			if !exit.Is(err, exit.SQLGuard) {
				t.Fatalf("a bad table format: %v", err)
			}
		})
	}
}

// Cancelling an attempt (a task timeout) stops the statement on the
// server: Databricks' cancel endpoint, Trino's query kill, Snowflake's
// abort request. The scratch tables are dropped all the same.
func TestCloudCancelReachesServer(t *testing.T) {
	t.Parallel()
	for _, c := range cloudCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cat := overwriteCatalog(c.kind)
			cat.running = func(q string) bool {
				return strings.HasPrefix(q, "SELECT COUNT(*) FROM") && strings.Contains(q, "etl_stage_")
			}
			e, srv := newCloudEnv(t, c, cat)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := sqltask.New(e.db).Run(ctx, e.task(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders",
				"SOURCE_SQL", "SELECT id, name, amount FROM raw.orders")))
			if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
				t.Fatalf("got %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("the cancel took %s", d)
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(srv.Cancels()) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if len(srv.Cancels()) == 0 {
				t.Fatalf("the running statement was never cancelled on the server")
			}
			got := sqls(srv)
			ran := slices.IndexFunc(got, cat.running)
			if slices.IndexFunc(got[ran:], func(s string) bool {
				return strings.HasPrefix(s, "DROP TABLE IF EXISTS") && strings.Contains(s, "etl_stage_")
			}) < 0 {
				t.Errorf("the scratch table was not dropped after the cancel:\n%s", strings.Join(got[ran:], ";\n"))
			}
		})
	}
}
