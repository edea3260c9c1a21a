"""What a Python worker makes once and keeps for every batch of every task it runs.

Spark reuses a Python worker for task after task, so what per-record code needs that is costly to
make (a tokenizer, a PII scrubber, a scoring client or model, a language-ID or n-gram model, an index
mapped from disk) is made on the worker's first batch and kept, keyed by what it depends on. Every
stage's per-record code takes such things from here instead of keeping a cache of its own: one place
holds them, one lock per thing made, and one ``release`` that closes what has a ``close()`` (a
client's connections) and drops the rest: at the exit of a process that ends normally, or when a
long-lived driver (a notebook) wants them made again from changed files.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any, Callable, Dict, Hashable, Tuple, TypeVar

T = TypeVar("T")

_held: Dict[Tuple[str, Hashable], Any] = {}
_making: Dict[Tuple[str, Hashable], threading.Lock] = {}
_lock = threading.Lock()


def worker_resource(kind: str, key: Hashable, make: Callable[[], T]) -> T:
    """The ``kind`` thing for ``key``, made by ``make()`` the first time this process asks. Two
    threads that ask for the same thing at once (a background build in the driver and the caller
    that needs it) make it once; a failed make is tried again by the next caller."""
    slot = (kind, key)
    held = _held.get(slot)
    if held is not None:
        return held
    with _lock:
        making = _making.setdefault(slot, threading.Lock())
    with making:
        if slot not in _held:
            _held[slot] = make()
        return _held[slot]


def release() -> None:
    """Close and drop every held thing; the next caller makes it again."""
    with _lock:
        dropped = list(_held.values())
        _held.clear()
        _making.clear()
    for thing in dropped:
        close = getattr(thing, "close", None)
        if callable(close):
            close()


atexit.register(release)
