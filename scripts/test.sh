#!/usr/bin/env bash
# Runs every test of etl-craft against real SQLite, PostgreSQL and DuckDB.
#
# It starts a throwaway PostgreSQL server (initdb and pg_ctl in a temporary
# folder, on a free local port), installing Debian's postgresql package when
# the server binaries are missing, then runs gofmt, go vet and go test against
# it, and stops it. Extra arguments go to `go test` (default -race ./...: every
# test under the race detector).
#
# Real Apache Airflow, for the tests of internal/airflow: each version of
# scripts/airflow/requirements-*.txt is installed (scripts/airflow/install.sh)
# into a virtual environment of its own under the cache folder, once, in the
# background while the other tests run; ETL_CRAFT_AIRFLOW names the folders
# and the Airflow tests wait for them (set beforehand, it names installs made
# elsewhere, and nothing is installed). Debian's redis-server is the Celery
# executor's broker there.
#
# The server also takes SSL, with a certificate from a throwaway CA made at
# start-up; role etl_craft_cert logs in over SSL with a client certificate
# that CA signs (the key_file tests make one), every other login with a
# scram password.
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

# Debian packages the tests need, installed in one apt-get call when missing.
missing=()
need() { # need PACKAGE WHY CHECK...
	local pkg=$1 why=$2
	shift 2
	"$@" >/dev/null 2>&1 || { log "installing Debian's $pkg ($why)"; missing+=("$pkg"); }
}
PGBIN=$(find_pg_bindir)
[ -n "$PGBIN" ] || need postgresql "the throwaway test server" false
need openssl "the test server's certificates" command -v openssl
need sqlite3 "the guard tests use its shell" command -v sqlite3
need chromium "the catalog site's browser tests" command -v chromium
# Scripts run with Debian's /usr/bin/python3, where its python3-* packages
# install (a PATH may hold another python3 first).
need python3 "ingestion scripts" test -x /usr/bin/python3
need python3-sqlalchemy "the reference's scripts import its text()" /usr/bin/python3 -c 'import sqlalchemy'
need python3-venv "the Airflow tests' virtual environments" python3 -c 'import ensurepip'
need redis-server "the Celery executor's broker in the Airflow tests" command -v redis-server
need npm "installs Redocly CLI, which lints the served OpenAPI document" command -v npm
need prometheus "a real Prometheus scrapes the server; promtool checks a scrape and the alert rules" sh -c 'command -v prometheus && command -v promtool'
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ -z "$PGBIN" ]; then
	PGBIN=$(find_pg_bindir)
	[ -n "$PGBIN" ] || { log "could not find initdb after installing postgresql"; exit 1; }
fi

