package warehouse

// Binder collects the bound values of one statement, numbering its
// placeholders in the order they are written: the statement's text must be
// built in that order too (DuckDB's and Trino's markers are all ?).
type Binder struct {
	D    Dialect
	Args []any
}

// BigInt binds v and returns its placeholder, cast to BIGINT.
func (b *Binder) BigInt(v int64) string {
	b.Args = append(b.Args, v)
	return "CAST(" + b.D.Placeholder(len(b.Args), BigInt) + " AS BIGINT)"
}

// Text binds v and returns its placeholder, cast to the dialect's text type.
func (b *Binder) Text(v string) string {
	b.Args = append(b.Args, v)
	return "CAST(" + b.D.Placeholder(len(b.Args), String) + " AS " + b.D.TypeName(String) + ")"
}
