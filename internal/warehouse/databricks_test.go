package warehouse

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// statementAPI is a Databricks SQL Statement Execution endpoint on a local
// TLS server: it checks each request the way the service documents it and
// answers with the documented JSON, including a statement still running, a
// result split into chunks, a failed statement and a rejected token.
type statementAPI struct {
	srv  tlsServer
	reqs record[dbxRequest]
}

const dbxToken = "dapi-secret-token"

func newStatementAPI(t *testing.T) *statementAPI {
	a := &statementAPI{}
	a.srv = serveTLS(t, a.serve)
	return a
}

func (a *statementAPI) serve(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+dbxToken {
		answer(http.StatusUnauthorized, map[string]string{"error_code": "UNAUTHENTICATED", "message": "Invalid access token."})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/2.0/sql/statements":
		var req dbxRequest
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
			answer(http.StatusBadRequest, map[string]string{"error_code": "INVALID_PARAMETER_VALUE", "message": "malformed request"})
			return
		}
		if req.WarehouseID != "abc123" || req.Format != "JSON_ARRAY" || req.Disposition != "INLINE" {
			answer(http.StatusBadRequest, map[string]string{"error_code": "INVALID_PARAMETER_VALUE", "message": "bad warehouse or format"})
			return
		}
		answer(http.StatusOK, a.execute(req, a.reqs.add(req)))
	case r.Method == http.MethodGet && r.URL.Path == "/api/2.0/sql/statements/st-cols":
		answer(http.StatusOK, map[string]any{
			"statement_id": "st-cols", "status": map[string]string{"state": "SUCCEEDED"},
			"manifest": map[string]any{"schema": map[string]any{"columns": []map[string]any{
				{"name": "column_name", "type_name": "STRING"}, {"name": "data_type", "type_name": "STRING"}}}},
			"result": map[string]any{"data_array": [][]any{{"PIPELINE_ID", "BIGINT"}},
				"next_chunk_internal_link": "/api/2.0/sql/statements/st-cols/result/chunks/1"},
		})
	case r.Method == http.MethodGet && r.URL.Path == "/api/2.0/sql/statements/st-cols/result/chunks/1":
		answer(http.StatusOK, map[string]any{"chunk_index": 1, "data_array": [][]any{{"CREATE_DATE", "TIMESTAMP"}}})
	default:
		answer(http.StatusNotFound, map[string]string{"error_code": "NOT_FOUND", "message": r.URL.Path})
	}
}

// execute answers a submitted statement by what it is.
func (a *statementAPI) execute(req dbxRequest, n int) map[string]any {
	done := func(cols []map[string]any, rows [][]any) map[string]any {
		return map[string]any{
			"statement_id": "st-" + strconv.Itoa(n), "status": map[string]string{"state": "SUCCEEDED"},
			"manifest": map[string]any{"schema": map[string]any{"columns": cols}},
			"result":   map[string]any{"data_array": rows},
		}
	}
	switch s := req.Statement; {
	case s == "SELECT 1":
		return done([]map[string]any{{"name": "1", "type_name": "INT"}}, [][]any{{"1"}})
	case strings.Contains(s, "information_schema.schemata"):
		n := "0"
		if len(req.Parameters) == 1 && req.Parameters[0].Value != nil && strings.EqualFold(*req.Parameters[0].Value, "etl_craft") {
			n = "1"
		}
		return done([]map[string]any{{"name": "count(1)", "type_name": "LONG"}}, [][]any{{n}})
	case strings.Contains(s, "information_schema.columns"):
		return map[string]any{"statement_id": "st-cols", "status": map[string]string{"state": "PENDING"}}
	case strings.HasPrefix(s, "INSERT INTO"):
		n := strconv.Itoa(len(req.Parameters) / len(loadColumns))
		return done([]map[string]any{{"name": "num_affected_rows", "type_name": "LONG"}, {"name": "num_inserted_rows", "type_name": "LONG"}},
			[][]any{{n, n}})
	}
	return map[string]any{"statement_id": "st-failed", "status": map[string]any{"state": "FAILED",
		"error": map[string]string{"error_code": "BAD_REQUEST", "message": "[TABLE_OR_VIEW_NOT_FOUND] The table cannot be found."}}}
}

// databricksOptions point at the local endpoint; the token is read through
// a counting func.
func (a *statementAPI) options(reads *int) Options {
	return Options{
		Kind: Databricks, TableFormat: Iceberg, Host: a.srv.host, Port: a.srv.port,
		HTTPPath: "/sql/1.0/warehouses/abc123", Catalog: "analytics", Schema: "etl_craft", AuthMode: AuthToken,
		Password:   func() (string, error) { *reads++; return dbxToken, nil },
		HTTPClient: a.srv.Client(),
	}
}

