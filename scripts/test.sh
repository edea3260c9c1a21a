#!/usr/bin/env bash
# The test suite (real local Spark, real MindSpore, real WARC files): ./scripts/test.sh [--fast] [pytest options]
#   --fast  only the pure tests on plain Python values (no Spark, no other processes, nothing slow): ~1 min
# Without it everything runs (~17 min on 2 idle cores). Other options go to pytest, e.g. tests/pii/test_pii.py or -k luhn.
# Optional parts that are missing make their tests skip; one line each says which and why, before the run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
  set -- -m "not spark and not service and not slow" "$@"
fi
skipping() { echo "test.sh: skipping $1" >&2; }
if [ ! -d "$ROOT/../shared/data" ]; then
  if [ -n "${CI:-}" ] && [ "${CI:-}" != "0" ] && [ "${CI:-}" != "false" ]; then
    echo "test.sh: ../shared/data is missing; under CI the tests that need it fail" >&2
  else
    skipping "the tests on real corpora, WARCs and PII vectors: no shared data at $(cd "$ROOT/.." && pwd)/shared/data"
  fi
fi
if [ "$FAST" = 0 ]; then
  AIRFLOW_VENV="${CORPUSMILL_AIRFLOW_VENV:-$HOME/.cache/corpusmill/airflow-venv}"
  [ -x "$AIRFLOW_VENV/bin/airflow" ] \
    || skipping "the Airflow DAG tests: no Airflow at $AIRFLOW_VENV (set CORPUSMILL_AIRFLOW_VENV; see tests/pipeline/test_airflow_dag.py)"
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null \
    || skipping "the report's screenshot test: no chromium on PATH (apt-get install -y chromium)"
fi
exec python -m pytest -q "$@"
