#!/usr/bin/env bash
# The test suite (real local Spark, real MindSpore, real files): ./scripts/test.sh [pytest options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
exec python -m pytest -q "$@" tests
