package lineage

import (
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/report"
)

// Graph is the lineage of a project: every active task's, and the table and
// column edges between them.
type Graph struct {
	// Tasks are the active tasks, by pipeline and task code.
	Tasks []*Task
	// TableEdges link each table a task reads to the table it writes.
	TableEdges []TableEdge
	// ColumnEdges link each source column to the target column computed
	// from it; a column with no source has one edge with an empty source.
	ColumnEdges []ColumnEdge
	// Parsed counts the tasks whose SELECT this Build parsed; Cached those
	// read from AUD_COLUMN_LINEAGE instead.
	Parsed, Cached int

	catalog, schema string
}

// TableEdge is a table-level link: task reads From and writes To.
type TableEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Task string `json:"task"`
}

// ColumnEdge is a column-level link: a task computes a target column from
// a source column (both "" for no source) by a transformation.
type ColumnEdge = report.LineageColumnEdge

// index derives the edges from the tasks.
func (g *Graph) index() {
	for _, t := range g.Tasks {
		if t.Target == "" {
			continue
		}
		for _, r := range t.Reads {
			g.TableEdges = append(g.TableEdges, TableEdge{From: r, To: t.Target, Task: t.Task})
		}
		for _, c := range t.Columns {
			e := ColumnEdge{TargetTable: t.Target, TargetColumn: c.Name, Transformation: c.Transformation, Task: t.Task}
			if len(c.Sources) == 0 {
				g.ColumnEdges = append(g.ColumnEdges, e)
			}
			for _, s := range c.Sources {
				e.SourceTable, e.SourceColumn = s.Table, s.Column
				g.ColumnEdges = append(g.ColumnEdges, e)
			}
		}
	}
}

// Untraced returns the SQL tasks that could not be traced.
func (g *Graph) Untraced() []*Task {
	var out []*Task
	for _, t := range g.Tasks {
		if t.Error != "" {
			out = append(out, t)
		}
	}
	return out
}

// TableName returns the lineage name of a table as a user writes it
// (schema.table or database.schema.table): lower-cased, without the
// warehouse's default database.
func (g *Graph) TableName(name string) string {
	return tableName(strings.Split(name, "."), g.catalog, g.schema)
}

// Tables returns every table the graph names, sorted.
func (g *Graph) Tables() []string {
	var out []string
	for _, e := range g.TableEdges {
		out = append(out, e.From, e.To)
	}
	for _, t := range g.Tasks {
		if t.Target != "" {
			out = append(out, t.Target)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Columns returns the traced columns of a table: those tasks write and
// those tasks read, sorted.
func (g *Graph) Columns(table string) []string {
	var out []string
	for _, e := range g.ColumnEdges {
		if e.TargetTable == table {
			out = append(out, e.TargetColumn)
		}
		if e.SourceTable == table {
			out = append(out, e.SourceColumn)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TableStep is a table met walking table edges, Level steps away (from 1).
type TableStep = report.LineageTableStep

// ColumnStep is a column edge met walking column edges, Level steps away
// (from 1).
type ColumnStep = report.LineageColumnStep

// UpstreamTables returns the tables that feed table, depth first, each
// followed by its own; depth 0 means no limit. A table is not walked twice
// on one path, so cycles end.
func (g *Graph) UpstreamTables(table string, depth int) []TableStep {
	return walkTables(g.TableEdges, table, depth, func(e TableEdge) (string, string) { return e.To, e.From })
}

// DownstreamTables returns the tables that table feeds, as UpstreamTables
// does.
func (g *Graph) DownstreamTables(table string, depth int) []TableStep {
	return walkTables(g.TableEdges, table, depth, func(e TableEdge) (string, string) { return e.From, e.To })
}

// walkTables follows edges from table, ends(e) giving an edge's near and
// far table.
func walkTables(edges []TableEdge, table string, depth int, ends func(TableEdge) (string, string)) []TableStep {
	var out []TableStep
	path := map[string]bool{table: true}
	var visit func(t string, level int)
	visit = func(t string, level int) {
		for _, e := range edges {
			near, far := ends(e)
			if near != t || path[far] {
				continue
			}
			out = append(out, TableStep{Level: level, Table: far, Task: e.Task})
			if depth == 0 || level < depth {
				path[far] = true
				visit(far, level+1)
				delete(path, far)
			}
		}
	}
	visit(table, 1)
	return out
}

// Upstream returns the column edges that compute table.column, depth first,
// each followed by those of its source; depth 0 means no limit.
func (g *Graph) Upstream(table, column string, depth int) []ColumnStep {
	return g.walkColumns(table, column, depth, func(e ColumnEdge) (Source, Source) {
		return Source{Table: e.TargetTable, Column: e.TargetColumn}, Source{Table: e.SourceTable, Column: e.SourceColumn}
	})
}

// Downstream returns the column edges computed from table.column, as
// Upstream does.
func (g *Graph) Downstream(table, column string, depth int) []ColumnStep {
	return g.walkColumns(table, column, depth, func(e ColumnEdge) (Source, Source) {
		return Source{Table: e.SourceTable, Column: e.SourceColumn}, Source{Table: e.TargetTable, Column: e.TargetColumn}
	})
}

func (g *Graph) walkColumns(table, column string, depth int, ends func(ColumnEdge) (Source, Source)) []ColumnStep {
	var out []ColumnStep
	start := Source{Table: table, Column: strings.ToLower(column)}
	path := map[Source]bool{start: true}
	var visit func(c Source, level int)
	visit = func(c Source, level int) {
		for _, e := range g.ColumnEdges {
			near, far := ends(e)
			if near != c || path[far] {
				continue
			}
			out = append(out, ColumnStep{Level: level, LineageColumnEdge: e})
			if far.Table != "" && (depth == 0 || level < depth) {
				path[far] = true
				visit(far, level+1)
				delete(path, far)
			}
		}
	}
	visit(start, 1)
	return out
}
