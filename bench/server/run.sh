#!/usr/bin/env bash
# Benchmark of the server (docs/benchmarks.md).
#
# Registers 1,000 pipelines of one one-row CREATE_TABLE task each, all
# scheduled every minute, on a SQLite Engine DB with a DuckDB warehouse and on
# PostgreSQL for both, runs a server over them with Max_parallel_tasks 8 and
# reports:
#   p50-s, p99-s, max-s  the delay from their common tick to each run's
#                        first task start
#   idle-cpu-%           the server's CPU time over an idle minute with the
#                        same 1,000 pipelines, as a share of one core
# Each kind takes some three minutes (a wait for the next minute, the runs,
# the idle minute).
#
# Needs a PostgreSQL server, named by ETL_CRAFT_TEST_PG (an administrator URL;
# scripts/test.sh starts one).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
export ETL_CRAFT_TEST_PG
go test ./internal/server -run '^$' -bench '^BenchmarkThousandPipelinesOnOneMinute$' -benchtime 1x -timeout 60m "$@"
