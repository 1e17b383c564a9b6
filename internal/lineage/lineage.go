// Package lineage works out which columns of which tables every active SQL
// task's target columns are computed from, and which tables feed which.
//
// Each task's SELECT, with its tokens substituted as a run substitutes
// them, is read by the warehouse's own parser: DuckDB's (json_serialize_sql
// on an in-memory database) for DuckDB warehouses and PostgreSQL's
// (libpg_query through pg_query_go) for PostgreSQL ones. The parse tree is
// walked through WITH lists, subqueries, joins, set operations and aliases;
// each target column maps to the base columns it reads, as a copy or
// through an expression, or to no source (a constant, COUNT(*)). SELECT *
// is expanded from the warehouse's catalog when it can be read. Tasks join
// across pipelines by table name, lower-cased, without the warehouse's
// default database. Scripts and other tasks give table-level links through
// their SOURCE_OBJECT and TARGET_OBJECT parameters.
//
// Results are kept in AUD_COLUMN_LINEAGE, keyed by a hash of the SELECT,
// the target, the parser and its version: a task is parsed again only when
// one of them changes, or on request (Options.Refresh).
package lineage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// walkVersion changes whenever the walk of parse trees changes what it
// finds, so cached results of an older walk are recomputed.
const walkVersion = "lineage walk 1"

// Options say how Build reads the project.
type Options struct {
	// Kind is the warehouse's kind; it picks the parser.
	Kind warehouse.Kind
	// Catalog is the warehouse's default database, left out of table
	// names; an open warehouse's own catalog is used instead when given.
	Catalog string
	// ProjectDir is the folder sql_files/ is in.
	ProjectDir string
	// Refresh parses every task again instead of reading the cache.
	Refresh bool
	// Log receives a record per task parsed; nil discards them.
	Log *slog.Logger
}

// Task is the lineage of one active task (its JSON is the lineage
// document's).
type Task = report.LineageTask

// Column is one target column and what it is computed from.
type Column = report.LineageColumn

// Source is one base column a target column is computed from.
type Source = report.LineageSource

// Build works out the lineage of every active task. wh, when not nil,
// names the default database and, when it answers, expands SELECT * from
// its catalog; without it such a task is not traced. A warehouse whose SQL has no parser here (not DuckDB or
// PostgreSQL) is a configuration error (exit 3).
func Build(ctx context.Context, db *engine.DB, wh warehouse.Warehouse, opts Options) (*Graph, error) {
	newParser, ok := parsers[opts.Kind]
	if !ok {
		return nil, exit.Errorf(exit.Configuration,
			"column lineage reads SQL with the warehouse's own parser, which etl-craft has for duckdb and postgres warehouses, not %s", orNone(string(opts.Kind)))
	}
	p, err := newParser()
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "column lineage")
	}
	defer p.close()
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	catalog := opts.Catalog
	if wh != nil {
		catalog = wh.Catalog()
		if err := wh.Ping(ctx); err != nil {
			opts.Log.Warn("the warehouse does not answer: SELECT * over its tables is not traced", "error", err)
			wh = nil
		}
	}
	b := &builder{ctx: ctx, p: p, wh: wh, catalog: strings.ToLower(catalog), opts: opts, columns: map[string][]string{}}
	tasks, err := loadTasks(ctx, db, opts.ProjectDir)
	if err != nil {
		return nil, err
	}
	cache, err := readCache(ctx, db)
	if err != nil {
		return nil, err
	}
	g := &Graph{catalog: b.catalog, schema: p.schema()}
	var fresh []*Task
	for _, lt := range tasks {
		if lt.sql {
			lt.hash = b.key(lt.sel)
		}
		t := b.task(lt, cache, g)
		g.Tasks = append(g.Tasks, t)
		if lt.sql && !t.Cached {
			fresh = append(fresh, t)
			b.hashes = append(b.hashes, lt.hash)
		}
	}
	if err := writeCache(ctx, db, fresh, b.hashes); err != nil {
		return nil, err
	}
	g.index()
	return g, nil
}

// parsers open the parser of each warehouse kind lineage reads.
var parsers = map[warehouse.Kind]func() (parser, error){
	warehouse.DuckDB:   func() (parser, error) { return newDuckParser() },
	warehouse.Postgres: func() (parser, error) { return newPGParser() },
}

func orNone(s string) string {
	if s == "" {
		return "a missing Warehouse section"
	}
	return s
}

// loaded is an active task as the Engine DB holds it.
type loaded struct {
	id       int64
	pipeline string
	code     string
	handler  string
	params   map[string]string
	sql      bool // an SQL task with a SELECT
	sel      sqltask.Select
	err      error // the SELECT could not be read
	hash     string
}

