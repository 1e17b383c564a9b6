#!/usr/bin/env bash
# Benchmarks of the server (docs/benchmarks.md).
#
# BenchmarkThousandPipelinesOnOneMinute registers 1,000 pipelines of one
# one-row CREATE_TABLE task each, all scheduled every minute, on a SQLite
# Engine DB with a DuckDB warehouse and on PostgreSQL for both, runs a server
# over them with Max_parallel_tasks 8, without and with cloning, and reports
# against the same 1,000 statements run directly on the warehouse in the same
# iteration: the ratio of the last run's end to that baseline, tick → first
# task start, admission and dispatch latencies (p50, p99), Engine DB write
# transactions, statements and reads per run, and CPU per run. Each kind takes
# some three minutes (a wait for the next minute, the runs).
#
# BenchmarkTenThousandPipelinesIdle starts `etl-craft server` over 10,000
# active pipelines none of which is due, and reports its CPU over an idle
# minute (ETL_CRAFT_BENCH_IDLE), its resident memory and how soon a schedule
# change makes a run.
#
# Extra arguments go to go test, e.g. -bench 'OneMinute/postgres' to run one
# kind. Needs a PostgreSQL server, named by ETL_CRAFT_TEST_PG (an
# administrator URL; scripts/test.sh starts one).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
export ETL_CRAFT_TEST_PG
go test ./internal/server -run '^$' -bench '^Benchmark(ThousandPipelinesOnOneMinute|TenThousandPipelinesIdle)$' -benchtime 1x -timeout 90m "$@"
