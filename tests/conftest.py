"""One real local Spark session for the whole test run (starting one per test costs seconds)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_DATA = SHARED / "data"

sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def shared(rel: str) -> Path:
    """A file under ../shared/data; skips the test when shared data is not laid out beside the repo."""
    path = SHARED_DATA / rel
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


@pytest.fixture(scope="session")
def spark():
    from jobs.config import SparkConfig
    from jobs.spark import get_session

    session = get_session(SparkConfig(master="local[2]", app_name="corpusmill-tests", conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }))
    yield session
    session.stop()
