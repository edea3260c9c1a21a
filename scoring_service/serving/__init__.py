"""The scoring sidecar: an HTTP batch-inference server around ``TextScorer``.

    python -m scoring_service serve --model scoring_service/models/default --port 8808

Endpoints
    POST /v1/score   texts in, scores out (hashed here, one request at a time). Body either JSON
                     ``{"texts": [...]}`` (answer JSON ``{"scores": [...], "model": ..., "version": ...}``)
                     or an uncompressed Arrow IPC stream with a string column ``text``
                     (``Content-Type: application/vnd.apache.arrow.stream``; answer: an Arrow stream
                     with a float32 column ``score``, model name and version in the schema metadata
                     and the ``X-Model-Name``/``X-Model-Version`` headers).
    POST /v1/score/encoded   texts the client has hashed itself (``FeatureHasher.encode_bags`` with
                     the spec from ``/v1/model``): an uncompressed Arrow stream with list<int32>
                     columns ``content``, ``lines``, ``layout``, the content's count classes as a
                     list<uint8> column ``content_classes`` (one per content id, below
                     ``features.COUNT_BITS``) and schema metadata ``hashing`` = the spec's digest;
                     answered like Arrow on ``/v1/score``. The service then only runs
                     the network: this is how a cluster's executors keep an accelerator busy.
    GET  /v1/model   name, version, threshold (and per language), how many characters of a text the model reads, the
                     hashing spec and its digest, limits.
    GET  /v1/model/memory   the model's n-gram memory (``features.NgramMemory``), where its hashing spec
                     names one: a client that hashes texts itself needs it; the spec carries its sha256.
    GET  /healthz    the process is up.      GET /readyz   the model is loaded and not draining.
    GET  /metrics    Prometheus exposition (prometheus_client): requests by endpoint and code, texts,
                     batch sizes, latencies, queue depth, errors, rejections.

Requests from concurrent connections are merged into micro-batches (up to ``max_batch`` texts or the
content ids of one forward pass, or whatever arrived within ``max_wait_ms`` of the first).
``workers`` > 1 runs that many model replicas, each in a process of its own (``model_process.py``) on
its own device id, behind this one HTTP front: one queue, one set of limits and one ``/metrics`` for
the whole service, N batches in flight at once. (N uvicorn processes sharing the port would each have
their own queue, limits and metrics, and a scrape of ``/metrics`` would see one of them.)

Limits answer with clear 4xx: 413 for a body, a text count or a text over its limit (an encoded
text: more ids than the model's hashing makes), 400 for malformed bodies (encoded: wrong column
types, nulls, ids outside the embedding tables), 409 for texts encoded with another hashing spec,
411 without ``Content-Length``, 415 for other content types and for compressed Arrow streams, 401
without the token. Overload is answered, never queued without bound: 429 (with ``Retry-After``)
when the pending texts or the bytes of the requests being handled are past their limits, 503 past
the connection limit, while draining and when the model gives no answer within
``answer_timeout_s``. A request must arrive whole (headers and body) within ``request_timeout_s``
of its connection opening or of the previous answer, else the connection is closed: slow or idle
clients cannot hold connections. SIGTERM stops accepting work, finishes what is queued, then exits.

HTTP is uvicorn's (h11: header size limit, malformed framing such as a negative ``Content-Length``
answered 400 before the app sees it, listen backlog); this package adds the request deadline, the
connection cap and the ASGI app.

Binds 127.0.0.1 by default. Binding any other address requires a token (``CORPUSMILL_SCORE_TOKEN``
or ``--token-file``), then checked as ``Authorization: Bearer <token>`` (scheme in any case) on every
endpoint but ``/healthz``.

The package, a module per responsibility: ``config`` (``ServerConfig`` and its checks), ``auth``
(the token), ``errors`` (refusals as HTTP statuses), ``metrics`` (Prometheus), ``batching`` (the
micro-batcher and the byte budget), ``decoding`` (request bodies and their limits), ``connections``
(request deadlines and the connection cap, on uvicorn's h11), ``app`` (the ASGI app) and
``model_process`` (a replica of ``workers`` > 1). This module puts them together: ``ScoringServer``
and the process around it, ``serve``.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import resource
import signal
import socket
import sys
import threading
import time
from typing import Optional, Sequence

import numpy as np
import uvicorn

from scoring_service.model.artifacts import ModelInfo, model_hasher, read_info
from scoring_service.model.features import Bags
from scoring_service.model.scorer import TextScorer
from scoring_service.serving.app import ScoringApp
from scoring_service.serving.auth import TOKEN_ENV, authorized, is_loopback, resolve_token
from scoring_service.serving.batching import ByteBudget, MicroBatcher
from scoring_service.serving.config import ServerConfig
from scoring_service.serving.connections import GuardedH11Protocol
from scoring_service.serving.decoding import bags_from_arrow, decode_texts
from scoring_service.serving.errors import RequestError
from scoring_service.serving.metrics import Metrics
from scoring_service.serving.model_process import ModelProcess

__all__ = ["ServerConfig", "ScoringServer", "Metrics", "MicroBatcher", "RequestError", "TOKEN_ENV", "resolve_token",
           "serve", "start_replicas"]


class ScoringServer:
    """The model replicas, their micro-batcher, the byte budget and the uvicorn server on a bound socket.

    A replica is anything with ``score_bags(Bags) -> scores``: the ``TextScorer`` itself, or a
    ``ModelProcess`` running one.
    """

    def __init__(self, config: ServerConfig, info: ModelInfo, replicas: Sequence, loaded_from: Optional[str]):
        self.config, self.info, self.loaded_from = config, info, loaded_from
        self.text_chars_used = 2 * info.hashing.max_chars  # see features.normalize
        # Texts sent to /v1/score are hashed here, one request at a time: the hasher caches powers
        # as long as the longest batch, once, rather than once per thread.
        self.hasher = model_hasher(config.model_dir, info)
        self.memory_bytes = self.hasher.memory.to_bytes() if self.hasher.memory is not None else None
        self._hashing = threading.Lock()
        self.metrics = Metrics()
        self.batcher = MicroBatcher(replicas, config, self.metrics)
        self.budget = ByteBudget(config.max_queue_bytes, self.metrics)
        self.draining = threading.Event()
        family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
        self.socket = socket.create_server((config.host, config.port), family=family, backlog=config.backlog)
        self.uvicorn = uvicorn.Server(uvicorn.Config(
            ScoringApp(self), lifespan="off", log_config=None, log_level="error", access_log=False,
            server_header=False, backlog=config.backlog, http=functools.partial(GuardedH11Protocol, service=self),
            timeout_keep_alive=max(1, int(config.request_timeout_s)),
            timeout_graceful_shutdown=max(1, int(config.drain_timeout_s))))

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def ready(self) -> bool:
        return not self.draining.is_set() and self.batcher.alive

    def authorized(self, given: Optional[str]) -> bool:
        return authorized(self.config.token, given)

    def decode(self, body: bytes, content_type: str, encoded: bool) -> Bags:
        """A request body as encoded texts, checked against the limits (runs off the event loop)."""
        if encoded:
            return bags_from_arrow(body, self.config, self.info.hashing)
        texts = decode_texts(body, content_type, self.config, self.text_chars_used)
        with self._hashing:
            return self.hasher.encode_bags(texts)

    async def score(self, bags: Bags) -> np.ndarray:
        if not bags.rows:
            return np.zeros(0, dtype=np.float32)
        loop = asyncio.get_running_loop()
        answered = loop.create_future()

        def notify():  # from the batching thread
            try:
                loop.call_soon_threadsafe(lambda: answered.done() or answered.set_result(None))
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        job = self.batcher.submit(bags, notify)
        try:
            await asyncio.wait_for(answered, self.config.answer_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(503, f"no answer from the model within {self.config.answer_timeout_s:g} s",
                               {"Retry-After": "1"}) from None
        if job.error is not None:
            raise job.error
        return job.scores

    def model_description(self) -> dict:
        info, cfg = self.info, self.config
        return {"name": info.name, "version": info.version, "threshold": info.threshold,
                "threshold_by_language": info.threshold_by_language,
                "text_chars_used": self.text_chars_used,
                # what a client needs to encode texts for /v1/score/encoded itself
                "hashing": info.hashing.to_dict(), "hashing_digest": info.hashing.digest,
                "backend": cfg.backend, "device": cfg.device, "workers": cfg.workers,
                "loaded_from": self.loaded_from,
                "limits": {"max_request_texts": cfg.max_request_texts, "max_request_bytes": cfg.max_request_bytes,
                           "max_text_bytes": cfg.max_text_bytes, "max_batch": cfg.max_batch,
                           "max_wait_ms": cfg.max_wait_ms, "max_queue_texts": cfg.max_queue_texts,
                           "max_queue_bytes": cfg.max_queue_bytes}}

    def run(self) -> None:
        """Serve until ``drain_and_stop``; uvicorn then closes the listener, lets the requests in hand
        finish (at most ``drain_timeout_s``) and returns. Run off the main thread: the process's
        signal handlers are ``serve``'s, not uvicorn's."""
        self.uvicorn.run(sockets=[self.socket])

    @property
    def started(self) -> bool:
        return self.uvicorn.started

    def drain_and_stop(self) -> None:
        """Graceful stop: refuse new work, answer what is queued, close the listener."""
        self.draining.set()
        self.uvicorn.should_exit = True


def serve(config: ServerConfig, exit_with_parent: bool = False) -> int:
    if not is_loopback(config.host) and not config.token:
        print(f"scoring_service: refusing to listen on {config.host} without a token: set {TOKEN_ENV} "
              "or --token-file (only 127.0.0.1 / ::1 / localhost may go without)", file=sys.stderr)
        return 2
    problems = config.problems()
    for problem in problems:
        print(f"scoring_service: {problem}", file=sys.stderr)
    if problems:
        return 2
    _allow_open_files(config.max_connections + 64)
    replicas = start_replicas(config)
    loaded_from = getattr(replicas[0], "loaded_from", None)
    server = ScoringServer(config, read_info(config.model_dir), replicas, loaded_from)
    http_thread = threading.Thread(target=server.run, name="http", daemon=True)
    http_thread.start()
    while not server.started and http_thread.is_alive():
        time.sleep(0.02)
    if not http_thread.is_alive():
        return 1
    signal.signal(signal.SIGTERM, lambda *_: server.drain_and_stop())
    signal.signal(signal.SIGINT, lambda *_: server.drain_and_stop())
    if exit_with_parent:
        _watch_parent(server)
    print(json.dumps({"event": "ready", "url": server.url, "model": server.info.name,
                      "version": server.info.version, "workers": config.workers}), flush=True)
    while http_thread.is_alive():
        http_thread.join(0.2)  # a timed join lets the signal handlers run
    server.batcher.stop(config.drain_timeout_s)
    for replica in replicas:
        if isinstance(replica, ModelProcess):
            replica.close()
    return 0


def start_replicas(config: ServerConfig, startup_timeout_s: float = 300.0) -> list:
    """One ``TextScorer`` in this process (``workers`` 1), else ``workers`` model processes, loaded
    side by side; each is warmed up (graph compiled) before the service says it is ready."""
    if config.workers == 1:
        scorer = TextScorer.load(config.model_dir, config.backend, config.device, config.device_ids[0],
                                 cpu_threads=config.cpu_threads)
        scorer.score(["warm-up text.", "a\nb"])
        return [scorer]
    replicas = [ModelProcess(config.model_dir, config.backend, config.device,
                             config.device_ids[i % len(config.device_ids)], config.cpu_threads)
                for i in range(config.workers)]
    try:
        for replica in replicas:
            replica.wait_ready(startup_timeout_s)
    except RuntimeError:
        for replica in replicas:
            replica.close()
        raise
    return replicas


def _allow_open_files(needed: int) -> None:
    """Raise the soft limit on open files towards ``needed`` (one per connection), within the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else min(needed, hard),
                                                    hard))


def _watch_parent(server: ScoringServer) -> None:
    """Embedded mode: stop when the process that started us is gone (no orphaned sidecars)."""
    parent = os.getppid()

    def watch():
        while not server.draining.is_set():
            if os.getppid() != parent:
                server.drain_and_stop()
                return
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
