package protocoltest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Databricks is a Databricks SQL warehouse's Statement Execution API
// (https://docs.databricks.com/api/workspace/statementexecution):
// POST /api/2.0/sql/statements submits a statement, GET
// /api/2.0/sql/statements/{id} polls it, POST …/{id}/cancel cancels it.
// Requests need the bearer Token; the warehouse is WarehouseID; results are
// INLINE JSON_ARRAY; positional markers are named parameters p1, p2, ….
type Databricks struct {
	*server
}

// The Databricks server's credentials and warehouse.
const (
	DatabricksToken     = "dapi-protocol-test"
	DatabricksWarehouse = "wh0001"
)

// NewDatabricks serves the API until the test ends.
func NewDatabricks(t testing.TB, answer Answerer) *Databricks {
	d := &Databricks{}
	d.server = newServer(t, answer, func(s *server) http.HandlerFunc { return d.serve })
	return d
}

type dbxParameter struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
	Type  string  `json:"type"`
}

type dbxSubmit struct {
	Statement     string         `json:"statement"`
	WarehouseID   string         `json:"warehouse_id"`
	Catalog       string         `json:"catalog"`
	Schema        string         `json:"schema"`
	Parameters    []dbxParameter `json:"parameters"`
	WaitTimeout   string         `json:"wait_timeout"`
	OnWaitTimeout string         `json:"on_wait_timeout"`
	Disposition   string         `json:"disposition"`
	Format        string         `json:"format"`
}

func (d *Databricks) serve(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	bad := func(msg string) {
		answer(http.StatusBadRequest, map[string]string{"error_code": "INVALID_PARAMETER_VALUE", "message": msg})
	}
	if r.Header.Get("Authorization") != "Bearer "+DatabricksToken {
		answer(http.StatusUnauthorized, map[string]string{"error_code": "UNAUTHENTICATED", "message": "Invalid access token."})
		return
	}
	const base = "/api/2.0/sql/statements"
	switch id := strings.TrimPrefix(r.URL.Path, base+"/"); {
	case r.Method == http.MethodPost && r.URL.Path == base:
		var req dbxSubmit
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
			bad("malformed request")
			return
		}
		switch {
		case req.WarehouseID != DatabricksWarehouse:
			bad("no such warehouse " + req.WarehouseID)
			return
		case req.Disposition != "INLINE" || req.Format != "JSON_ARRAY":
			bad("INLINE results come as JSON_ARRAY")
			return
		case req.WaitTimeout != "0s" && !validWait(req.WaitTimeout):
			bad("wait_timeout must be 0s or between 5s and 50s")
			return
		}
		args := make([]*string, len(req.Parameters))
		for i, p := range req.Parameters {
			if p.Name != "p"+strconv.Itoa(i+1) || !strings.Contains(req.Statement, ":"+p.Name) {
				bad("parameter " + p.Name + " is not a marker of the statement")
				return
			}
			args[i] = p.Value
		}
		st := Statement{SQL: req.Statement, Args: args}
		n := d.record(st)
		res := d.answer(st)
		sid := "st-" + strconv.Itoa(n)
		d.mu.Lock()
		d.statuses[sid] = res
		d.mu.Unlock()
		// The statement runs asynchronously (wait_timeout 0s): it is
		// PENDING until polled.
		answer(http.StatusOK, map[string]any{"statement_id": sid, "status": map[string]string{"state": "PENDING"}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, base+"/"):
		d.mu.Lock()
		res, ok := d.statuses[id]
		cancelled := false
		for _, c := range d.cancels {
			cancelled = cancelled || c == id
		}
		d.mu.Unlock()
		switch {
		case !ok:
			answer(http.StatusNotFound, map[string]string{"error_code": "NOT_FOUND", "message": "no statement " + id})
		case cancelled:
			answer(http.StatusOK, map[string]any{"statement_id": id, "status": map[string]string{"state": "CANCELED"}})
		case res.Running:
			answer(http.StatusOK, map[string]any{"statement_id": id, "status": map[string]string{"state": "RUNNING"}})
		case res.Error != "":
			code := res.ErrorCode
			if code == "" {
				code = "BAD_REQUEST"
			}
			answer(http.StatusOK, map[string]any{"statement_id": id, "status": map[string]any{"state": "FAILED",
				"error": map[string]string{"error_code": code, "message": res.Error}}})
		default:
			cols := make([]map[string]any, len(res.Columns))
			for i, c := range res.Columns {
				cols[i] = map[string]any{"name": c.Name, "type_name": c.Type, "position": i}
			}
			rows := res.Rows
			if rows == nil {
				rows = [][]*string{}
			}
			answer(http.StatusOK, map[string]any{"statement_id": id, "status": map[string]string{"state": "SUCCEEDED"},
				"manifest": map[string]any{"format": "JSON_ARRAY", "schema": map[string]any{"column_count": len(cols), "columns": cols}},
				"result":   map[string]any{"chunk_index": 0, "row_offset": 0, "row_count": len(rows), "data_array": rows}})
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		d.cancelled(strings.TrimSuffix(id, "/cancel"))
		answer(http.StatusOK, map[string]any{})
	default:
		answer(http.StatusNotFound, map[string]string{"error_code": "NOT_FOUND", "message": r.Method + " " + r.URL.Path})
	}
}

// validWait reports whether a wait_timeout is between 5 and 50 seconds.
func validWait(s string) bool {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "s"))
	return err == nil && strings.HasSuffix(s, "s") && n >= 5 && n <= 50
}
