package warehouse

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Databricks has no Go SQL driver here, so this file is a small database/sql
// driver over its SQL Statement Execution API: each statement is one
// POST /api/2.0/sql/statements to the SQL warehouse named by the http path,
// with the token as a bearer token, results inline as JSON arrays, polled
// while they run. Statements are not transactional.

// DatabricksWarehouseID returns the SQL warehouse id of an http path such as
// /sql/1.0/warehouses/<id> (or the older /sql/1.0/endpoints/<id>).
func DatabricksWarehouseID(httpPath string) (string, error) {
	parts := strings.Split(strings.Trim(httpPath, "/"), "/")
	if n := len(parts); n >= 2 && (parts[n-2] == "warehouses" || parts[n-2] == "endpoints") && parts[n-1] != "" {
		return parts[n-1], nil
	}
	return "", exit.Errorf(exit.Configuration,
		"the Databricks httpPath %q does not name a SQL warehouse: expected /sql/1.0/warehouses/<id>", httpPath)
}

func openDatabricks(d Dialect, opts Options) (Warehouse, error) {
	if err := required(Databricks,
		[2]string{"a host", opts.Host}, [2]string{"a catalog", opts.Catalog}, [2]string{"a schema", opts.Schema}); err != nil {
		return nil, err
	}
	id, err := DatabricksWarehouseID(opts.HTTPPath)
	if err != nil {
		return nil, err
	}
	base := url.URL{Scheme: "https", Host: opts.Host}
	if opts.Port != 0 && opts.Port != 443 {
		base.Host = net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	}
	client := opts.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	c := secretConnector{opts: opts, drv: dbxDriver{}, connect: func(_ context.Context, token string) (driver.Conn, error) {
		return &dbxConn{http: client, base: base.String(), token: token, warehouseID: id, catalog: opts.Catalog, schema: opts.Schema}, nil
	}}
	return &sqlWarehouse{
		Dialect: d,
		db:      sql.OpenDB(c),
		catalog: opts.Catalog,
		desc:    "databricks:" + base.String() + opts.HTTPPath + " (" + opts.Catalog + "." + opts.Schema + ")",
	}, nil
}

// dbxDriver exists because a connector must name a driver; connections are
// only ever made through the connector.
type dbxDriver struct{}

func (dbxDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("databricks: open connections through the warehouse package")
}

// dbxConn is one "connection": a token and the statement defaults. Databricks
// keeps no session between statements.
type dbxConn struct {
	http        *http.Client
	base        string
	token       string
	warehouseID string
	catalog     string
	schema      string
}

var (
	_ driver.ExecerContext  = (*dbxConn)(nil)
	_ driver.QueryerContext = (*dbxConn)(nil)
	_ driver.Pinger         = (*dbxConn)(nil)
)

func (c *dbxConn) Prepare(query string) (driver.Stmt, error) { return dbxStmt{c: c, query: query}, nil }
func (c *dbxConn) Close() error                              { return nil }
func (c *dbxConn) Begin() (driver.Tx, error) {
	return nil, errors.New("databricks: SQL statements run one at a time and cannot be grouped in a transaction")
}

func (c *dbxConn) Ping(ctx context.Context) error {
	_, err := c.run(ctx, "SELECT 1", nil)
	return err
}

func (c *dbxConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	// DML answers with a num_affected_rows column; DDL with nothing.
	if r.Manifest != nil && r.Result != nil && len(r.Result.DataArray) > 0 && len(r.Result.DataArray[0]) > 0 {
		for i, col := range r.Manifest.Schema.Columns {
			if col.Name == "num_affected_rows" && i < len(r.Result.DataArray[0]) && r.Result.DataArray[0][i] != nil {
				n, err := strconv.ParseInt(*r.Result.DataArray[0][i], 10, 64)
				return driver.RowsAffected(n), err
			}
		}
	}
	return driver.RowsAffected(0), nil
}

func (c *dbxConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	rows := &dbxRows{c: c, ctx: ctx}
	if r.Manifest != nil {
		rows.cols = r.Manifest.Schema.Columns
	}
	if r.Result != nil {
		rows.chunk = *r.Result
	}
	return rows, nil
}

// dbxStmt runs its query through the connection each time.
type dbxStmt struct {
	c     *dbxConn
	query string
}

