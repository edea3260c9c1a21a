"""Spark's Python daemon (``spark.python.daemon.module``), run from the pyspark installed here.

Spark puts its own copies of pyspark at the front of every Python worker's path: ``pyspark.zip``,
``py4j-*-src.zip`` and the spark-core jar. When those archives are files of the pyspark package
installed here (local mode from a pip install), they hold the very code installed beside them, but a
module imported from a zip is compiled from source in every daemon and worker (nothing is cached),
and each worker's first task re-reads the archives' directories (``importlib.invalidate_caches``:
1,485 entries in the zip, 5,973 in the jar, which holds no Python at all). This module takes those
archives off the path and runs ``pyspark.daemon``; any other path (a cluster's own Spark) is left
as it is.
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import List


def without_installed_copies(path: List[str]) -> List[str]:
    """``path`` less the archives (``.zip``, ``.jar``) that lie inside a pyspark package installed in
    one of its directories."""
    installed = [os.path.join(entry, "pyspark") + os.sep for entry in path
                 if entry and os.path.isfile(os.path.join(entry, "pyspark", "__init__.py"))]
    return [entry for entry in path
            if not (entry.endswith((".zip", ".jar")) and entry.startswith(tuple(installed)))]


if __name__ == "__main__":
    sys.path[:] = without_installed_copies(sys.path)
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
