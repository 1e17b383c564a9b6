package docsite

import (
	"context"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Table is one table the lineage names, with the tasks that write and read
// it and its neighbours.
type Table struct {
	Name    string
	Writers []string // PIPE.task
	Readers []string // PIPE.task
	// Upstream and Downstream are the tables it is fed by and feeds,
	// directly or not, sorted.
	Upstream, Downstream []string
	// In are the column edges into it, Out the column edges out of it;
	// both are empty at LevelTable.
	In, Out []Edge
	// Columns are its columns in the warehouse, with --with-warehouse.
	Columns []warehouse.ColumnInfo
	// Rules are the business rules whose TARGET_TABLE it is.
	Rules []*Rule
}

// tables returns every table the lineage names, sorted by name, and which
// tables each table directly feeds.
func tables(l *Lineage) ([]*Table, map[string][]string) {
	by := map[string]*Table{}
	get := func(name string) *Table {
		if by[name] == nil {
			by[name] = &Table{Name: name}
		}
		return by[name]
	}
	feeds := map[string][]string{} // source table -> target tables
	fedBy := map[string][]string{}
	for _, t := range l.Tasks {
		if t.Target == "" {
			continue
		}
		w := get(t.Target)
		w.Writers = appendNew(w.Writers, t.Task)
		for _, s := range t.Sources {
			r := get(s)
			r.Readers = appendNew(r.Readers, t.Task)
		}
	}
	for _, e := range l.Edges {
		if e.Source.Table == "" {
			get(e.Target.Table).In = append(get(e.Target.Table).In, e)
			continue
		}
		feeds[e.Source.Table] = appendNew(feeds[e.Source.Table], e.Target.Table)
		fedBy[e.Target.Table] = appendNew(fedBy[e.Target.Table], e.Source.Table)
		if e.Target.Column != "" {
			get(e.Target.Table).In = append(get(e.Target.Table).In, e)
			get(e.Source.Table).Out = append(get(e.Source.Table).Out, e)
		}
	}
	out := make([]*Table, 0, len(by))
	for _, t := range by {
		t.Upstream = closure(t.Name, fedBy)
		t.Downstream = closure(t.Name, feeds)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return strings.Compare(a.Name, b.Name) })
	return out, feeds
}

// closure returns the tables reachable from name through next, name left
// out, sorted.
func closure(name string, next map[string][]string) []string {
	seen := map[string]bool{name: true}
	queue := []string{name}
	var out []string
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
				queue = append(queue, m)
			}
		}
	}
	slices.Sort(out)
	return out
}

// appendNew appends s unless list holds it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// WarehouseColumns returns the columns of each table in the warehouse, by
// table name; a table the warehouse does not have, or that is not
// schema.table, is left out.
func WarehouseColumns(ctx context.Context, w warehouse.Warehouse, l *Lineage) (map[string][]warehouse.ColumnInfo, error) {
	out := map[string][]warehouse.ColumnInfo{}
	all, _ := tables(l)
	for _, t := range all {
		parts := strings.Split(t.Name, ".")
		if len(parts) < 2 {
			continue
		}
		cols, err := w.Columns(ctx, parts[len(parts)-2], parts[len(parts)-1])
		if err != nil {
			return nil, err
		}
		if len(cols) > 0 {
			out[t.Name] = cols
		}
	}
	return out, nil
}
