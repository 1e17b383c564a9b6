package run

// The transitions files own every status write: of runs
// (transitions_runs.go), task runs (transitions_taskruns.go) and attempts
// (transitions_attempts.go); this one holds what they share. Each
// transition is a compare-and-set on the row id, the status it expects and,
// where a lease is involved, the owner: when the row is not as expected the
// write changes nothing and returns a StaleTransition error (exit 20) saying
// what was expected and what was found. Nothing else in the package updates
// STATUS, OWNER_ID or LEASE_EXPIRES_AT.

import (
	"database/sql"

	"github.com/etl-craft/etl-craft/internal/exit"
)

const (
	runsTable     = "AUD_PIPELINES_RUN_LOG"
	taskRunsTable = "AUD_TASK_RUN_LOG"
	attemptsTable = "AUD_TASK_ATTEMPTS"
)

// stale is the error of a compare-and-set that found the row changed.
func stale(table string, id int64, action, expected, found string) error {
	return exit.Errorf(exit.StaleTransition, "%s row_id=%d: cannot %s: expected %s, found %s",
		table, id, action, expected, found)
}

// noRow reports whether a statement changed no row.
func noRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 0, err
}
