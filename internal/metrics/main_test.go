package metrics_test

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// The black-box tests of the metrics and traces run the binary e2e builds.
func TestMain(m *testing.M) { e2e.Main(m) }

// pairs are the pairs of databases the black-box tests run on: the default
// files, and PostgreSQL for both.
var pairs = []e2e.Pair{e2e.SQLiteDuckDB, e2e.PostgresPostgres}
