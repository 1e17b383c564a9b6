#!/usr/bin/env bash
# Installs the Airflow of scripts/airflow/requirements-VERSION.txt into a
# virtual environment of its own under the cache folder
# (${XDG_CACHE_HOME:-~/.cache}/etl-craft/airflow-VERSION-<hash>, keyed by the
# requirements file and the python3 on PATH), unless it is there already,
# and prints the folder; with --where it only prints the folder. The folder
# counts as installed once it holds .etl-craft-installed, written last; a
# folder without it (an install that was cut short) is made again. Two
# installs of one folder at once take turns.
#
#   scripts/airflow/install.sh 2.10.5
set -euo pipefail
cd "$(dirname "$0")"
where=false
if [ "${1:-}" = --where ]; then where=true; shift; fi
version=${1:?usage: install.sh [--where] AIRFLOW_VERSION}
req="requirements-$version.txt"
[ -f "$req" ] || { echo "install.sh: no $req (scripts/airflow/pin.sh $version writes it)" >&2; exit 2; }
key=$({ cat "$req"; python3 --version; } | sha256sum | cut -c1-12)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/etl-craft/airflow-$version-$key"
if $where; then echo "$dir"; exit 0; fi
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ ! -f "$dir/.etl-craft-installed" ]; then
	rm -rf "$dir"
	python3 -m venv "$dir"
	"$dir/bin/pip" install --quiet --no-deps --requirement "$req" >&2
	date -u +%FT%TZ >"$dir/.etl-craft-installed"
fi
echo "$dir"
