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

# The install is redone when what it builds changes: setup.py, and the compiled signals' source and
# build requirements (an editable install does not recompile them by itself).
compiled_sources() { find "$ROOT"/corpusmill "$ROOT"/jobs "$ROOT"/udfs "$ROOT"/scoring_service "$ROOT"/loader \
  \( -name '*.pyx' -o -name '*.pxd' \) 2>/dev/null | sort; }
STAMP_KEY="$(cat "$ROOT/setup.py" "$ROOT/pyproject.toml" $(compiled_sources) | sha256sum | cut -c1-16)-$(echo "$ROOT" | sha256sum | cut -c1-8)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "corpusmill setup: creating $VENV (first run downloads ~1 GB of wheels)"
  "$PYTHON" -m venv "$VENV"
fi
# A fresh clone at the path of an earlier one has the same stamp but none of the compiled modules.
built() { for source in $(compiled_sources | grep '\.pyx$'); do compgen -G "${source%.pyx}.*.so" >/dev/null || return 1; done; }
if [ "$(cat "$VENV/.corpusmill-stamp" 2>/dev/null)" != "$STAMP_KEY" ] || ! built; then
  # pip compiles the quality signals (Cython → C): it needs a C compiler and the Python headers.
  command -v "${CC:-cc}" >/dev/null || command -v gcc >/dev/null \
    || die "no C compiler found; install one (e.g. apt-get install gcc) to build corpusmill's compiled signals"
  "$VENV/bin/python" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || die "Python headers (Python.h) not found; install them (e.g. apt-get install python3-dev)"
  echo "corpusmill setup: installing corpusmill and its dependencies into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "$ROOT[dev]"
  echo "$STAMP_KEY" > "$VENV/.corpusmill-stamp"
fi
export PATH="$VENV/bin:$PATH"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
# The JVM's class archive, written once here (every stage on the bundled sample, ~1 min), so that the
# first run already maps it; a no-op once it exists.
"$VENV/bin/python" -m jobs.cli warm-up >/dev/null \
  || echo "corpusmill setup: the JVM's class archive was not written; runs start without it" >&2
