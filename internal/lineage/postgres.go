package lineage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/encoding/protojson"
)

// pgParser reads SQL with PostgreSQL's own parser (libpg_query), and
// prints expressions back with its deparser.
type pgParser struct {
	grammar int32 // the PostgreSQL version of the grammar, such as 170007
}

// newPGParser readies PostgreSQL's parser.
func newPGParser() (*pgParser, error) {
	tree, err := pg.Parse("SELECT 1")
	if err != nil {
		return nil, fmt.Errorf("cannot start PostgreSQL's parser: %w", err)
	}
	return &pgParser{grammar: tree.GetVersion()}, nil
}

func (p *pgParser) version() string {
	return fmt.Sprintf("pg_query_go v6, PostgreSQL grammar %d", p.grammar)
}
func (p *pgParser) schema() string { return "public" }
func (p *pgParser) close() error   { return nil }

func (p *pgParser) parse(text string) (*parsed, error) {
	out, err := pg.ParseToJSON(text)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL's parser refuses the SELECT: %w", err)
	}
	tree, err := decode(out)
	if err != nil {
		return nil, err
	}
	stmts := list(tree, "stmts")
	if len(stmts) != 1 {
		return nil, fmt.Errorf("PostgreSQL read %d statements, not one SELECT", len(stmts))
	}
	sel := obj(obj(stmts[0].(node), "stmt"), "SelectStmt")
	if sel == nil {
		return nil, errors.New("the statement is not a SELECT")
	}
	res := &parsed{}
	walk(sel, func(n node) bool {
		if rv := obj(n, "RangeVar"); rv != nil {
			res.tables = append(res.tables, nonEmpty(str(rv, "catalogname"), str(rv, "schemaname"), str(rv, "relname")))
		}
		if c := obj(n, "CommonTableExpr"); c != nil {
			res.ctes = append(res.ctes, str(c, "ctename"))
		}
		return true
	})
	res.q, err = p.selectStmt(sel)
	return res, err
}

// selectStmt converts a SelectStmt body.
func (p *pgParser) selectStmt(n node) (*query, error) {
	q := &query{}
	if w := obj(n, "withClause"); w != nil {
		if w["recursive"] == true {
			return nil, errors.New("a recursive WITH is not traced")
		}
		for _, c := range list(w, "ctes") {
			c := obj(c.(node), "CommonTableExpr")
			sub := obj(obj(c, "ctequery"), "SelectStmt")
			if sub == nil {
				return nil, fmt.Errorf("WITH %s is not a SELECT", str(c, "ctename"))
			}
			cq, err := p.selectStmt(sub)
			if err != nil {
				return nil, err
			}
			q.ctes = append(q.ctes, cte{name: str(c, "ctename"), columns: svals(list(c, "aliascolnames")), q: cq})
		}
	}
	if op := str(n, "op"); op != "" && op != "SETOP_NONE" {
		var err error
		if q.left, err = p.selectStmt(obj(n, "larg")); err != nil {
			return nil, err
		}
		if q.right, err = p.selectStmt(obj(n, "rarg")); err != nil {
			return nil, err
		}
		return q, nil
	}
	if rows := list(n, "valuesLists"); len(rows) > 0 {
		first := list(obj(rows[0].(node), "List"), "items")
		q.items = valuesQuery(len(first), func(i int) string { return fmt.Sprintf("column%d", i+1) }).items
		return q, nil
	}
	for _, f := range list(n, "fromClause") {
		var err error
		if q.from, err = p.fromItem(f.(node), q.from); err != nil {
			return nil, err
		}
	}
	for _, t := range list(n, "targetList") {
		q.items = append(q.items, p.item(obj(t.(node), "ResTarget")))
	}
	return q, nil
}

// fromItem flattens a FROM entry into relations.
func (p *pgParser) fromItem(n node, into []relation) ([]relation, error) {
	switch {
	case n["RangeVar"] != nil:
		rv := obj(n, "RangeVar")
		a := obj(rv, "alias")
		return append(into, relation{alias: str(a, "aliasname"), columns: svals(list(a, "colnames")),
			table: nonEmpty(str(rv, "catalogname"), str(rv, "schemaname"), str(rv, "relname"))}), nil
	case n["RangeSubselect"] != nil:
		rs := obj(n, "RangeSubselect")
		sub, err := p.selectStmt(obj(obj(rs, "subquery"), "SelectStmt"))
		if err != nil {
			return nil, err
		}
		a := obj(rs, "alias")
		return append(into, relation{alias: str(a, "aliasname"), columns: svals(list(a, "colnames")), sub: sub}), nil
	case n["JoinExpr"] != nil:
		j := obj(n, "JoinExpr")
		into, err := p.fromItem(obj(j, "larg"), into)
		if err != nil {
			return nil, err
		}
		return p.fromItem(obj(j, "rarg"), into)
	case n["RangeFunction"] != nil:
		return nil, errors.New("a function in FROM is not traced")
	}
	for k := range n {
		return nil, fmt.Errorf("a FROM entry of type %s is not traced", k)
	}
	return into, nil
}

// item converts one ResTarget.
func (p *pgParser) item(t node) item {
	val := obj(t, "val")
	it := item{name: str(t, "name")}
	if cr := obj(val, "ColumnRef"); cr != nil {
		fields := list(cr, "fields")
		if isStar(fields) {
			qual := svals(fields[:len(fields)-1])
			it = item{star: true}
			if len(qual) > 0 {
				it.starOf = qual[len(qual)-1]
			}
			return it
		}
		return columnItem(it.name, svals(fields))
	}
	walk(val, func(n node) bool {
		if cr := obj(n, "ColumnRef"); cr != nil {
			if fields := list(cr, "fields"); !isStar(fields) {
				it.refs = append(it.refs, newRef(svals(fields), position(cr, "location")))
			}
			return false
		}
		if sl := obj(n, "SubLink"); sl != nil {
			if sub, err := p.selectStmt(obj(obj(sl, "subselect"), "SelectStmt")); err == nil {
				it.subs = append(it.subs, sub)
			}
			return false
		}
		return true
	})
	sortRefs(it.refs)
	it.text = func() string { return p.print(val) }
	if it.name == "" {
		it.name = "?column?"
		if f := obj(val, "FuncCall"); f != nil {
			if names := svals(list(f, "funcname")); len(names) > 0 {
				it.name = names[len(names)-1]
			}
		}
	}
	return it
}

// print returns an expression in PostgreSQL's own SQL: SELECT <expression>
// deparsed.
func (p *pgParser) print(val node) string {
	doc := node{"version": p.grammar, "stmts": []any{node{"stmt": node{"SelectStmt": node{
		"targetList":  []any{node{"ResTarget": node{"val": val}}},
		"limitOption": "LIMIT_OPTION_DEFAULT", "op": "SETOP_NONE"}}}}}
	b, err := json.Marshal(doc)
	if err != nil {
		return "expression"
	}
	var tree pg.ParseResult
	if err := protojson.Unmarshal(b, &tree); err != nil {
		return "expression"
	}
	text, err := pg.Deparse(&tree)
	if err != nil {
		return "expression"
	}
	return strings.TrimPrefix(text, "SELECT ")
}

// isStar reports whether a ColumnRef's fields end with *.
func isStar(fields []any) bool {
	if len(fields) == 0 {
		return false
	}
	last, _ := fields[len(fields)-1].(node)
	return last["A_Star"] != nil
}

// svals returns the sval of each String node of a list.
func svals(l []any) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		n, _ := v.(node)
		if s := str(obj(n, "String"), "sval"); s != "" {
			out = append(out, s)
		}
	}
	return out
}
