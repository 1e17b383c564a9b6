package e2e

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Querier is a database the helpers read: an *engine.DB (whose queries
// take $1 placeholders on both dialects) or a *sql.DB.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Patience is how long the Wait helpers wait before failing the test.
const Patience = 2 * time.Minute

// Count reads one integer, such as a count(*).
func Count(t testing.TB, db Querier, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Scalar reads one text value; a null is "".
func Scalar(t testing.TB, db Querier, query string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

// QueryRows returns the query's rows, each as its values joined by spaces:
// NULL as NULL, timestamps as the Engine DB's UTC text (see
// enginetest.Rows).
func QueryRows(t testing.TB, db Querier, query string, args ...any) []string {
	t.Helper()
	return enginetest.JoinedRows(t, db, " ", query, args...)
}

// MustExec runs statements, failing the test at the first error.
func MustExec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// WaitFor polls until the count query returns want, for at most Patience.
func WaitFor(t testing.TB, db Querier, want int, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for Count(t, db, query, args...) != want {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %d from %s", want, query)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitRunsEnded waits until every run of the Engine DB (every run in ids,
// when given) has ended, for at most Patience, and returns each run's
// status by its id.
func WaitRunsEnded(t testing.TB, db *engine.DB, ids ...int64) map[int64]records.RunStatus {
	t.Helper()
	query := "SELECT PIPELINE_RUN_ID, STATUS FROM AUD_PIPELINES_RUN_LOG"
	deadline := time.Now().Add(Patience)
	for {
		statuses := map[int64]records.RunStatus{}
		open := 0
		rs, err := db.QueryContext(context.Background(), query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		for rs.Next() {
			var id int64
			var s records.RunStatus
			if err := rs.Scan(&id, &s); err != nil {
				rs.Close()
				t.Fatal(err)
			}
			statuses[id] = s
		}
		rs.Close()
		if len(ids) > 0 {
			wanted := map[int64]records.RunStatus{}
			for _, id := range ids {
				if s, ok := statuses[id]; ok {
					wanted[id] = s
				} else {
					open++ // not made yet
				}
			}
			statuses = wanted
		}
		for _, s := range statuses {
			if !s.Ended() {
				open++
			}
		}
		if open == 0 {
			return statuses
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for runs to end: %v", statuses)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
