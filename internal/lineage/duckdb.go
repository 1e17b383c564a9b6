package lineage

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB driver, for DuckDB's own parser
)

// duckParser reads SQL with DuckDB's parser (json_serialize_sql) on an
// in-memory database, and prints expressions back with
// json_deserialize_sql.
type duckParser struct {
	db       *sql.DB
	ver      string
	template node // SELECT 1, serialized: its select list is replaced to print an expression
}

// newDuckParser opens an in-memory DuckDB database for parsing.
func newDuckParser() (*duckParser, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("cannot open DuckDB's parser: %w", err)
	}
	p := &duckParser{db: db}
	if err := db.QueryRow(`SELECT version()`).Scan(&p.ver); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open DuckDB's parser: %w", err)
	}
	tree, err := p.serialize("SELECT 1")
	if err != nil {
		db.Close()
		return nil, err
	}
	p.template = tree
	return p, nil
}

func (p *duckParser) version() string { return "duckdb " + p.ver }
func (p *duckParser) schema() string  { return "main" }
func (p *duckParser) close() error    { return p.db.Close() }

// serialize returns DuckDB's parse tree of text.
func (p *duckParser) serialize(text string) (node, error) {
	var out string
	if err := p.db.QueryRow(`SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, text).Scan(&out); err != nil {
		return nil, err
	}
	tree, err := decode(out)
	if err != nil {
		return nil, err
	}
	if tree["error"] == true {
		return nil, errors.New("DuckDB's parser refuses the SELECT: " + str(tree, "error_message"))
	}
	return tree, nil
}

func (p *duckParser) parse(text string) (*parsed, error) {
	tree, err := p.serialize(text)
	if err != nil {
		return nil, err
	}
	stmts := list(tree, "statements")
	if len(stmts) != 1 {
		return nil, fmt.Errorf("DuckDB read %d statements, not one SELECT", len(stmts))
	}
	root := obj(stmts[0].(node), "node")
	out := &parsed{}
	walk(root, func(n node) bool {
		if str(n, "type") == "BASE_TABLE" {
			out.tables = append(out.tables, nonEmpty(str(n, "catalog_name"), str(n, "schema_name"), str(n, "table_name")))
		}
		if m := obj(n, "cte_map"); m != nil {
			for _, e := range list(m, "map") {
				out.ctes = append(out.ctes, str(e.(node), "key"))
			}
		}
		return true
	})
	out.q, err = p.queryNode(root)
	return out, err
}

// queryNode converts a SELECT_NODE or SET_OPERATION_NODE.
func (p *duckParser) queryNode(n node) (*query, error) {
	q := &query{}
	for _, e := range list(obj(n, "cte_map"), "map") {
		e := e.(node)
		v := obj(e, "value")
		sub, err := p.queryNode(obj(obj(v, "query"), "node"))
		if err != nil {
			return nil, err
		}
		q.ctes = append(q.ctes, cte{name: str(e, "key"), columns: stringsOf(list(v, "aliases")), q: sub})
	}
	switch t := str(n, "type"); t {
	case "SET_OPERATION_NODE":
		branches := []any{n["left"], n["right"]}
		if c := list(n, "children"); len(c) > 0 {
			branches = c
		}
		if len(branches) != 2 || branches[0] == nil {
			return nil, fmt.Errorf("a set operation of %d branches is not traced", len(branches))
		}
		var err error
		if q.left, err = p.queryNode(branches[0].(node)); err != nil {
			return nil, err
		}
		if q.right, err = p.queryNode(branches[1].(node)); err != nil {
			return nil, err
		}
		return q, nil
	case "SELECT_NODE":
	case "RECURSIVE_CTE_NODE":
		return nil, errors.New("a recursive WITH is not traced")
	default:
		return nil, fmt.Errorf("a %s is not traced", strings.ToLower(strings.ReplaceAll(t, "_", " ")))
	}
	var err error
	if q.from, err = p.tableRef(obj(n, "from_table"), nil); err != nil {
		return nil, err
	}
	for _, e := range list(n, "select_list") {
		q.items = append(q.items, p.item(e.(node)))
	}
	return q, nil
}

// tableRef flattens a FROM entry into relations.
func (p *duckParser) tableRef(n node, into []relation) ([]relation, error) {
	switch t := str(n, "type"); t {
	case "", "EMPTY":
		return into, nil
	case "BASE_TABLE":
		return append(into, relation{alias: str(n, "alias"), columns: stringsOf(list(n, "column_name_alias")),
			table: nonEmpty(str(n, "catalog_name"), str(n, "schema_name"), str(n, "table_name"))}), nil
	case "SUBQUERY":
		sub, err := p.queryNode(obj(obj(n, "subquery"), "node"))
		if err != nil {
			return nil, err
		}
		return append(into, relation{alias: str(n, "alias"), columns: stringsOf(list(n, "column_name_alias")), sub: sub}), nil
	case "EXPRESSION_LIST":
		rows := list(n, "values")
		if len(rows) == 0 {
			return nil, errors.New("an empty VALUES list is not traced")
		}
		first, _ := rows[0].([]any)
		sub := valuesQuery(len(first), func(i int) string { return fmt.Sprintf("col%d", i) })
		return append(into, relation{alias: str(n, "alias"), columns: stringsOf(list(n, "column_name_alias")), sub: sub}), nil
	case "JOIN":
		into, err := p.tableRef(obj(n, "left"), into)
		if err != nil {
			return nil, err
		}
		return p.tableRef(obj(n, "right"), into)
	case "TABLE_FUNCTION":
		return nil, fmt.Errorf("FROM %s(…) is a table function, which lineage does not follow", str(obj(n, "function"), "function_name"))
	default:
		return nil, fmt.Errorf("a FROM entry of type %s is not traced", t)
	}
}

// item converts one select-list expression.
func (p *duckParser) item(e node) item {
	it := item{name: str(e, "alias")}
	switch str(e, "class") {
	case "STAR":
		if e["columns"] != true {
			return item{star: true, starOf: str(e, "relation_name")}
		}
	case "COLUMN_REF":
		return columnItem(it.name, stringsOf(list(e, "column_names")))
	}
	walk(e, func(n node) bool {
		switch str(n, "class") {
		case "COLUMN_REF":
			names := stringsOf(list(n, "column_names"))
			it.refs = append(it.refs, newRef(names, position(n, "query_location")))
			return false
		case "SUBQUERY":
			if sub, err := p.queryNode(obj(obj(n, "subquery"), "node")); err == nil {
				it.subs = append(it.subs, sub)
			}
			return false
		}
		return true
	})
	sortRefs(it.refs)
	it.text = func() string { return p.print(e) }
	if it.name == "" {
		it.name = it.text()
	}
	return it
}

// print returns an expression in DuckDB's own SQL: the SELECT 1 template
// with the expression as its select list, deserialized.
func (p *duckParser) print(e node) string {
	bare := node{}
	for k, v := range e {
		bare[k] = v
	}
	bare["alias"] = ""
	stmt := obj(list(p.template, "statements")[0].(node), "node")
	stmt["select_list"] = []any{bare}
	b, err := json.Marshal(p.template)
	if err != nil {
		return "expression"
	}
	var text string
	if err := p.db.QueryRow(`SELECT json_deserialize_sql(?::JSON)`, string(b)).Scan(&text); err != nil {
		return "expression"
	}
	return strings.TrimPrefix(text, "SELECT ")
}

// stringsOf returns the strings of a JSON array.
func stringsOf(l []any) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
