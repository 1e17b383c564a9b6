package script

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// request is one message of the script: an operation and its fields.
type request struct {
	Op     string          `json:"op"`
	Tx     int             `json:"tx"`
	SQL    string          `json:"sql"`
	Params json.RawMessage `json:"params"`
	Many   bool            `json:"many"`
	Name   string          `json:"name"`
	// load
	Table   string    `json:"table"`
	Mode    string    `json:"mode"`
	Columns *[]string `json:"columns"`
	Error   string    `json:"error"`
	// result and failure
	RowCount  *int64            `json:"row_count"`
	Offset    *offset           `json:"offset"`
	Variables map[string]string `json:"variables"`
	Message   string            `json:"message"`
}

// returned is how the script ended: its result, or its failure message.
type returned struct {
	rowCount  int64
	offset    *offset
	variables map[string]string
	failure   string
}

// session serves one attempt's script: its warehouse transactions and
// loads, on the warehouse the attempt is given.
type session struct {
	h      *scriptHandler
	t      *handler.Task
	log    *slog.Logger
	taskID int64
	c      *child
	enc    *json.Encoder
	buf    *bufio.Writer

	w       warehouse.Warehouse
	release func()
	txs     map[int]warehouse.Tx
	nextTx  int
	loads   []*load
}

// answerFirst sends the first message, setting up the reply encoder.
func (s *session) answerFirst(a any) error {
	s.buf = bufio.NewWriterSize(s.c.answers, 1<<16)
	s.enc = json.NewEncoder(s.buf)
	return s.answer(a)
}

// serve answers the script's requests until it returns or fails, or its
// pipe closes (the process ended without a result).
func (s *session) serve(ctx context.Context) (*returned, error) {
	defer s.rollbackAll()
	for {
		line, err := s.c.reqs.ReadBytes('\n')
		if err == io.EOF || (err != nil && len(line) == 0) {
			return nil, nil
		}
		var req request
		if err := decodeJSON(line, &req); err != nil {
			return nil, exit.Wrap(exit.Handler, err, "the script sent an unreadable message")
		}
		switch req.Op {
		case "result", "failure":
			// The attempt is the supervisor's again before the child
			// exits: a reconciler never finds its recorded process gone
			// while the outcome is still to be written.
			s.giveBack()
		}
		switch req.Op {
		case "result":
			if req.RowCount == nil || *req.RowCount < 0 {
				return nil, exit.Errorf(exit.Handler, "the script's ScriptResult has no row_count >= 0")
			}
			s.answer(map[string]any{"ok": true})
			return &returned{rowCount: *req.RowCount, offset: req.Offset, variables: req.Variables}, nil
		case "failure":
			s.answer(map[string]any{"ok": true})
			return &returned{failure: req.Message}, nil
		}
		a, err := s.handle(ctx, &req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			s.log.Warn("a request of the script failed", "op", req.Op, "error", err)
			a = map[string]any{"error": err.Error()}
		}
		if err := s.answer(a); err != nil {
			return nil, nil // the process is gone
		}
	}
}

// giveBack records the supervisor again as the attempt's process.
func (s *session) giveBack() {
	if s.t.Spawned == nil {
		return
	}
	if err := s.t.Spawned(os.Getpid()); err != nil {
		s.log.Warn("could not record the supervisor as the attempt's process again", "error", err)
	}
}

// answer sends one reply.
func (s *session) answer(a any) error {
	if err := s.enc.Encode(a); err != nil {
		return err
	}
	return s.buf.Flush()
}

// handle performs one request and returns its reply.
func (s *session) handle(ctx context.Context, req *request) (any, error) {
	switch req.Op {
	case "table":
		if err := s.use(ctx); err != nil {
			return nil, err
		}
		t, err := s.table(req.Name)
		if err != nil {
			return nil, err
		}
		defer s.idle()
		return map[string]any{"table": warehouse.Qualify(s.w, t)}, nil
	case "begin":
		if err := s.use(ctx); err != nil {
			return nil, err
		}
		tx, err := s.w.Begin(ctx)
		if err != nil {
			s.idle()
			return nil, exit.Wrap(exit.Handler, err, "could not begin a warehouse transaction")
		}
		s.nextTx++
		s.txs[s.nextTx] = tx
		return map[string]any{"tx": s.nextTx}, nil
	case "execute":
		tx, ok := s.txs[req.Tx]
		if !ok {
			return nil, fmt.Errorf("no open transaction %d", req.Tx)
		}
		return s.execute(ctx, tx, req)
	case "commit", "rollback":
		tx, ok := s.txs[req.Tx]
		if !ok {
			return nil, fmt.Errorf("no open transaction %d", req.Tx)
		}
		delete(s.txs, req.Tx)
		defer s.idle()
		if req.Op == "rollback" {
			tx.Rollback()
			return map[string]any{"ok": true}, nil
		}
		if err := tx.Commit(); err != nil {
			return nil, exit.Wrap(exit.Handler, err, "could not commit the warehouse transaction")
		}
		return map[string]any{"ok": true}, nil
	case "load":
		return s.load(ctx, req)
	}
	return nil, fmt.Errorf("unknown request %q", req.Op)
}

