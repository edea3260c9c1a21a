"""Build ``dist/corpusmill-jobs.zip``: the project's code (and conf/) to ship to a cluster's executors.

    python -m jobs.package            # → dist/corpusmill-jobs.zip
    spark-submit --master spark://host:7077 \
        --archives dist/corpusmill-jobs.zip#corpusmill-code \
        --conf spark.executorEnv.PYTHONPATH=corpusmill-code \
        jobs/cli.py run --input ... --output ... --run ...

Shipped with ``--archives``, Spark unpacks the zip into every executor's working directory, so the
executors import the same ``corpusmill``, ``jobs``, ``udfs``, ``scoring_service`` and ``loader`` as the
driver from real files, and data files found through ``__file__`` (the tokenizer vocabulary, conf/) are
there too; the driver runs the clone it is submitted from. The same zip also works as ``--py-files`` for code that reads no
data files beside itself (zipimport cannot open them). Third-party dependencies must already be on
the workers, or travel as a packed venv (docs/operations.md, "On a cluster"). The zip is reproducible: fixed
timestamps, sorted entries.
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
CONTENTS = ("corpusmill", "jobs", "udfs", "scoring_service", "loader", "conf")
DEFAULT_ZIP = ROOT / "dist" / "corpusmill-jobs.zip"
# Build leftovers that executors never read.
EXCLUDED_PARTS = {"__pycache__", ".pytest_cache"}
EXCLUDED_SUFFIXES = {".pyc", ".pyo", ".c"}  # .c: what Cython generated for the compiled modules
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def package_files(root: Path = ROOT) -> Iterator[Path]:
    for folder in CONTENTS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and not EXCLUDED_PARTS & set(path.parts) and path.suffix not in EXCLUDED_SUFFIXES:
                yield path


def build_zip(target: Path = DEFAULT_ZIP, root: Path = ROOT) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in package_files(root):
            info = zipfile.ZipInfo(str(path.relative_to(root)), date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    tmp.replace(target)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.package", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_ZIP, help=f"zip to write (default {DEFAULT_ZIP})")
    args = parser.parse_args(argv)
    target = build_zip(args.output)
    print(f"corpusmill: wrote {target} ({target.stat().st_size // 1024} KiB); "
          f"ship it with spark-submit --archives {target}#corpusmill-code "
          f"--conf spark.executorEnv.PYTHONPATH=corpusmill-code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
