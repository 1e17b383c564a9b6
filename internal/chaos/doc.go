// Package chaos is the chaos test, the database outage tests and the soak
// of etl-craft, all black-box (see internal/e2e): `etl-craft server` over a
// workload of SQL appends, SCD1 and SCD2 merges and script loads
// (task.load), its runs triggered through the HTTP API, killed with SIGKILL
// at random moments and at fault points (ETL_CRAFT_FAULT=<point>:kill) and
// started again until every run has ended; then every run, attempt, target
// and mirror is checked. The outage tests stop a PostgreSQL Engine DB or
// warehouse of their own under a running server. bench/soak/run.sh runs the
// same workload for an hour or more. The package has no code of its own.
package chaos
