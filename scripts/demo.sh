#!/usr/bin/env bash
# The whole pipeline on the bundled sample WARCs with local Spark: ./scripts/demo.sh [extra corpusmill run options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
exec corpusmill run --input data/sample --output out --run demo "$@"
