package engine

import "time"

// Operation is what an Observer is told of: a query, a statement, or a
// whole write transaction.
type Operation string

// The operations an Observer is told of.
const (
	// OpQuery is a query, of a transaction or not: until its rows are
	// ready to read.
	OpQuery Operation = "query"
	// OpExec is a statement that returns no rows.
	OpExec Operation = "exec"
	// OpTransaction is a write transaction (Tx, BoundedTx) from the wait
	// for its lock to its commit or rollback.
	OpTransaction Operation = "transaction"
)

// Observer is told how long each operation of the Engine DB took and
// whether it failed, for metrics (see Options.Observer).
type Observer interface {
	Observe(op Operation, took time.Duration, err error)
}

// observe tells o of an operation begun at start; a nil o is told nothing.
func observe(o Observer, op Operation, start time.Time, err error) {
	if o != nil {
		o.Observe(op, time.Since(start), err)
	}
}
