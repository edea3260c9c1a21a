"""Spark work in a second thread: the dedup stage overlaps queries and writes that, each alone, leave
cores idle between their jobs."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator

from pyspark import inheritable_thread_target


@contextmanager
def beside(spark, work: Callable, *args) -> Iterator[Future]:
    """``work(*args)`` in a second thread while the ``with`` block runs, its Spark jobs in the caller's
    job group (``inheritable_thread_target``); leaving the block waits for it, also when the block raises."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(inheritable_thread_target(spark)(work), *args)
