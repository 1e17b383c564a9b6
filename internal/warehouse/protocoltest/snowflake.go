package protocoltest

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Snowflake is Snowflake's connector REST protocol as the Go driver speaks
// it: POST /session/v1/login-request logs in and hands out a session
// token; POST /queries/v1/query-request runs one statement
// ("sqlText", positional "bindings" "1", "2", …) with the header
// Authorization: Snowflake Token="<token>"; POST /queries/v1/abort-request
// cancels a running one. Rows come as JSON text cells.
type Snowflake struct {
	*server
}

// snowflakeToken is the session token the server hands out.
const snowflakeToken = "session-token"

// NewSnowflake serves the protocol until the test ends.
func NewSnowflake(t testing.TB, answer Answerer) *Snowflake {
	s := &Snowflake{}
	s.server = newServer(t, answer, func(*server) http.HandlerFunc { return s.serve })
	return s
}

// Body reads a request body, which the Snowflake driver may gzip.
func Body(r *http.Request) []byte {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		if z, err := gzip.NewReader(r.Body); err == nil {
			rd = z
		}
	}
	b, _ := io.ReadAll(rd)
	return b
}

func (s *Snowflake) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(v map[string]any) { json.NewEncoder(w).Encode(v) }
	ok := func(data any) { reply(map[string]any{"data": data, "success": true}) }
	switch r.URL.Path {
	case "/session/v1/login-request":
		ok(map[string]any{
			"token": snowflakeToken, "masterToken": "master-token", "sessionId": 7,
			"validityInSeconds": 3600, "masterValidityInSeconds": 14400,
			"sessionInfo": map[string]string{"databaseName": "ANALYTICS", "schemaName": "STAGING", "warehouseName": "LOAD_WH", "roleName": "LOADER"},
		})
	case "/queries/v1/query-request", "/queries/v1/abort-request":
		if r.Header.Get("Authorization") != `Snowflake Token="`+snowflakeToken+`"` {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var q struct {
			SQLText  string `json:"sqlText"`
			Bindings map[string]struct {
				Type  string  `json:"type"`
				Value *string `json:"value"`
			} `json:"bindings"`
			RequestID string `json:"requestId"`
		}
		json.Unmarshal(Body(r), &q)
		if r.URL.Path == "/queries/v1/abort-request" {
			s.cancelled(r.URL.Query().Get("requestId"))
			ok(nil)
			return
		}
		keys := make([]int, 0, len(q.Bindings))
		for k := range q.Bindings {
			n, err := strconv.Atoi(k)
			if err != nil {
				reply(map[string]any{"success": false, "code": "002049", "message": "binding " + k + " is not positional"})
				return
			}
			keys = append(keys, n)
		}
		sort.Ints(keys)
		var args []*string
		for _, k := range keys {
			args = append(args, q.Bindings[strconv.Itoa(k)].Value)
		}
		if strings.Count(q.SQLText, "?") != len(args) {
			reply(map[string]any{"success": false, "code": "002049", "message": "the statement's markers and bindings differ"})
			return
		}
		st := Statement{SQL: q.SQLText, Args: args}
		n := s.record(st)
		res := s.answer(st)
		if res.Running {
			// The statement runs until the driver aborts it (or gives up on
			// the request): then it ends as Snowflake's cancelled statements do.
			for len(s.Cancels()) == 0 && r.Context().Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			res.Error, res.ErrorCode = "SQL execution canceled", "000604"
		}
		if res.Error != "" {
			code := res.ErrorCode
			if _, err := strconv.Atoi(code); err != nil {
				code = "002003" // Snowflake's codes are numbers: object does not exist
			}
			reply(map[string]any{"success": false, "code": code, "message": res.Error,
				"data": map[string]any{"queryId": "q" + strconv.Itoa(n), "sqlState": "42S02"}})
			return
		}
		rowtype := make([]map[string]any, len(res.Columns))
		for i, c := range res.Columns {
			typ := "text"
			if c.Type == "bigint" {
				typ = "fixed"
			}
			rowtype[i] = map[string]any{"name": c.Name, "type": typ, "nullable": true, "precision": 38, "scale": 0, "length": 16777216}
		}
		rows := res.Rows
		if rows == nil {
			rows = [][]*string{}
		}
		kind := 0x1000 // a query
		if len(rowtype) == 0 {
			kind = 0x6000 // DDL, or a statement answering nothing
		}
		ok(map[string]any{"queryId": "q" + strconv.Itoa(n), "queryResultFormat": "json", "rowtype": rowtype,
			"rowset": rows, "total": len(rows), "returned": len(rows), "statementTypeId": kind})
	default:
		ok(map[string]any{})
	}
}
