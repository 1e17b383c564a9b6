#!/usr/bin/env bash
# Soak of the server (docs/benchmarks.md), not part of CI.
#
# Runs the chaos test's workload (24 pipelines of SQL appends, SCD1 and SCD2
# merges and script loads, cloning on) under one `etl-craft server` for a
# duration, every pipeline triggered again through the HTTP API as soon as
# its run ended, and the server killed with SIGKILL about every few minutes
# and started again. Then every run is let end and checked as the chaos test
# checks them, and it reports:
#   runs-ended         runs that ended
#   kills              servers killed
#   lost-attempts      attempts the kills left LOST (each retried)
#   queue-age-p50-s, queue-age-p99-s
#                      the median and 99th percentile of a run's wait, from its creation
#                      to its first attempt's start
#   rss-5m-MiB         the server's resident memory at 5 minutes (the mean of
#                      its samples, one every 10 s, over the minute before)
#   rss-end-MiB        ... and at the end (over the last minute)
#   rss-end/5m         their ratio: memory must not grow with time
#   anon-5m-MiB, anon-end-MiB
#                      of it, what the process allocated (RssAnon): Go's and
#                      the C libraries' (DuckDB's, SQLite's) memory
#   go-heap-5m-MiB, go-heap-end-MiB
#                      of that, the Go heap in use (go_memstats_heap_inuse_bytes
#                      from the server's /metrics)
#   duckdb-5m-MiB, duckdb-end-MiB
#                      and the memory DuckDB counts in use
#                      (etl_craft_warehouse_duckdb_memory_bytes)
#   file-5m-MiB, file-end-MiB
#                      the files mapped in (RssFile): the executable's code and
#                      the SQLite Engine DB's pages (PRAGMA mmap_size), which
#                      are the operating system's cache of the file
#   loadavg            the machine's mean load average (1 minute) over the soak
# and logs the memory line, one sample a minute.
#
# Usage: bench/soak/run.sh [--duration 30m] [--kill-every 4m] [--pair sqlite+duckdb] [go test args]
# Durations are Go durations (90s, 30m, 1h, 1h30m); --kill-every 0 kills no
# server until the end, so that one process's memory is followed for the
# whole duration. The pairs are sqlite+duckdb (the default), sqlite+postgres
# and postgres+postgres; the last two need a PostgreSQL server named by
# ETL_CRAFT_TEST_PG (an administrator URL; scripts/test.sh starts one).
# ETL_CRAFT_CHAOS_SEED replays the kill times of a run that printed its seed.
set -euo pipefail
cd "$(dirname "$0")/../.."

duration=30m
kill_every=4m
pair=sqlite+duckdb
while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration=$2; shift 2 ;;
	--kill-every) kill_every=$2; shift 2 ;;
	--pair) pair=$2; shift 2 ;;
	*) break ;;
	esac
done
if [ "$pair" != sqlite+duckdb ]; then
	: "${ETL_CRAFT_TEST_PG:?set ETL_CRAFT_TEST_PG to a PostgreSQL administrator URL (scripts/test.sh starts a server)}"
fi
export ETL_CRAFT_SOAK_DURATION=$duration ETL_CRAFT_SOAK_KILL_EVERY=$kill_every ETL_CRAFT_SOAK_PAIR=$pair
go test ./internal/chaos -run '^$' -bench '^BenchmarkSoak$' -benchtime 1x -timeout 0 -v "$@" # it bounds its own waits
