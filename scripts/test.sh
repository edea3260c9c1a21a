#!/usr/bin/env bash
# The test suite (real local Spark, real MindSpore, real files): ./scripts/test.sh [--fast] [pytest options]
#   --fast  only the pure tests on plain Python values (no Spark, no other processes, nothing slow): ~1 min
# Without it everything runs (~17 min on 2 idle cores). Other options go to pytest, e.g. tests/test_pii.py or -k luhn.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
if [ "${1:-}" = "--fast" ]; then
  shift
  set -- -m "not spark and not service and not slow" "$@"
fi
exec python -m pytest -q "$@"
