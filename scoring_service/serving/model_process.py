"""A model replica in a child process of its own: what ``serve --workers N`` runs N of.

The HTTP front (one process: the event loop, the limits, the metrics, the micro-batcher) hands each
batch of encoded texts (``features.Bags``) to one replica over a pipe and gets the scores back; the
replica only runs ``TextScorer.score_bags``. Processes, not threads: a MindSpore graph executes one
forward pass at a time, and a process can own a device of its own (``device_id``). They are
spawned, not forked: MindSpore is not fork-safe and the front already runs threads. A replica
exits when its pipe closes, so it never outlives the front, even when the front is killed.
"""
from __future__ import annotations

import multiprocessing
import traceback
from typing import Optional

import numpy as np

from scoring_service.model.features import Bags


class ReplicaGone(RuntimeError):
    """The replica's process died: its batching thread stops and the other replicas take over."""


def _replica_main(conn, model_dir: str, backend: str, device: str, device_id: int, cpu_threads: int) -> None:
    try:
        from scoring_service.model.scorer import TextScorer

        scorer = TextScorer.load(model_dir, backend, device, device_id, cpu_threads=cpu_threads)
        scorer.score(["warm-up text.", "a\nb"])  # compile the graph before declaring readiness
        conn.send(("ready", getattr(scorer.backend, "loaded_from", None)))
    except Exception:  # noqa: BLE001 — the front reports it and refuses to start
        conn.send(("failed", traceback.format_exc()))
        return
    while True:
        try:
            parts = conn.recv()
        except (EOFError, OSError):  # the front is gone
            return
        try:
            conn.send(("scores", scorer.score_bags(Bags(*parts))))
        except Exception as exc:  # noqa: BLE001 — reported to the requests of this batch
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ModelProcess:
    """One replica: ``score_bags`` sends a batch and waits for its scores (one batch at a time)."""

    def __init__(self, model_dir: str, backend: str, device: str, device_id: int, cpu_threads: int):
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self.name = f"model-{device}-{device_id}"
        self.process = context.Process(target=_replica_main, name=self.name, daemon=True,
                                       args=(child, model_dir, backend, device, device_id, cpu_threads))
        self.process.start()
        child.close()
        self.loaded_from: Optional[str] = None

    def wait_ready(self, timeout_s: float) -> None:
        if not self._conn.poll(timeout_s):
            self.close()
            raise RuntimeError(f"{self.name}: the model did not load within {timeout_s:.0f} s")
        try:
            kind, detail = self._conn.recv()
        except EOFError:
            kind, detail = "failed", f"the process exited with code {self.process.exitcode}"
        if kind != "ready":
            self.close()
            raise RuntimeError(f"{self.name}: the model failed to load: {detail}")
        self.loaded_from = detail

    def score_bags(self, bags: Bags) -> np.ndarray:
        try:
            self._conn.send(tuple(bags))
            kind, result = self._conn.recv()
        except (EOFError, OSError) as exc:
            raise ReplicaGone(f"{self.name} is gone (exit code {self.process.exitcode}): {exc}") from None
        if kind != "scores":
            raise RuntimeError(f"{self.name}: {result}")
        return result

    def close(self, timeout_s: float = 5.0) -> None:
        self._conn.close()  # the replica sees EOF and exits
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
