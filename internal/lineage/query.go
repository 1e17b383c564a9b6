package lineage

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// query is one SELECT as the lineage walk sees it, whichever parser read
// it: its WITH list, its FROM relations, its select list, or the two
// branches of a set operation.
type query struct {
	ctes  []cte
	from  []relation
	items []item
	// left and right are set for UNION, INTERSECT and EXCEPT; from and
	// items are then empty.
	left, right *query
}

// cte is one WITH entry.
type cte struct {
	name    string
	columns []string // WITH name(a, b) renames its columns
	q       *query
}

// relation is one table or subquery of a FROM clause, joins flattened.
type relation struct {
	alias string   // the name the query refers to it by; "" for the table's own name
	table []string // a table's (or a CTE's) name parts
	sub   *query   // a subquery in FROM
	// columns renames the relation's columns: AS alias(a, b).
	columns []string
}

// item is one entry of a select list.
type item struct {
	name   string // the output column's name ("" for a star)
	star   bool
	starOf string // the qualifier of q.*; "" for *
	// copy is set when the item is a bare column reference.
	copy bool
	refs []ref    // the column references of the expression
	subs []*query // the scalar subqueries inside it
	// text renders the expression in the parser's own SQL.
	text func() string
}

// Values is the transformation of a column of a VALUES list.
const Values = "VALUES"

// valuesQuery is a VALUES list of n columns with the parser's default
// column names (name(i) for the i-th, from 0): constants, with no source.
func valuesQuery(n int, name func(i int) string) *query {
	q := &query{}
	for i := range n {
		q.items = append(q.items, item{name: name(i), text: func() string { return Values }})
	}
	return q
}

// ref is a column reference: its qualifier parts and its name, and where
// it is in the SQL.
type ref struct {
	qualifier []string
	column    string
	pos       int64
}

// newRef returns the reference of a column's name parts at pos.
func newRef(names []string, pos int64) ref {
	if len(names) == 0 {
		return ref{pos: pos}
	}
	return ref{qualifier: names[:len(names)-1], column: names[len(names)-1], pos: pos}
}

// columnItem is a select-list entry that is a bare column reference: a
// copy named alias, or after the column when alias is "".
func columnItem(alias string, names []string) item {
	if alias == "" && len(names) > 0 {
		alias = names[len(names)-1]
	}
	return item{name: alias, copy: true, refs: []ref{newRef(names, 0)}}
}

// sortRefs orders references as the SQL writes them.
func sortRefs(refs []ref) {
	slices.SortStableFunc(refs, func(a, b ref) int { return cmp.Compare(a.pos, b.pos) })
}

// Copy is the transformation of a column copied unchanged.
const Copy = "copy"

// column is one output column of a resolved query.
type column struct {
	name    string
	sources []Source
	how     string // Copy or the expression
}

// resolver turns parsed queries into columns of base tables.
type resolver struct {
	names   func(parts []string) string          // a table's lineage name
	catalog func(table string) ([]string, error) // a base table's columns; nil without a warehouse
}

// scope is what column references of one query level can see.
type scope struct {
	rels   []rel
	parent *scope
}

// rel is a relation of a scope, resolved.
type rel struct {
	name  string   // what references qualify it by
	table string   // a base table's lineage name; "" for a derived one
	cols  []column // a derived relation's columns
}