// loadTasks reads every active task of every active pipeline.
func loadTasks(ctx context.Context, db *engine.DB, projectDir string) ([]loaded, error) {
	pipes, err := pipeline.List(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []loaded
	for _, p := range pipes {
		g, err := pipeline.Load(ctx, db, p.Code)
		if err != nil {
			return nil, err
		}
		for _, t := range g.Tasks {
			lt := loaded{id: t.ID, pipeline: p.Code, code: t.Code, handler: t.Handler, params: t.Params}
			if t.Handler == pipeline.HandlerSQL {
				lt.sel, lt.err = sqltask.ReadSelect(&handler.Task{
					PipelineID: p.ID, PipelineCode: p.Code, TaskCode: t.Code, RefreshType: p.RefreshType,
					Params: t.Params, ProjectDir: projectDir, Log: slog.New(slog.DiscardHandler),
				})
				lt.sql = lt.err == nil && lt.sel.SQL != ""
			}
			out = append(out, lt)
		}
	}
	return out, nil
}

// builder is one Build under way.
type builder struct {
	ctx     context.Context
	p       parser
	wh      warehouse.Warehouse
	catalog string
	opts    Options
	columns map[string][]string // catalog look-ups by table
	hashes  []string            // the keys of the tasks to write, in order
}

// task works out one task's lineage, from the cache when its key matches.
func (b *builder) task(lt loaded, cache map[int64][]cachedRow, g *Graph) *Task {
	t := &Task{Task: lt.pipeline + "." + lt.code, TaskID: lt.id, PipelineCode: lt.pipeline, TaskCode: lt.code,
		Handler: lt.handler, Columns: []Column{}, Reads: []string{}}
	if lt.handler == pipeline.HandlerSQL {
		if lt.sel.SQL == "" && lt.err == nil { // DROP_TABLE
			return t
		}
		if lt.sel.Target != "" {
			t.Target = b.name(strings.Split(lt.sel.Target, "."))
		}
		if lt.err != nil {
			t.Error = lt.err.Error()
			return t
		}
		if rows := cache[lt.id]; !b.opts.Refresh && len(rows) > 0 && rows[0].hash == lt.hash {
			fromCache(t, rows)
			g.Cached++
			return t
		}
		g.Parsed++
		b.opts.Log.Debug("parsing the SELECT of a task for lineage", "task", t.Task)
		if err := b.trace(t, lt.sel.SQL); err != nil {
			t.Error = err.Error()
			t.Columns = []Column{}
		}
		return t
	}
	// Other tasks give table-level links through their parameters.
	if v := strings.TrimSpace(lt.params["TARGET_OBJECT"]); v != "" {
		t.Target = b.name(strings.Split(v, "."))
	}
	for _, s := range strings.FieldsFunc(lt.params["SOURCE_OBJECT"], func(r rune) bool { return r == ',' || r == '|' }) {
		if s = strings.TrimSpace(s); s != "" {
			t.Reads = append(t.Reads, b.name(strings.Split(s, ".")))
		}
	}
	slices.Sort(t.Reads)
	t.Reads = slices.Compact(t.Reads)
	return t
}

// key is the cache key of a SELECT: a hash of the parser, the walk, the
// target and the SQL.
func (b *builder) key(sel sqltask.Select) string {
	h := sha256.New()
	for _, part := range []string{b.p.version(), walkVersion, strings.ToLower(sel.Target), sel.SQL} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// trace parses the SELECT and resolves its columns.
func (b *builder) trace(t *Task, text string) error {
	res, err := b.p.parse(text)
	if res == nil {
		return err
	}
	for _, parts := range res.tables {
		if len(parts) == 1 && slices.ContainsFunc(res.ctes, func(c string) bool { return strings.EqualFold(c, parts[0]) }) {
			continue
		}
		t.Reads = append(t.Reads, b.name(parts))
	}
	slices.Sort(t.Reads)
	t.Reads = slices.Compact(t.Reads)
	if err != nil {
		return err
	}
	r := &resolver{names: b.name}
	if b.wh != nil {
		r.catalog = b.tableColumns
	}
	cols, err := r.resolve(res.q, nil, nil)
	if err != nil {
		return err
	}
	for _, c := range cols {
		t.Columns = append(t.Columns, Column{Name: c.name, Sources: nonNil(c.sources), Transformation: c.how})
	}
	return nil
}

func nonNil(s []Source) []Source {
	if s == nil {
		return []Source{}
	}
	return s
}

// name is a table's lineage name: lower-cased, a one-part name in the
// parser's default schema, the warehouse's default database left out.
func (b *builder) name(parts []string) string {
	return tableName(parts, b.catalog, b.p.schema())
}

// tableName is the lineage name of a table's name parts.
func tableName(parts []string, catalog, schema string) string {
	out := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		out = append(out, strings.ToLower(strings.TrimSpace(p)))
	}
	if len(out) == 1 {
		out = append([]string{schema}, out...)
	}
	if len(out) == 3 && out[0] == catalog {
		out = out[1:]
	}
	return strings.Join(out, ".")
}

// tableColumns reads a table's columns from the warehouse's catalog, once
// per Build.
func (b *builder) tableColumns(table string) ([]string, error) {
	if cols, ok := b.columns[table]; ok {
		return cols, nil
	}
	parts := strings.Split(table, ".")
	if len(parts) != 2 {
		return nil, fmt.Errorf("%s is in another database, whose catalog lineage does not read", table)
	}
	info, err := b.wh.Columns(b.ctx, parts[0], parts[1])
	if err != nil {
		return nil, err
	}
	cols := make([]string, len(info))
	for i, c := range info {
		cols[i] = strings.ToLower(c.Name)
	}
	b.columns[table] = cols
	return cols, nil
}