func (s dbxStmt) Close() error  { return nil }
func (s dbxStmt) NumInput() int { return -1 }
func (s dbxStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.ExecContext(context.Background(), s.query, named(args))
}
func (s dbxStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.QueryContext(context.Background(), s.query, named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// The Statement Execution API's request and answer, as far as etl-craft
// uses them.
type dbxRequest struct {
	Statement     string     `json:"statement"`
	WarehouseID   string     `json:"warehouse_id"`
	Catalog       string     `json:"catalog,omitempty"`
	Schema        string     `json:"schema,omitempty"`
	Parameters    []dbxParam `json:"parameters,omitempty"`
	WaitTimeout   string     `json:"wait_timeout"`
	OnWaitTimeout string     `json:"on_wait_timeout"`
	Disposition   string     `json:"disposition"`
	Format        string     `json:"format"`
}

type dbxParam struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"` // absent means NULL
	Type  string  `json:"type,omitempty"`
}

type dbxColumn struct {
	Name     string `json:"name"`
	TypeName string `json:"type_name"`
}

type dbxChunk struct {
	DataArray             [][]*string `json:"data_array"`
	NextChunkInternalLink string      `json:"next_chunk_internal_link"`
}

type dbxResponse struct {
	StatementID string `json:"statement_id"`
	Status      struct {
		State string    `json:"state"`
		Error *dbxError `json:"error"`
	} `json:"status"`
	Manifest *struct {
		Schema struct {
			Columns []dbxColumn `json:"columns"`
		} `json:"schema"`
	} `json:"manifest"`
	Result *dbxChunk `json:"result"`
}

type dbxError struct {
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

func (e *dbxError) Error() string { return "databricks: " + e.ErrorCode + ": " + e.Message }

// dbxParams names positional arguments p1, p2, … to match the dialect's :pN
// markers, and types each value.
func dbxParams(args []driver.NamedValue) []dbxParam {
	out := make([]dbxParam, len(args))
	for i, a := range args {
		p := dbxParam{Name: a.Name}
		if p.Name == "" {
			p.Name = "p" + strconv.Itoa(a.Ordinal)
		}
		var s string
		switch v := a.Value.(type) {
		case nil:
			out[i] = p
			continue
		case int64:
			s, p.Type = strconv.FormatInt(v, 10), "BIGINT"
		case float64:
			s, p.Type = strconv.FormatFloat(v, 'g', -1, 64), "DOUBLE"
		case bool:
			s, p.Type = strconv.FormatBool(v), "BOOLEAN"
		case time.Time:
			s, p.Type = v.UTC().Format("2006-01-02T15:04:05.999999Z"), "TIMESTAMP"
		case []byte:
			s, p.Type = string(v), "STRING"
		case string:
			s, p.Type = v, "STRING"
		default:
			s, p.Type = fmt.Sprint(v), "STRING"
		}
		p.Value = &s
		out[i] = p
	}
	return out
}

// run executes one statement and waits for its end, polling while it runs;
// a cancelled context cancels the statement. The statement is submitted
// asynchronously (wait_timeout 0s), so its id is known at once and a cancel
// or a timeout always reaches it through the cancel endpoint.
func (c *dbxConn) run(ctx context.Context, query string, args []driver.NamedValue) (*dbxResponse, error) {
	body, err := json.Marshal(dbxRequest{
		Statement: query, WarehouseID: c.warehouseID, Catalog: c.catalog, Schema: c.schema,
		Parameters: dbxParams(args), WaitTimeout: "0s", OnWaitTimeout: "CONTINUE",
		Disposition: "INLINE", Format: "JSON_ARRAY",
	})
	if err != nil {
		return nil, err
	}
	var r dbxResponse
	if err := c.call(ctx, http.MethodPost, "/api/2.0/sql/statements", body, &r); err != nil {
		return nil, err
	}
	wait := 100 * time.Millisecond
	for r.Status.State == "PENDING" || r.Status.State == "RUNNING" {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.call(context.Background(), http.MethodPost, "/api/2.0/sql/statements/"+url.PathEscape(r.StatementID)+"/cancel", nil, nil)
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
		if err := c.call(ctx, http.MethodGet, "/api/2.0/sql/statements/"+url.PathEscape(r.StatementID), nil, &r); err != nil {
			return nil, err
		}
	}
	switch r.Status.State {
	case "SUCCEEDED":
		return &r, nil
	case "FAILED":
		if r.Status.Error != nil {
			return nil, r.Status.Error
		}
	}
	return nil, fmt.Errorf("databricks: statement %s ended %s", r.StatementID, r.Status.State)
}

// call sends one API request with the bearer token and decodes the answer
// into out (when not nil); an HTTP error carries the API's message.
func (c *dbxConn) call(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e dbxError
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			return &e
		}
		return fmt.Errorf("databricks: %s %s answered %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// dbxRows reads a result chunk by chunk.
type dbxRows struct {
	c     *dbxConn
	ctx   context.Context
	cols  []dbxColumn
	chunk dbxChunk
	i     int
}

func (r *dbxRows) Columns() []string {
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.Name
	}
	return names
}

func (r *dbxRows) Close() error { return nil }

func (r *dbxRows) Next(dest []driver.Value) error {
	for r.i >= len(r.chunk.DataArray) {
		link := r.chunk.NextChunkInternalLink
		if link == "" {
			return io.EOF
		}
		r.chunk, r.i = dbxChunk{}, 0
		if err := r.c.call(r.ctx, http.MethodGet, link, nil, &r.chunk); err != nil {
			return err
		}
	}
	row := r.chunk.DataArray[r.i]
	r.i++
	for i := range dest {
		dest[i] = nil
		if i < len(row) && row[i] != nil {
			dest[i] = dbxValue(r.cols[i].TypeName, *row[i])
		}
	}
	return nil
}

// dbxValue turns a JSON_ARRAY cell, always text, into the Go value of its
// column type; anything else stays text.
func dbxValue(typeName, s string) driver.Value {
	switch typeName {
	case "BOOLEAN":
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	case "BYTE", "SHORT", "INT", "LONG":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	case "FLOAT", "DOUBLE":
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case "TIMESTAMP", "TIMESTAMP_NTZ":
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC()
			}
		}
	case "DATE":
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t
		}
	}
	return s
}
