#!/usr/bin/env bash
# Benchmark of being observed (docs/benchmarks.md).
#
# BenchmarkObservedEngine runs a pipeline of 500 tasks whose handler does
# nothing (the engine alone) on an Engine DB nobody observes with tracing
# off, and on one measured for /metrics with tracing on (exporting to a
# receiver on loopback) while it is scraped every second, in the same
# iteration, and reports:
#   off-ms/task, on-ms/task  the engine's time per task without and with
#   overhead-%               on / off - 1
# BenchmarkScrape scrapes the metrics of an Engine DB holding 1,000
# pipelines with a run each, through the server's handler:
#   first-ms                 the first scrape, which counts every run stored
#   ms/scrape                each later one
# Both on SQLite and on PostgreSQL.
#
# Needs a PostgreSQL server, named by ETL_CRAFT_TEST_PG (an administrator URL;
# scripts/test.sh starts one). Pass -benchtime Nx for N iterations.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
export ETL_CRAFT_TEST_PG
go test ./internal/metrics -run '^$' -bench '^(BenchmarkObservedEngine|BenchmarkScrape)$' -benchtime 3x -timeout 60m "$@"