// use acquires the attempt's warehouse when it does not hold it.
func (s *session) use(ctx context.Context) error {
	if s.w != nil {
		return nil
	}
	if s.t.Warehouse == nil {
		return exit.Errorf(exit.Configuration, "the script of %s uses the warehouse, but the project has no Warehouse section", s.t.TaskCode)
	}
	w, release, err := s.t.Warehouse(ctx)
	if err != nil {
		return err
	}
	s.w, s.release = w, release
	return nil
}

// idle gives the warehouse back when no transaction of the script is open,
// so that other writers of a single-writer warehouse may have it meanwhile.
func (s *session) idle() {
	if s.w != nil && len(s.txs) == 0 {
		s.release()
		s.w, s.release = nil, nil
	}
}

// rollbackAll abandons the transactions the script left open.
func (s *session) rollbackAll() {
	for id, tx := range s.txs {
		tx.Rollback()
		delete(s.txs, id)
	}
	s.idle()
}

// table resolves a table name of the script: schema.table, catalog.schema.table,
// or a bare name in the warehouse profile's schema.
func (s *session) table(name string) (warehouse.Table, error) {
	name = strings.TrimSpace(name)
	if !strings.Contains(name, ".") && s.h.opts.Schema != "" {
		name = s.h.opts.Schema + "." + name
	}
	t, _, err := sqltask.ParseTarget(s.w, name)
	return t, err
}

// execute runs one statement (or, with many, one per parameter set) in tx:
// :name parameters are bound, never written into the text; rows come back
// for statements that return them, a row count for the others.
func (s *session) execute(ctx context.Context, tx warehouse.Tx, req *request) (any, error) {
	var sets []map[string]any
	if req.Many {
		if err := decodeJSON(req.Params, &sets); err != nil {
			return nil, fmt.Errorf("the parameters of executemany must be a list of dicts: %v", err)
		}
	} else {
		var one map[string]any
		if len(req.Params) > 0 && string(req.Params) != "null" {
			if err := decodeJSON(req.Params, &one); err != nil {
				return nil, fmt.Errorf("the parameters must be a dict of :name values: %v", err)
			}
		}
		sets = []map[string]any{one}
	}
	s.log.Debug("script statement", "sql", req.SQL)
	var total int64
	for _, params := range sets {
		query, args, err := bind(s.w, req.SQL, params)
		if err != nil {
			return nil, err
		}
		if returnsRows(query) {
			return s.query(ctx, tx, query, args)
		}
		res, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			n = -1
		}
		total += n
	}
	return map[string]any{"rowcount": total}, nil
}

// query runs a statement that returns rows and returns them all.
func (s *session) query(ctx context.Context, tx warehouse.Tx, query string, args []any) (any, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	out := [][]any{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		for i, v := range vals {
			row[i] = toWire(v, types[i])
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"columns": cols, "rows": out, "rowcount": len(out)}, nil
}

// returnsRows reports whether a statement returns rows: a query, or a
// write with RETURNING.
func returnsRows(query string) bool {
	first := ""
	for _, tk := range sqlscan.Scan(query, sqlscan.Postgres) {
		if tk.Kind != sqlscan.Word {
			continue
		}
		w := strings.ToUpper(tk.Text)
		if first == "" {
			first = w
			switch w {
			case "SELECT", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "EXPLAIN", "PRAGMA", "FROM", "SUMMARIZE":
				if w != "WITH" {
					return true
				}
			}
		}
		if w == "RETURNING" {
			return true
		}
		if first == "WITH" && (w == "INSERT" || w == "UPDATE" || w == "DELETE" || w == "MERGE") {
			return false
		}
	}
	return first == "WITH"
}

// bind replaces each :name parameter of a statement with a placeholder of
// the warehouse and returns the values in placeholder order. A :: cast, a
// colon inside a literal, quoted name or comment, and a colon not followed
// by a name are no parameters.
func bind(d warehouse.Dialect, query string, params map[string]any) (string, []any, error) {
	toks := sqlscan.Scan(query, sqlscan.Postgres)
	var out strings.Builder
	var args []any
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		if tk.Kind != sqlscan.Symbol || tk.Text != ":" || i+1 == len(toks) || toks[i+1].Kind != sqlscan.Word ||
			(i > 0 && toks[i-1].Text == ":") || (i+1 < len(toks) && toks[i+1].Text == ":") {
			out.WriteString(tk.Text)
			continue
		}
		name := toks[i+1].Text
		raw, ok := params[name]
		if !ok {
			return "", nil, fmt.Errorf("the statement uses :%s, but its parameters give no %q", name, name)
		}
		v, err := fromWire(raw, false)
		if err != nil {
			return "", nil, err
		}
		args = append(args, v)
		out.WriteString(d.Placeholder(len(args), typeOf(v)))
		i++
	}
	return out.String(), args, nil
}

// typeOf is the portable type of a bound value.
func typeOf(v any) warehouse.Type {
	switch v.(type) {
	case bool:
		return warehouse.Boolean
	case int64:
		return warehouse.BigInt
	case float64:
		return warehouse.Decimal
	case time.Time:
		return warehouse.Timestamp
	}
	return warehouse.String
}