func TestDatabricksStatementExecution(t *testing.T) {
	t.Parallel()
	api := newStatementAPI(t)
	ctx := context.Background()
	reads := 0
	w, err := Open(ctx, api.options(&reads))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Name() != "databricks_iceberg" || strings.Contains(w.String(), dbxToken) {
		t.Fatalf("%s: %s", w.Name(), w.String())
	}
	if err := w.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("the token was never read")
	}
	for _, c := range []struct {
		schema string
		want   bool
	}{{"ETL_CRAFT", true}, {"missing", false}} {
		if ok, err := w.SchemaExists(ctx, c.schema); err != nil || ok != c.want {
			t.Errorf("SchemaExists(%s) = %v, %v", c.schema, ok, err)
		}
	}
	reqs := api.reqs.all()
	last := reqs[len(reqs)-1]
	if last.Catalog != "analytics" || last.Schema != "etl_craft" ||
		last.Statement != "SELECT COUNT(*) FROM `analytics`.information_schema.schemata WHERE LOWER(schema_name) = LOWER(CAST(:p1 AS STRING))" ||
		len(last.Parameters) != 1 || last.Parameters[0].Name != "p1" || last.Parameters[0].Type != "STRING" || *last.Parameters[0].Value != "missing" {
		t.Fatalf("schema look-up sent %+v", last)
	}

	// A statement still running is polled; its result comes in two chunks.
	cols, err := w.Columns(ctx, "etl_craft", "CFG_PIPELINES")
	if err != nil || len(cols) != 2 || cols[0] != (ColumnInfo{"PIPELINE_ID", "BIGINT"}) || cols[1] != (ColumnInfo{"CREATE_DATE", "TIMESTAMP"}) {
		t.Fatalf("Columns = %v, %v", cols, err)
	}

	// The bulk load sends multi-row INSERTs of at most 250 typed parameters.
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tbl := w.Table("etl_craft", "LOADED")
	n, err := tx.BulkLoad(ctx, tbl, loadColumns, sampleRows(100))
	if err != nil || n != 100 {
		t.Fatalf("BulkLoad = %d, %v", n, err)
	}
	var inserts []dbxRequest
	for _, r := range api.reqs.all() {
		if strings.HasPrefix(r.Statement, "INSERT INTO") {
			inserts = append(inserts, r)
		}
	}
	per := RowsPerInsert(len(loadColumns))
	if len(inserts) != 3 || len(inserts[0].Parameters) != per*len(loadColumns) || len(inserts[2].Parameters) != (100-2*per)*len(loadColumns) {
		t.Fatalf("%d INSERTs", len(inserts))
	}
	if inserts[0].Statement != Insert(w, tbl, loadColumns, per) {
		t.Fatalf("INSERT text %s", inserts[0].Statement)
	}
	// Row 1 (parameters p7…p12) has NULL FLAG and AMOUNT; row 5 a float amount.
	p := inserts[0].Parameters
	check := func(i int, typ, value string) {
		t.Helper()
		got := p[i]
		if got.Name != "p"+strconv.Itoa(i+1) || got.Type != typ || (got.Value == nil) != (value == "NULL") || (got.Value != nil && *got.Value != value) {
			t.Errorf("parameter %d = %+v, want %s %s", i+1, got, typ, value)
		}
	}
	check(6, "BIGINT", "1")
	check(7, "", "NULL")
	check(8, "", "NULL")
	check(9, "TIMESTAMP", "2020-01-02T00:00:00Z")
	check(10, "TIMESTAMP", sampleRow(1)[4].(time.Time).UTC().Format("2006-01-02T15:04:05.999999Z"))
	check(32, "STRING", "1.5000000000")
	check(1, "BOOLEAN", "true")

	// A failed statement's message reaches the caller.
	if _, err := tx.Exec(ctx, "SELECT * FROM nowhere"); err == nil || !strings.Contains(err.Error(), "TABLE_OR_VIEW_NOT_FOUND") {
		t.Fatalf("failed statement: %v", err)
	}
}

func TestDatabricksRejectedToken(t *testing.T) {
	t.Parallel()
	api := newStatementAPI(t)
	reads := 0
	opts := api.options(&reads)
	opts.Password = func() (string, error) { return "dapi-wrong", nil }
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	err = w.Ping(context.Background())
	if !exit.Is(err, exit.ConnectionTest) || !strings.Contains(err.Error(), "Invalid access token") || strings.Contains(err.Error(), "dapi-wrong") {
		t.Fatalf("ping with a rejected token: %v", err)
	}
}

// An OAuth access token, minted by Password, is sent as the bearer token.
func TestDatabricksOAuth(t *testing.T) {
	t.Parallel()
	api := newStatementAPI(t)
	reads := 0
	opts := api.options(&reads)
	opts.AuthMode = AuthOAuth
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Ping(context.Background()); err != nil || reads == 0 {
		t.Fatalf("ping with an OAuth token: %v (%d reads)", err, reads)
	}
}

func TestDatabricksWarehouseID(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/sql/1.0/warehouses/abc123": "abc123", "sql/1.0/endpoints/e1/": "e1",
	} {
		if got, err := DatabricksWarehouseID(path); err != nil || got != want {
			t.Errorf("DatabricksWarehouseID(%s) = %s, %v", path, got, err)
		}
	}
	if _, err := DatabricksWarehouseID("/sql/protocolv1/o/1/cluster"); !exit.Is(err, exit.Configuration) {
		t.Errorf("a cluster path: %v", err)
	}
}
