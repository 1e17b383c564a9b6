#!/usr/bin/env bash
# Writes requirements-VERSION.txt: apache-airflow[celery,postgres,redis]==VERSION
# and every package it needs, pinned, as pip resolves them today for the
# python3 on PATH, held to constraints.txt (Airflow's own constraints files
# are out of reach here).
# Run it once per Airflow version the tests cover, and commit the file.
#
#   scripts/airflow/pin.sh 2.10.5
set -euo pipefail
cd "$(dirname "$0")"
version=${1:?usage: pin.sh AIRFLOW_VERSION}
venv=$(mktemp -d /tmp/etl-craft-airflow-pin.XXXXXX)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --constraint constraints.txt "apache-airflow[celery,postgres,redis]==$version"
{
	echo "# apache-airflow[celery,postgres,redis]==$version and everything it needs, for CPython $(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'),"
	echo "# as scripts/airflow/pin.sh wrote them (pip freeze of a fresh virtual environment, held to constraints.txt)."
	"$venv/bin/pip" freeze --exclude-editable | grep -v -E '^(pip|setuptools|wheel)=='
} >"requirements-$version.txt"
echo "wrote scripts/airflow/requirements-$version.txt"
