#!/usr/bin/env bash
# Benchmark of being observed (docs/benchmarks.md).
#
# BenchmarkObservedEngine runs a pipeline of 500 tasks whose handler does
# nothing (the engine alone) in three setups, each on an Engine DB of its
# own: observed by nobody with tracing off (off); measured for /metrics
# while it is scraped every second (metrics); and the same with tracing on,
# exporting to a receiver on loopback (on). Each iteration runs 5 rounds of
# one run per setup, in an order that turns from round to round, and it
# reports medians over the rounds:
#   off-ms/task, metrics-ms/task, on-ms/task  the engine's time per task
#   metrics-%, overhead-%    of the per-round ratios metrics / off - 1 and
#                            on / off - 1 of the wall times
#   cpu-metrics-%, cpu-overhead-%  the same of the CPU time the process used
# BenchmarkScrape scrapes the metrics of an Engine DB holding 1,000
# pipelines with a run each, through the server's handler:
#   first-ms                 the first scrape, which counts every run stored
#   ms/scrape                each later one
#   queries/scrape           the Engine DB queries a later one sends
# Both on SQLite and on PostgreSQL.
#
# Needs a PostgreSQL server, named by ETL_CRAFT_TEST_PG (an administrator URL;
# scripts/test.sh starts one). Pass -benchtime Nx for N iterations.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
export ETL_CRAFT_TEST_PG
go test ./internal/metrics -run '^$' -bench '^(BenchmarkObservedEngine|BenchmarkScrape)$' -benchtime 3x -timeout 60m "$@"
