// Package records is the shared vocabulary of the run log: the typed
// statuses of runs, task runs and attempts, the rows of
// AUD_PIPELINES_RUN_LOG, AUD_TASK_RUN_LOG and AUD_TASK_ATTEMPTS with their
// scanners, and the reads that several packages make of them (select a run,
// a run's task runs, who paused a pipeline). It is a leaf: it knows the
// tables, not the packages that write them; compare-and-set writes stay with
// their owners.
package records

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Querier is what the reads need of a database or a transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is one row to scan: a *sql.Row or a *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Time scans a timestamp stored by either dialect: a time value, or the UTC
// text SQLite keeps.
type Time struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*t = Time{}
		return nil
	case time.Time:
		*t = Time{Time: x.UTC(), Valid: true}
		return nil
	case string:
		return t.parse(x)
	case []byte:
		return t.parse(string(x))
	}
	return fmt.Errorf("cannot read %T as a timestamp", v)
}

func (t *Time) parse(s string) error {
	for _, layout := range timeLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			*t = Time{Time: v.UTC(), Valid: true}
			return nil
		}
	}
	return fmt.Errorf("cannot read %q as a timestamp", s)
}

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

// query returns the rows a query finds, each read by scan, in its order;
// a failure is a read error naming the table.
func query[T any](ctx context.Context, q Querier, table string, scan func(Scanner) (T, error), stmt string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, readError(err, table)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, readError(err, table)
		}
		out = append(out, v)
	}
	return out, readError(rows.Err(), table)
}

// ReadError is a failed read of an Engine DB table. The exit package gives
// it the ENGINE_DB exit code (12): records stays a leaf, and names no code.
type ReadError struct {
	Table string
	Err   error
}

func (e *ReadError) Error() string { return "could not read " + e.Table + ": " + e.Err.Error() }

// Unwrap returns the database's error.
func (e *ReadError) Unwrap() error { return e.Err }

// readError is a failed read of a table; nil when err is.
func readError(err error, table string) error {
	if err == nil {
		return nil
	}
	return &ReadError{Table: table, Err: err}
}

// quoted returns the words as a list of SQL string literals, for an IN
// list in a query constant: 'A', 'B'.
func quoted[S ~string](words ...S) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + string(w) + "'"
	}
	return strings.Join(out, ", ")
}
