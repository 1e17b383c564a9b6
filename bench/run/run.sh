#!/usr/bin/env bash
# Benchmark of running pipelines (docs/benchmarks.md).
#
# Runs a pipeline of 500 one-row CREATE_TABLE tasks (a fan-out of 250 and 25
# chains of 10) on a SQLite Engine DB with a DuckDB warehouse, and on
# PostgreSQL for both, and measures in the same iteration:
#   pipeline-s        the run's wall time
#   direct-s          the same 500 statements run directly on the warehouse
#   ratio             pipeline-s / direct-s
#   overhead-ms/task  (pipeline-s - direct-s) / 500
#   engine-ms/task    the same run with a handler that does nothing: the
#                     engine alone (dispatch, attempts, leases, logs)
#   handler-ms/task   the SQL handler run on each task in turn without the
#                     engine, less the direct statements: its own warehouse work
#
# Needs a PostgreSQL server, named by ETL_CRAFT_TEST_PG (an administrator URL;
# scripts/test.sh starts one). Pass -benchtime Nx to average N iterations.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
export ETL_CRAFT_TEST_PG
go test ./internal/run -run '^$' -bench '^BenchmarkPipeline500$' -benchtime 1x -timeout 60m "$@"
