"""Dynamic micro-batching and the service's admission limits. Requests from concurrent connections
are queued as jobs and merged into forward passes of up to ``max_batch`` texts or a pass's content
ids (or whatever arrived within ``max_wait_ms`` of the first), one batching thread per model replica
over one shared queue;
``ByteBudget`` bounds the body bytes of the requests in hand. Past either limit a request is answered
429 at once rather than queued without bound.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, List, Optional, Sequence

from scoring_service.model.features import Bags
from scoring_service.model.scorer import MAX_BATCH_IDS
from scoring_service.serving.config import ServerConfig
from scoring_service.serving.errors import RequestError
from scoring_service.serving.metrics import Metrics
from scoring_service.serving.model_process import ReplicaGone


class _Job:
    __slots__ = ("bags", "done", "scores", "error", "notify")

    def __init__(self, bags: Bags, notify: Optional[Callable[[], None]]):
        self.bags, self.done, self.scores, self.error = bags, threading.Event(), None, None
        self.notify = notify


class MicroBatcher:
    """Requests from many connections merged into batches; one batching thread per model replica.

    Every thread takes jobs from the one queue, so the limits and the batch sizes are those of the
    whole service, and with N replicas N batches are scored at once. A thread whose replica died
    stops; the others go on, and the service is not ready once none is left.
    """

    def __init__(self, replicas: Sequence, config: ServerConfig, metrics: Metrics):
        self.config, self.metrics = config, metrics
        self._jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        self._pending = 0
        metrics.queue_texts.set_function(lambda: self._pending)
        self._stopped = False
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(replica, str(i)), name=f"micro-batcher-{i}",
                                          daemon=True) for i, replica in enumerate(replicas)]
        for thread in self._threads:
            thread.start()

    @property
    def pending(self) -> int:
        return self._pending

    @property
    def alive(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def submit(self, bags: Bags, notify: Optional[Callable[[], None]] = None) -> _Job:
        """Queue encoded texts; ``notify`` (if given) is called from a batching thread once they are scored."""
        with self._lock:
            if self._stopped:
                raise RequestError(503, "shutting down", {"Retry-After": "1"})
            if not self.alive:
                raise RequestError(503, "the batching thread is not running", {"Retry-After": "1"})
            if self._pending + bags.rows > self.config.max_queue_texts:
                self.metrics.rejected_overload.inc()
                raise RequestError(429, f"server busy: {self._pending} texts queued "
                                        f"(limit {self.config.max_queue_texts}); retry later",
                                   {"Retry-After": "1"})
            self._pending += bags.rows
            job = _Job(bags, notify)
            self._jobs.put(job)  # under the lock: never behind the stop signal
        return job

    def _collect(self, first: _Job) -> List[_Job]:
        # A batch whose content ids fill a forward pass waits for no company: more texts would only go
        # to a pass of their own.
        jobs, size, ids = [first], first.bags.rows, len(first.bags.content)
        deadline = time.monotonic() + self.config.max_wait_ms / 1000.0
        while size < self.config.max_batch and ids < MAX_BATCH_IDS:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                job = self._jobs.get(timeout=remaining)
            except queue.Empty:
                break
            if job is None:  # stop signal: finish this batch, then exit
                self._jobs.put(None)
                break
            jobs.append(job)
            size += job.bags.rows
            ids += len(job.bags.content)
        return jobs

    def _run(self, replica, name: str) -> None:
        while True:
            first = self._jobs.get()
            if first is None:
                self._jobs.put(None)  # for the other threads
                return
            jobs = self._collect(first)
            rows = sum(job.bags.rows for job in jobs)
            started = time.perf_counter()
            gone = False
            try:
                scores = replica.score_bags(Bags.concat([job.bags for job in jobs]))
            except Exception as exc:  # noqa: BLE001 — reported to every waiting request
                self.metrics.errors.labels("inference").inc()
                gone = isinstance(exc, ReplicaGone)
                for job in jobs:
                    job.error = exc
            else:
                offset = 0
                for job in jobs:
                    job.scores = scores[offset: offset + job.bags.rows]
                    offset += job.bags.rows
            self.metrics.batch_size.observe(rows)
            self.metrics.replica_batches.labels(name).inc()
            self.metrics.inference_seconds.observe(time.perf_counter() - started)
            with self._lock:
                self._pending -= rows
            for job in jobs:
                job.done.set()
                if job.notify is not None:
                    job.notify()
            if gone:
                return

    def stop(self, timeout: float) -> None:
        """Score everything already queued, then stop the threads."""
        with self._lock:
            self._stopped = True
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class ByteBudget:
    """Body bytes of the requests in the service: being read, decoded, queued or scored.

    A request reserves its ``Content-Length`` before its body is read and gives it back with its
    answer; past ``max_queue_bytes`` it is answered 429, so a few requests of large texts cannot hold
    gigabytes when the text count is far from its limit. Used from the event loop only.
    """

    def __init__(self, limit: int, metrics: Metrics):
        self.limit, self.held, self.metrics = limit, 0, metrics
        metrics.queue_bytes.set_function(lambda: self.held)

    def reserve(self, size: int) -> None:
        if self.held + size > self.limit:
            self.metrics.rejected_overload.inc()
            raise RequestError(429, f"server busy: {self.held} bytes of requests in hand "
                                    f"(limit {self.limit}); retry later", {"Retry-After": "1"})
        self.held += size

    def release(self, size: int) -> None:
        self.held -= size
