"""One real local Spark session for the whole test run (starting one per test costs seconds), the
shared data beside the repository, and the markers that pick the fast subset (see pytest.ini).

Test modules import this file as ``conftest`` (``from conftest import shared``), never as
``tests.conftest``: pytest has already loaded it under that name, and a second name would load it twice.
"""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Under CI missing shared data is a broken checkout, not an optional extra: the tests that need it fail.
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")

sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from tools.fixtures import shared_data  # noqa: E402  (ROOT is on the path from here)
from tools.fixtures.shared_data import SHARED_DATA, shared  # noqa: E402,F401  (tests import them from here)


def skip_or_fail(message: str) -> NoReturn:
    """A file under ../shared/data is missing: the test skips (fails under CI)."""
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


shared_data.when_missing = skip_or_fail


def pytest_runtest_setup(item):
    """``@pytest.mark.shared_data(rel)``: for parameters built from shared data at collection time."""
    for mark in item.iter_markers("shared_data"):
        shared(*mark.args)


def dag_stage_order(clone: Path) -> list:
    """The stage order the Airflow DAG of ``clone`` reads from its stage modules: the DAG file's
    ``declared_stage_order``, run on its own (the DAG file imports Airflow, the function does not)."""
    tree = ast.parse((clone / "dags" / "corpusmill_dag.py").read_text(encoding="utf-8"))
    [function] = [node for node in tree.body if isinstance(node, ast.FunctionDef)
                  and node.name == "declared_stage_order"]
    namespace = {"os": os, "ast": ast}
    exec(compile(ast.Module([function], type_ignores=[]), "corpusmill_dag.py", "exec"), namespace)
    return namespace["declared_stage_order"](str(clone))


def pytest_collection_modifyitems(items):
    """``spark`` on every test that uses the session, directly or through another fixture."""
    for item in items:
        if "spark" in item.fixturenames:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    from jobs.config import SparkConfig
    from jobs.spark import get_session

    session = get_session(SparkConfig(master="local[2]", app_name="corpusmill-tests", conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        "spark.python.daemon.module": "jobs.python_daemon",
    }))
    yield session
    session.stop()
