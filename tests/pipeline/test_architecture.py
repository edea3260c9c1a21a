"""Layers point one way, the import graph of the shipped packages has no cycle, and the code runs
on every Python version the project claims.

Imports are read from the source (every ``import`` statement, also those inside functions), then
checked by importing every module for real.
"""
import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

from conftest import ROOT

PACKAGES = ("corpusmill", "jobs", "udfs", "scoring_service", "loader", "tools", "bench")
# Package -> the project packages it may import. corpusmill (config, storage, the run folder) is the
# kernel every other package builds on and imports none of them. The scoring service stands alone (its
# client is what udfs/score/scoring.py calls); udfs and loader build on it at most; jobs builds on all
# of them; tools (offline model building, the fixtures tests and benchmarks share) and bench are never
# shipped: they may use the runtime code, nothing shipped imports them, and tools never imports bench.
ALLOWED = {
    "corpusmill": {"corpusmill"},
    "scoring_service": {"corpusmill", "scoring_service"},
    "udfs": {"corpusmill", "udfs", "scoring_service"},
    "loader": {"corpusmill", "loader", "udfs"},
    "jobs": {"corpusmill", "jobs", "udfs", "scoring_service", "loader"},
    "tools": {"corpusmill", "tools", "udfs", "scoring_service"},
    "bench": {"corpusmill", "jobs", "udfs", "scoring_service", "loader", "tools", "bench"},
}
LEAVES = ("corpusmill.config", "corpusmill.run_folder")  # import nothing of the project
# Within the scoring service: the model is what training, serving and the client share, and it
# imports none of them; training, serving and the client do not import one another.
SCORING_SERVICE_PARTS = {
    "scoring_service.model": {"scoring_service.model"},
    "scoring_service.training": {"scoring_service.model", "scoring_service.training"},
    "scoring_service.serving": {"scoring_service.model", "scoring_service.serving"},
    "scoring_service.client": {"scoring_service.model"},
}


def module_names() -> Dict[str, Path]:
    names = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = module_names()


def project_imports(path: Path) -> Set[str]:
    """The project modules a file imports anywhere in it (a package's name when no module matches)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in PACKAGES:
                while target not in MODULES and "." in target:
                    target = target.rsplit(".", 1)[0]
                found.add(target)
    return found


GRAPH = {name: project_imports(path) - {name} for name, path in MODULES.items()}


def test_every_package_is_read():
    assert {"jobs.stage", "corpusmill.config", "scoring_service.serving", "loader.dataset", "tools"} <= set(MODULES)


@pytest.mark.parametrize("package", PACKAGES)
def test_layers_point_one_way(package):
    wrong = {f"{module} imports {target}" for module, targets in GRAPH.items() if module.split(".")[0] == package
             for target in targets if target.split(".")[0] not in ALLOWED[package]}
    assert not wrong


@pytest.mark.parametrize("part", sorted(SCORING_SERVICE_PARTS))
def test_scoring_service_parts_point_one_way(part):
    wrong = {f"{module} imports {target}" for module, targets in GRAPH.items()
             if module == part or module.startswith(part + ".")
             for target in targets if target.startswith("scoring_service.")
             and ".".join(target.split(".")[:2]) not in SCORING_SERVICE_PARTS[part]}
    assert not wrong


@pytest.mark.parametrize("leaf", LEAVES)
def test_leaves_import_nothing_of_the_project(leaf):
    assert GRAPH[leaf] == set()


def test_the_kernel_imports_no_engine():
    """corpusmill serves the loader and the scoring service too, which run without Spark or MindSpore."""
    engines = ("pyspark", "mindspore", "py4j")
    found = {f"{module} imports {alias.name if isinstance(node, ast.Import) else node.module}"
             for module, path in MODULES.items() if module.split(".")[0] == "corpusmill"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, (ast.Import, ast.ImportFrom))
             for alias in node.names
             if (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0] in engines}
    assert not found


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_graph_has_no_cycle():
    # A package imports its modules in __init__ (loader does): that edge is not a cycle of modules.
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in GRAPH.items()}
    assert cycles(graph) == []


# Runs in the benchmarks' own venv, beside the competitor it measures (datatrove), never in the project's.
BENCH_VENV_ONLY = {"bench.quality.dedup_datatrove"}


@pytest.mark.parametrize("module", sorted(set(MODULES) - BENCH_VENV_ONLY))
def test_every_module_imports(module):
    importlib.import_module(module)


# ---------------------------------------------------------------- supported Python versions

def test_readme_setup_and_bootstrap_claim_the_same_python_versions():
    readme = re.search(r"Python (3\.\d+)–(3\.\d+)", (ROOT / "README.md").read_text()).groups()
    setup = re.search(r'python_requires=">=(3\.\d+),<3\.(\d+)"', (ROOT / "setup.py").read_text()).groups()
    bootstrap = re.search(r"\(3, (\d+)\) <= sys\.version_info\[:2\] <= \(3, (\d+)\)",
                          (ROOT / "scripts" / "bootstrap.sh").read_text()).groups()
    assert readme == (setup[0], f"3.{int(setup[1]) - 1}") == tuple(f"3.{v}" for v in bootstrap)


@pytest.mark.service  # runs vermin
def test_the_code_needs_nothing_newer_than_the_oldest_python_claimed():
    """vermin reads every shipped module (annotations too) for syntax and library use by version."""
    oldest = re.search(r'python_requires=">=(3\.\d+)', (ROOT / "setup.py").read_text()).group(1)
    vermin = Path(sys.executable).with_name("vermin")
    result = subprocess.run([str(vermin), "--no-tips", "--violations", "--eval-annotations", f"-t={oldest}-",
                             *PACKAGES], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.service  # a fresh interpreter
def test_loading_the_config_and_the_cli_imports_no_engine():
    """The config is built from the stages' declarations, so reading it imports the stage modules and
    with them PySpark's Python API, but `corpusmill --help` or a bad config is answered without a JVM,
    MindSpore or pandas (which the stages import where they run)."""
    probe = ("import sys, jobs.cli, jobs.config; jobs.config.load(); "
             "from pyspark import SparkContext; assert SparkContext._active_spark_context is None; "
             "print(sorted(m for m in ('mindspore', 'pandas', 'tools') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