# Redocly CLI, pinned by scripts/openapi-lint/package-lock.json, installed
# with npm ci into a cache folder of its own (one per lock file), once; the
# API's lint test runs it (ETL_CRAFT_REDOCLY) and fails under CI without it.
LINT_DIR=scripts/openapi-lint
LINT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/etl-craft/openapi-lint-$(sha256sum "$LINT_DIR/package-lock.json" | cut -c1-12)"
if [ ! -x "$LINT_CACHE/node_modules/.bin/redocly" ]; then
	log "installing Redocly CLI ($LINT_DIR) into $LINT_CACHE"
	rm -rf "$LINT_CACHE.new" && mkdir -p "$LINT_CACHE.new"
	cp "$LINT_DIR/package.json" "$LINT_DIR/package-lock.json" "$LINT_CACHE.new/"
	if (cd "$LINT_CACHE.new" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
		rm -rf "$LINT_CACHE" && mv "$LINT_CACHE.new" "$LINT_CACHE"
	else
		log "could not install Redocly CLI: the OpenAPI lint test skips (and fails under CI)"
	fi
fi
[ -x "$LINT_CACHE/node_modules/.bin/redocly" ] && export ETL_CRAFT_REDOCLY="$LINT_CACHE/node_modules/.bin/redocly"

# Each Airflow version, installed in the background when missing and the
# tests to run may include internal/airflow (no arguments, a pattern
# ending in ..., or a path naming it): a failed install leaves <folder>.failed naming its log, which
# the tests print.
# ETL_CRAFT_AIRFLOW set beforehand (folders holding an install, such as
# one made by install.sh elsewhere) is used as it is, and nothing is installed.
airflow_tested=false
[ $# -eq 0 ] && airflow_tested=true
for arg in "$@"; do
	case "$arg" in *... | *airflow*) airflow_tested=true ;; esac
done
AIRFLOW_DIRS=()
[ -n "${ETL_CRAFT_AIRFLOW:-}" ] && IFS=: read -r -a AIRFLOW_DIRS <<<"$ETL_CRAFT_AIRFLOW"
for req in scripts/airflow/requirements-*.txt; do
	[ -n "${ETL_CRAFT_AIRFLOW:-}" ] && break
	version=${req#scripts/airflow/requirements-}
	version=${version%.txt}
	dir=$(scripts/airflow/install.sh --where "$version")
	AIRFLOW_DIRS+=("$dir")
	if $airflow_tested && [ ! -f "$dir/.etl-craft-installed" ]; then
		log "installing Airflow $version into $dir in the background (log: $dir.log)"
		mkdir -p "$(dirname "$dir")" && rm -f "$dir.failed"
		(scripts/airflow/install.sh "$version" >"$dir.log" 2>&1 || echo "installing Airflow $version failed: see $dir.log" >"$dir.failed") &
	fi
done
ETL_CRAFT_AIRFLOW=$(IFS=:; echo "${AIRFLOW_DIRS[*]}")
export ETL_CRAFT_AIRFLOW

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

# SSL: a throwaway CA, and a server certificate it signs for 127.0.0.1 and
# localhost. The CA checks the client certificates of cert logins.
SSLDIR="$PGDATA_ROOT/ssl"
mkdir "$SSLDIR"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=etl-craft test CA" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
	-keyout "$SSLDIR/ca.key" -out "$SSLDIR/ca.crt" >"$SSLDIR/openssl.log" 2>&1 &&
	openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
		-keyout "$SSLDIR/server.key" -out "$SSLDIR/server.csr" >>"$SSLDIR/openssl.log" 2>&1 &&
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$SSLDIR/server.ext" &&
	openssl x509 -req -in "$SSLDIR/server.csr" -CA "$SSLDIR/ca.crt" -CAkey "$SSLDIR/ca.key" -CAcreateserial \
		-days 2 -extfile "$SSLDIR/server.ext" -out "$SSLDIR/server.crt" >>"$SSLDIR/openssl.log" 2>&1 ||
	{ cat "$SSLDIR/openssl.log" >&2; exit 1; }
chmod 600 "$SSLDIR/ca.key" "$SSLDIR/server.key"
[ ${#AS[@]} -eq 0 ] || chown postgres "$SSLDIR/server.key"
# Cert logins for etl_craft_cert come first; every other rule stays.
{ printf 'hostssl all etl_craft_cert 127.0.0.1/32 cert\n'; cat "$PGDATA/pg_hba.conf"; } >"$PGDATA_ROOT/pg_hba.conf"
cat "$PGDATA_ROOT/pg_hba.conf" >"$PGDATA/pg_hba.conf"

"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA_ROOT/server.log" -w -t 60 \
	-o "-p $PGPORT -k $PGDATA_ROOT -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c ssl=on -c ssl_cert_file=$SSLDIR/server.crt -c ssl_key_file=$SSLDIR/server.key -c ssl_ca_file=$SSLDIR/ca.crt" \
	start >/dev/null || { cat "$PGDATA_ROOT/server.log" >&2; exit 1; }
log "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"

export ETL_CRAFT_TEST_PG="postgres://postgres:${PGPASSWORD_VALUE}@127.0.0.1:${PGPORT}/postgres?sslmode=disable"
export ETL_CRAFT_TEST_PG_BIN="$PGBIN"
# The CA that signs the server's certificate and checks client certificates,
# and its key, to sign one.
export ETL_CRAFT_TEST_PG_CA="$SSLDIR/ca.crt"
export ETL_CRAFT_TEST_PG_CA_KEY="$SSLDIR/ca.key"

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	log "gofmt would change:"; echo "$unformatted" >&2; exit 1
fi
log "go vet"
go vet ./...
log "go test"
if [ $# -eq 0 ]; then set -- -race ./...; fi
go test -timeout 25m "$@"
