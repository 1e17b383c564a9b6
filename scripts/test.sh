#!/usr/bin/env bash
# Runs every test of etl-craft against real SQLite, PostgreSQL and DuckDB.
#
# It starts a throwaway PostgreSQL server (initdb and pg_ctl in a temporary
# folder, on a free local port), installing Debian's postgresql package when
# the server binaries are missing, then runs gofmt, go vet and go test against
# it, and stops it. Extra arguments go to `go test` (default ./...).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }

find_pg_bindir() {
	local d
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
}

PGBIN=$(find_pg_bindir)
if [ -z "$PGBIN" ]; then
	log "PostgreSQL server binaries are missing: installing Debian's postgresql package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
	PGBIN=$(find_pg_bindir)
	[ -n "$PGBIN" ] || { log "could not find initdb after installing postgresql"; exit 1; }
fi
command -v sqlite3 >/dev/null 2>&1 || {
	log "installing the sqlite3 shell (the guard tests use it)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq sqlite3 >/dev/null
}

free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return; fi
	done
	log "no free port found"; exit 1
}

PGDATA_ROOT=$(mktemp -d /tmp/etl-craft-pg.XXXXXX)
PGDATA="$PGDATA_ROOT/data"
PGPORT=$(free_port)
PGPASSWORD_VALUE="etlcraft-test"

# initdb refuses to run as root: run the server as the postgres user.
AS=()
if [ "$(id -u)" = 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
	chown postgres "$PGDATA_ROOT"
	AS=(runuser -u postgres --)
fi

stop_pg() {
	"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$PGDATA_ROOT"
}
trap stop_pg EXIT

printf '%s\n' "$PGPASSWORD_VALUE" >"$PGDATA_ROOT/pwfile"
chmod 644 "$PGDATA_ROOT/pwfile"
"${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=scram-sha-256 \
	--pwfile="$PGDATA_ROOT/pwfile" -E UTF8 --locale=C.UTF-8 >"$PGDATA_ROOT/initdb.log" 2>&1 ||
	{ cat "$PGDATA_ROOT/initdb.log" >&2; exit 1; }
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA_ROOT/server.log" -w -t 60 \
	-o "-p $PGPORT -k $PGDATA_ROOT -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
	start >/dev/null || { cat "$PGDATA_ROOT/server.log" >&2; exit 1; }
log "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"

export ETL_CRAFT_TEST_PG="postgres://postgres:${PGPASSWORD_VALUE}@127.0.0.1:${PGPORT}/postgres?sslmode=disable"
export ETL_CRAFT_TEST_PG_BIN="$PGBIN"

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	log "gofmt would change:"; echo "$unformatted" >&2; exit 1
fi
log "go vet"
go vet ./...
log "go test"
if [ $# -eq 0 ]; then set -- ./...; fi
go test -timeout 25m "$@"
