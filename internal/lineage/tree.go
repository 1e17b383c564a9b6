package lineage

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// node is one object of a parser's JSON tree.
type node = map[string]any

// parser reads one SELECT in a warehouse's own grammar.
type parser interface {
	// parse returns the query and the name parts of every table it reads.
	// A SELECT it parses but cannot follow returns the tables with the
	// error.
	parse(sql string) (*parsed, error)
	// version names the parser and its grammar; it is part of the cache key.
	version() string
	// schema is the schema a one-part table name is in.
	schema() string
	close() error
}

// parsed is a SELECT read by a parser.
type parsed struct {
	q      *query
	tables [][]string // every table named anywhere, CTE names included
	ctes   []string   // every WITH name
}

// decode reads a JSON tree, keeping numbers as they are written.
func decode(text string) (node, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.UseNumber()
	var n node
	err := d.Decode(&n)
	return n, err
}

// walk calls fn on every object below v, depth first, the keys of an
// object in order; fn returns false to skip what is below an object.
func walk(v any, fn func(n node) bool) {
	switch v := v.(type) {
	case node:
		if !fn(v) {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walk(v[k], fn)
		}
	case []any:
		for _, c := range v {
			walk(c, fn)
		}
	}
}

// obj returns the object n holds under key, or nil.
func obj(n node, key string) node {
	m, _ := n[key].(node)
	return m
}

// list returns the array n holds under key, or nil.
func list(n node, key string) []any {
	l, _ := n[key].([]any)
	return l
}

// str returns the string n holds under key, or "".
func str(n node, key string) string {
	s, _ := n[key].(string)
	return s
}

// nonEmpty returns the non-empty strings of parts.
func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// position returns the number n holds under key (a parser's offset into
// the SQL), or -1.
func position(n node, key string) int64 {
	v, ok := n[key].(json.Number)
	if !ok {
		return -1
	}
	i, err := v.Int64()
	if err != nil {
		return -1
	}
	return i
}
