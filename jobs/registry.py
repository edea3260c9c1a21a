"""Every stage, found from its own declaration: the modules of ``jobs/stages/`` and any stage a
caller registers (a notebook's or a plug-in's own stage), in pipeline order.

A stage is found by importing each module of ``jobs.stages`` (a stage in parts is a package: its
``__init__``) and taking the ``Stage`` subclasses defined there; nothing else in the package lists the
stages, so adding one is adding its module (with its udfs package and its YAML). The Airflow DAG reads
the order from the stage modules' source, since the scheduler parses it without corpusmill installed;
``tests/pipeline/test_airflow_dag.py`` checks that it finds this order.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Type

from corpusmill.config import ConfigError
from jobs.stage import Stage

_registered: Dict[str, Type[Stage]] = {}
_found: Dict[str, Type[Stage]] = {}


def _discover() -> Dict[str, Type[Stage]]:
    if not _found:
        # Kept only once every module imported and declared itself: a failed import is raised again
        # by the next call, never answered with the stages found before it.
        found = {}
        package = importlib.import_module("jobs.stages")
        for info in pkgutil.iter_modules(package.__path__, "jobs.stages."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, type) and issubclass(value, Stage) and value.__module__ == module.__name__:
                    found[check_declaration(value).name] = value
        _found.update(found)
    return _found


def check_declaration(cls: Type[Stage]) -> Type[Stage]:
    """``cls`` if it declares what the pipeline needs; else a TypeError naming what is missing."""
    missing = [attr for attr in ("name", "config", "order") if not getattr(cls, attr)]
    if missing:
        raise TypeError(f"stage class {cls.__module__}.{cls.__qualname__} does not declare {', '.join(missing)}")
    if cls.input not in ("files", "documents"):
        raise TypeError(f"stage {cls.name}: input must be 'files' or 'documents', not {cls.input!r}")
    if cls.counts_its_input and (cls.chunked or cls.has_chunk_step):
        raise TypeError(f"stage {cls.name}: a chunked stage's input is counted chunk by chunk, not by its transform")
    return cls


def stages() -> List[Type[Stage]]:
    """Every stage class, in pipeline order."""
    found = {**_discover(), **_registered}
    order = sorted(found.values(), key=lambda cls: cls.order)
    for before, after in zip(order, order[1:]):
        if before.order == after.order:
            raise TypeError(f"stages {before.name} and {after.name} declare the same order {before.order}")
    return order


def stage_order() -> List[str]:
    return [cls.name for cls in stages()]


def stage_class(name: str) -> Type[Stage]:
    by_name = {cls.name: cls for cls in stages()}
    if name not in by_name:
        raise ConfigError(f"--stages: unknown stage {name!r} (stages: {', '.join(by_name)})")
    return by_name[name]


def register(cls: Type[Stage]) -> Type[Stage]:
    """Add a stage defined outside ``jobs/stages/`` (usable as a class decorator)."""
    _registered[check_declaration(cls).name] = cls
    return cls


def unregister(name: str) -> None:
    _registered.pop(name, None)