// resolve returns the output columns of q, with ctes visible to it and
// outer the scope of an enclosing query (for correlated subqueries).
func (r *resolver) resolve(q *query, ctes map[string]*cteState, outer *scope) ([]column, error) {
	if len(q.ctes) > 0 {
		ctes = copyCTEs(ctes)
		for _, c := range q.ctes {
			ctes[strings.ToLower(c.name)] = &cteState{q: c.q, columns: c.columns, ctes: copyCTEs(ctes)}
		}
	}
	if q.left != nil {
		return r.setOperation(q, ctes, outer)
	}
	sc := &scope{parent: outer}
	for _, f := range q.from {
		rl, err := r.relation(f, ctes, outer)
		if err != nil {
			return nil, err
		}
		sc.rels = append(sc.rels, rl)
	}
	var out []column
	for _, it := range q.items {
		if it.star {
			cols, err := r.star(sc, it.starOf)
			if err != nil {
				return nil, err
			}
			out = append(out, cols...)
			continue
		}
		c, err := r.item(it, sc, ctes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// cteState is a WITH entry while it is resolved: the entries it sees and,
// once resolved, its columns.
type cteState struct {
	q        *query
	columns  []string
	ctes     map[string]*cteState
	cols     []column
	done     bool
	visiting bool
}

func copyCTEs(m map[string]*cteState) map[string]*cteState {
	out := make(map[string]*cteState, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// setOperation merges the branches of a set operation column by column:
// names from the first branch, sources from both.
func (r *resolver) setOperation(q *query, ctes map[string]*cteState, outer *scope) ([]column, error) {
	left, err := r.resolve(q.left, ctes, outer)
	if err != nil {
		return nil, err
	}
	right, err := r.resolve(q.right, ctes, outer)
	if err != nil {
		return nil, err
	}
	if len(left) != len(right) {
		return nil, fmt.Errorf("the branches of a set operation have %d and %d columns", len(left), len(right))
	}
	out := make([]column, len(left))
	for i, l := range left {
		c := column{name: l.name, sources: addSources(slices.Clone(l.sources), right[i].sources), how: l.how}
		if c.how == Copy {
			c.how = right[i].how
		}
		out[i] = c
	}
	return out, nil
}

// relation resolves one FROM entry: a CTE, a base table or a subquery.
func (r *resolver) relation(f relation, ctes map[string]*cteState, outer *scope) (rel, error) {
	if f.sub != nil {
		cols, err := r.resolve(f.sub, ctes, outer)
		if err != nil {
			return rel{}, err
		}
		cols, err = rename(cols, f.columns)
		return rel{name: f.alias, cols: cols}, err
	}
	last := f.table[len(f.table)-1]
	name := f.alias
	if name == "" {
		name = last
	}
	if len(f.table) == 1 {
		if c, ok := ctes[strings.ToLower(last)]; ok {
			cols, err := r.cte(c)
			if err != nil {
				return rel{}, err
			}
			cols, err = rename(cols, f.columns)
			return rel{name: name, cols: cols}, err
		}
	}
	return rel{name: name, table: r.names(f.table)}, nil
}

// cte resolves a WITH entry once; one that refers to itself is recursive,
// which lineage does not follow.
func (r *resolver) cte(c *cteState) ([]column, error) {
	if c.done {
		return c.cols, nil
	}
	if c.visiting {
		return nil, errors.New("a recursive WITH is not traced")
	}
	c.visiting = true
	cols, err := r.resolve(c.q, c.ctes, nil)
	c.visiting = false
	if err == nil {
		cols, err = rename(cols, c.columns)
	}
	if err != nil {
		return nil, err
	}
	c.cols, c.done = cols, true
	return cols, nil
}

// rename gives the first len(names) columns the names of an alias list.
func rename(cols []column, names []string) ([]column, error) {
	if len(names) > len(cols) {
		return nil, fmt.Errorf("an alias list names %d columns of %d", len(names), len(cols))
	}
	out := slices.Clone(cols)
	for i, n := range names {
		out[i].name = strings.ToLower(n)
	}
	return out, nil
}

// star expands * or q.* into the columns of the scope's relations.
func (r *resolver) star(sc *scope, of string) ([]column, error) {
	var out []column
	found := false
	for _, rl := range sc.rels {
		if of != "" && !strings.EqualFold(rl.name, of) {
			continue
		}
		found = true
		if rl.table == "" {
			for _, c := range rl.cols {
				out = append(out, column{name: c.name, sources: c.sources, how: c.how})
			}
			continue
		}
		cols, err := r.tableColumns(rl.table)
		if err != nil {
			return nil, err
		}
		for _, c := range cols {
			out = append(out, column{name: c, sources: []Source{{Table: rl.table, Column: c}}, how: Copy})
		}
	}
	if !found && of != "" {
		return nil, fmt.Errorf("%s.* names no table of the FROM clause", of)
	}
	return out, nil
}

// tableColumns returns a base table's columns from the warehouse's catalog.
func (r *resolver) tableColumns(table string) ([]string, error) {
	if r.catalog == nil {
		return nil, fmt.Errorf("SELECT * over %s needs the warehouse's catalog, which could not be read", table)
	}
	cols, err := r.catalog(table)
	if err != nil {
		return nil, fmt.Errorf("SELECT * over %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("SELECT * over %s: the warehouse has no such table", table)
	}
	return cols, nil
}

// item resolves one select-list entry.
func (r *resolver) item(it item, sc *scope, ctes map[string]*cteState) (column, error) {
	if it.copy {
		src, how, err := r.lookup(it.refs[0], sc)
		return column{name: strings.ToLower(it.name), sources: src, how: how}, err
	}
	var sources []Source
	for _, rf := range it.refs {
		src, _, err := r.lookup(rf, sc)
		if err != nil {
			return column{}, err
		}
		sources = addSources(sources, src)
	}
	for _, sub := range it.subs {
		cols, err := r.resolve(sub, ctes, sc)
		if err != nil {
			return column{}, err
		}
		for _, c := range cols {
			sources = addSources(sources, c.sources)
		}
	}
	return column{name: strings.ToLower(it.name), sources: sources, how: it.text()}, nil
}

// lookup finds the relation a column reference belongs to, in the scope or
// an enclosing one, and returns the base columns it stands for.
func (r *resolver) lookup(rf ref, sc *scope) ([]Source, string, error) {
	col := strings.ToLower(rf.column)
	for s := sc; s != nil; s = s.parent {
		rl, ok, err := r.owner(rf, col, s)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		if rl.table != "" {
			return []Source{{Table: rl.table, Column: col}}, Copy, nil
		}
		for _, c := range rl.cols {
			if c.name == col {
				return c.sources, c.how, nil
			}
		}
		return nil, "", fmt.Errorf("%s has no column %s", rl.name, col)
	}
	return nil, "", fmt.Errorf("column %s is not a column of any table the query reads", refText(rf))
}

// owner picks the relation of scope s a reference belongs to: the one its
// qualifier names, or the only one that can hold an unqualified column.
func (r *resolver) owner(rf ref, col string, s *scope) (rel, bool, error) {
	if q := len(rf.qualifier); q > 0 {
		name := rf.qualifier[q-1]
		for _, rl := range s.rels {
			if strings.EqualFold(rl.name, name) {
				return rl, true, nil
			}
		}
		return rel{}, false, nil
	}
	var known, unknown []rel
	for _, rl := range s.rels {
		if rl.table == "" {
			if slices.ContainsFunc(rl.cols, func(c column) bool { return c.name == col }) {
				known = append(known, rl)
			}
			continue
		}
		if len(s.rels) == 1 || r.catalog == nil {
			unknown = append(unknown, rl)
			continue
		}
		cols, err := r.catalog(rl.table)
		switch {
		case err != nil || len(cols) == 0:
			unknown = append(unknown, rl)
		case slices.Contains(cols, col):
			known = append(known, rl)
		}
	}
	switch {
	case len(known) == 1:
		return known[0], true, nil
	case len(known) == 0 && len(unknown) == 1:
		return unknown[0], true, nil
	case len(known) == 0 && len(unknown) == 0:
		return rel{}, false, nil
	}
	var names []string
	for _, rl := range append(known, unknown...) {
		names = append(names, rl.name)
	}
	return rel{}, false, fmt.Errorf("column %s could belong to %s: qualify it", col, strings.Join(names, " or "))
}

func refText(rf ref) string {
	return strings.Join(append(slices.Clone(rf.qualifier), rf.column), ".")
}

// addSources appends the sources of more not already in to.
func addSources(to, more []Source) []Source {
	for _, s := range more {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}
