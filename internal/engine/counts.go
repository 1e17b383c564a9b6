package engine

import "sync/atomic"

// Counts are how much work a DB gave its database since it was opened.
type Counts struct {
	// Transactions are the write transactions begun (Tx, BoundedTx),
	// committed or not.
	Transactions int64
	// Statements are the statements run in those transactions, the
	// engine's own (the actor's settings on PostgreSQL) included; BEGIN
	// and COMMIT are not counted.
	Statements int64
	// Reads are the statements run outside any transaction (DB's
	// QueryContext, QueryRowContext and ExecContext).
	Reads int64
}

// Sub returns the counts since an earlier reading.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{Transactions: c.Transactions - earlier.Transactions, Statements: c.Statements - earlier.Statements,
		Reads: c.Reads - earlier.Reads}
}

// counters are a DB's Counts as they grow.
type counters struct {
	transactions, statements, reads atomic.Int64
}

// Counts returns the DB's counts so far: benchmarks read them before and
// after the work they measure.
func (db *DB) Counts() Counts {
	return Counts{Transactions: db.counts.transactions.Load(), Statements: db.counts.statements.Load(), Reads: db.counts.reads.Load()}
}
