package protocoltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Trino is a Trino coordinator's client protocol
// (https://trino.io/docs/current/develop/client-protocol.html): POST
// /v1/statement starts a query, queued, with a nextUri; GET of the nextUri
// answers the query's columns and rows or its error; DELETE /v1/query/{id}
// kills it. Requests need the X-Trino-User header. A statement with bound
// values comes as the prepared statement header _trino_go=<query> and the
// body EXECUTE _trino_go USING <literals>.
type Trino struct {
	*server
}

// NewTrino serves the protocol until the test ends.
func NewTrino(t testing.TB, answer Answerer) *Trino {
	c := &Trino{}
	c.server = newServer(t, answer, func(s *server) http.HandlerFunc { return c.serve })
	return c
}

func (c *Trino) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		io.WriteString(w, msg)
	}
	if r.Method == http.MethodPost && r.Header.Get("X-Trino-User") == "" {
		fail(http.StatusBadRequest, "X-Trino-User must be set")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/statement":
		body, _ := io.ReadAll(r.Body)
		st, err := trinoStatement(string(body), r.Header.Get("X-Trino-Prepared-Statement"))
		if err != "" {
			fail(http.StatusBadRequest, err)
			return
		}
		n := c.record(st)
		id := "q" + strconv.Itoa(n)
		c.mu.Lock()
		c.statuses[id] = c.answer(st)
		c.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"id": id, "nextUri": c.srv.URL + "/v1/statement/executing/" + id + "/1",
			"stats": map[string]any{"state": "QUEUED"}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/statement/executing/"):
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/statement/executing/"), "/")
		id := parts[0]
		c.mu.Lock()
		res, ok := c.statuses[id]
		c.mu.Unlock()
		if !ok {
			fail(http.StatusNotFound, "no query "+id)
			return
		}
		out := map[string]any{"id": id, "stats": map[string]any{"state": "FINISHED"}}
		switch {
		case res.Running:
			out["stats"] = map[string]any{"state": "RUNNING"}
			out["nextUri"] = c.srv.URL + "/v1/statement/executing/" + id + "/2"
		case res.Error != "":
			name := res.ErrorCode
			if name == "" {
				name = "GENERIC_USER_ERROR"
			}
			out["stats"] = map[string]any{"state": "FAILED"}
			out["error"] = map[string]any{"message": res.Error, "errorName": name, "errorType": "USER_ERROR", "errorCode": 1}
		case res.Columns != nil:
			cols := make([]map[string]any, len(res.Columns))
			for i, col := range res.Columns {
				cols[i] = map[string]any{"name": col.Name, "type": col.Type,
					"typeSignature": map[string]any{"rawType": col.Type, "arguments": []any{}}}
			}
			out["columns"] = cols
			data := make([][]any, len(res.Rows))
			for i, row := range res.Rows {
				data[i] = make([]any, len(row))
				for j, v := range row {
					if v != nil {
						data[i][j] = trinoValue(res.Columns[j].Type, *v)
					}
				}
			}
			out["data"] = data
		default:
			out["updateType"] = "UPDATE"
		}
		json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/query/"):
		c.cancelled(strings.TrimPrefix(r.URL.Path, "/v1/query/"))
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusNotFound, r.Method+" "+r.URL.Path)
	}
}

// trinoValue is a JSON cell of a column type: numbers for bigint, text else.
func trinoValue(typ, s string) any {
	if typ == "bigint" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

// trinoStatement reads a submitted query: plain, or EXECUTE of the prepared
// statement the header carries, whose literals become the arguments.
func trinoStatement(body, prepared string) (Statement, string) {
	if !strings.HasPrefix(body, "EXECUTE ") {
		return Statement{SQL: body}, ""
	}
	name, query, ok := strings.Cut(prepared, "=")
	if !ok || !strings.HasPrefix(body, "EXECUTE "+name+" USING ") {
		return Statement{}, "EXECUTE of a statement not prepared in X-Trino-Prepared-Statement"
	}
	sql, err := url.QueryUnescape(query)
	if err != nil {
		return Statement{}, "malformed prepared statement"
	}
	var args []*string
	for _, lit := range splitLiterals(strings.TrimPrefix(body, "EXECUTE "+name+" USING ")) {
		if lit == "NULL" {
			args = append(args, nil)
			continue
		}
		v := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(lit, "'"), "'"), "''", "'")
		args = append(args, &v)
	}
	if strings.Count(sql, "?") != len(args) {
		return Statement{}, "the prepared statement has " + strconv.Itoa(strings.Count(sql, "?")) + " markers and " + strconv.Itoa(len(args)) + " values"
	}
	return Statement{SQL: sql, Args: args}, ""
}

// splitLiterals splits a USING list at the commas outside quotes.
func splitLiterals(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	return append(out, strings.TrimSpace(b.String()))
}
