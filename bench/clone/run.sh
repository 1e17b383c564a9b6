#!/usr/bin/env bash
# Benchmark of cloning the Engine DB into the warehouse (docs/benchmarks.md).
#
# Clones an Engine DB holding 1,000,000 AUD_ rows into a PostgreSQL warehouse
# and into a DuckDB file, and measures in the same run the practical limit of
# each warehouse (psql \copy of the same rows; a plain DuckDB appender program)
# and the reference's multi-row INSERTs of 250 bound values. It prints rows
# per second (the fastest of three iterations of each) and the clone's ratio
# to each. Extra arguments go to go test (for example -benchtime 5x).
#
# Needs a PostgreSQL server for the PostgreSQL Engine DB and warehouse, named
# by ETL_CRAFT_TEST_PG (an administrator URL; scripts/test.sh starts one), and
# psql on the PATH. Settings, all optional:
#   ETL_CRAFT_BENCH_ROWS         AUD_ACTIONS rows (default 1000000)
#   ETL_CRAFT_BENCH_INSERT_ROWS  rows the INSERT path writes (default 100000)
#   ETL_CRAFT_BENCH_ENGINES      Engine DBs, comma-separated (default sqlite,postgres)
#   ETL_CRAFT_BENCH_WAREHOUSES   warehouses, comma-separated (default postgres,duckdb)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
command -v psql >/dev/null || { echo "psql is not on the PATH" >&2; exit 1; }
export ETL_CRAFT_TEST_PG
go test ./internal/clone -run '^$' -bench '^BenchmarkClone$' -benchtime 3x -timeout 60m "$@" 2>&1 |
  grep -v 'level=INFO'
