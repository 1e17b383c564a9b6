// Package testenv reads the environment variables through which
// scripts/test.sh hands the tests what it started or installed (a
// PostgreSQL server, Apache Airflow, a linter).
package testenv

import (
	"os"
	"testing"
)

// Require returns the value of the environment variable. When it is not
// set the test is skipped, saying what sets it (hint), unless CI is set,
// where it fails: CI runs every test.
func Require(t testing.TB, variable, hint string) string {
	t.Helper()
	v := os.Getenv(variable)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: it cannot be skipped in CI (%s)", variable, hint)
		}
		t.Skipf("%s is not set: %s", variable, hint)
	}
	return v
}
