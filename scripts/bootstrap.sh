#!/usr/bin/env bash
# Set up (or reuse) the Python environment corpusmill runs in; sourced by demo.sh and test.sh.
# The venv lives outside the clone (mindspore alone is ~800 MB) and is reused while setup.py is unchanged.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CORPUSMILL_VENV:-$HOME/.cache/corpusmill/venv}"
PYTHON="${PYTHON:-python3}"

die() { echo "corpusmill setup: $*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null || die "python3 not found; install Python 3.9-3.11"
"$PYTHON" -c 'import sys; sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 11) else 1)' \
  || die "Python 3.9-3.11 needed (mindspore has no wheel for $("$PYTHON" -V 2>&1))"
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null; then
  die "no Java runtime found; install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
fi

STAMP_KEY="$(cat "$ROOT/setup.py" | sha256sum | cut -c1-16)-$(echo "$ROOT" | sha256sum | cut -c1-8)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "corpusmill setup: creating $VENV (first run downloads ~1 GB of wheels)"
  "$PYTHON" -m venv "$VENV"
fi
if [ "$(cat "$VENV/.corpusmill-stamp" 2>/dev/null)" != "$STAMP_KEY" ]; then
  echo "corpusmill setup: installing corpusmill and its dependencies into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "$ROOT[dev]"
  echo "$STAMP_KEY" > "$VENV/.corpusmill-stamp"
fi
export PATH="$VENV/bin:$PATH"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
