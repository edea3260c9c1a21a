"""The scoring sidecar: an HTTP batch-inference server around ``TextScorer``.

    python -m scoring_service serve --model scoring_service/models/default --port 8808

Endpoints
    POST /v1/score   texts in, scores out. Body either JSON ``{"texts": [...]}`` (answer JSON
                     ``{"scores": [...], "model": ..., "version": ...}``) or an Arrow IPC stream with a
                     string column ``text`` (``Content-Type: application/vnd.apache.arrow.stream``;
                     answer: an Arrow stream with a float32 column ``score``, model name and version
                     in the schema metadata and the ``X-Model-Name``/``X-Model-Version`` headers).
    GET  /v1/model   name, version, threshold, how many characters of a text the model reads, limits.
    GET  /healthz    the process is up.      GET /readyz   the model is loaded and not draining.
    GET  /metrics    Prometheus exposition (prometheus_client): requests by endpoint and code, texts,
                     batch sizes, latencies, queue depth, errors, rejections.

Requests from concurrent connections are merged into micro-batches (up to ``max_batch`` texts, or
whatever arrived within ``max_wait_ms`` of the first). Limits answer with clear 4xx: 413 for a body,
a text count or a text over its limit, 400 for malformed bodies, 415 for other content types, 401
without the token. Overload is answered, never queued without bound: 429 (with ``Retry-After``)
when the pending queue is full, 503 past the connection limit and while draining. SIGTERM stops
accepting work, finishes what is queued, then exits.

Binds 127.0.0.1 by default. Binding any other address requires a token (``CORPUSMILL_SCORE_TOKEN``
or ``--token-file``), then checked as ``Authorization: Bearer <token>`` on every endpoint but
``/healthz``.
"""
from __future__ import annotations

import hmac
import io
import ipaddress
import json
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Optional

import numpy as np
import pyarrow as pa
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from scoring_service.backend import TextScorer

ARROW_STREAM = "application/vnd.apache.arrow.stream"
TOKEN_ENV = "CORPUSMILL_SCORE_TOKEN"


@dataclass(frozen=True)
class ServerConfig:
    model_dir: str
    host: str = "127.0.0.1"
    port: int = 8808  # 0 = any free port (reported on stdout when ready)
    backend: str = "mindspore"
    device: str = "CPU"
    max_batch: int = 512  # texts merged into one forward pass
    max_wait_ms: float = 5.0  # how long the first text of a batch waits for company
    max_queue_texts: int = 16384  # pending texts beyond which requests get 429
    max_request_texts: int = 4096
    max_request_bytes: int = 64 << 20
    max_text_bytes: int = 1 << 20
    max_connections: int = 64
    read_timeout_s: float = 30.0
    drain_timeout_s: float = 30.0
    token: Optional[str] = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RequestError(Exception):
    """A request the server refuses: HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


# ---------------------------------------------------------------- metrics

class Metrics:
    """The server's Prometheus metrics, in a registry of its own: several servers (and batchers) may
    live in one process, as in tests, and the global default registry would refuse their twins."""

    LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
    BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

    def __init__(self):
        self.registry = registry = CollectorRegistry()
        # Counters are named without "_total": prometheus_client appends it.
        self.requests = Counter("scoring_requests", "HTTP requests by endpoint and status code",
                                ["endpoint", "code"], registry=registry)
        self.errors = Counter("scoring_errors", "Failed requests by status code; failed forward passes as "
                              "kind=inference", ["kind"], registry=registry)
        self.texts = Counter("scoring_texts", "Texts scored", registry=registry)
        self.rejected_overload = Counter("scoring_rejected_overload", "Requests answered 429: the pending "
                                         "queue was full", registry=registry)
        self.rejected_connections = Counter("scoring_rejected_connections", "Connections answered 503: past "
                                            "the connection limit", registry=registry)
        self.queue_texts = Gauge("scoring_queue_texts", "Texts submitted and not yet scored", registry=registry)
        self.batch_size = Histogram("scoring_batch_size", "Texts per forward pass", buckets=self.BATCH_BUCKETS,
                                    registry=registry)
        self.inference_seconds = Histogram("scoring_inference_seconds", "Seconds per forward pass",
                                           buckets=self.LATENCY_BUCKETS, registry=registry)
        self.request_seconds = Histogram("scoring_request_seconds", "Seconds per request, from its headers to "
                                         "the answer", buckets=self.LATENCY_BUCKETS, registry=registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)


# ---------------------------------------------------------------- micro-batching

class _Job:
    __slots__ = ("texts", "done", "scores", "error")

    def __init__(self, texts: List[str]):
        self.texts, self.done, self.scores, self.error = texts, threading.Event(), None, None


class MicroBatcher:
    """One inference thread; requests from many connections are merged into batches."""

    def __init__(self, scorer: TextScorer, config: ServerConfig, metrics: Metrics):
        self.scorer, self.config, self.metrics = scorer, config, metrics
        self._jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        self._pending = 0
        metrics.queue_texts.set_function(lambda: self._pending)
        self._stopped = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="micro-batcher", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        return self._pending

    def submit(self, texts: List[str]) -> _Job:
        with self._lock:
            if self._stopped:
                raise RequestError(503, "shutting down", {"Retry-After": "1"})
            if self._pending + len(texts) > self.config.max_queue_texts:
                self.metrics.rejected_overload.inc()
                raise RequestError(429, f"server busy: {self._pending} texts queued "
                                        f"(limit {self.config.max_queue_texts}); retry later",
                                   {"Retry-After": "1"})
            self._pending += len(texts)
            job = _Job(texts)
            self._jobs.put(job)  # under the lock: never behind the stop signal
        return job

    def _collect(self, first: _Job) -> List[_Job]:
        jobs, size = [first], len(first.texts)
        deadline = time.monotonic() + self.config.max_wait_ms / 1000.0
        while size < self.config.max_batch:
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
            size += len(job.texts)
        return jobs

    def _run(self) -> None:
        while True:
            first = self._jobs.get()
            if first is None:
                return
            jobs = self._collect(first)
            texts = [t for job in jobs for t in job.texts]
            started = time.perf_counter()
            try:
                scores = self.scorer.score(texts)
            except Exception as exc:  # noqa: BLE001 — reported to every waiting request
                self.metrics.errors.labels("inference").inc()
                for job in jobs:
                    job.error = exc
            else:
                offset = 0
                for job in jobs:
                    job.scores = scores[offset: offset + len(job.texts)]
                    offset += len(job.texts)
            self.metrics.batch_size.observe(len(texts))
            self.metrics.inference_seconds.observe(time.perf_counter() - started)
            with self._lock:
                self._pending -= len(texts)
            for job in jobs:
                job.done.set()

    def stop(self, timeout: float) -> None:
        """Score everything already queued, then stop the thread."""
        with self._lock:
            self._stopped = True
            self._jobs.put(None)
        self._thread.join(timeout)


# ---------------------------------------------------------------- HTTP

class ScoringHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, config: ServerConfig, scorer: TextScorer):
        self.config, self.scorer = config, scorer
        self.metrics = Metrics()
        self.batcher = MicroBatcher(scorer, config, self.metrics)
        self.ready = threading.Event()
        self.draining = threading.Event()
        self.in_flight = 0  # requests being handled (answers still to send when draining)
        self._in_flight_lock = threading.Lock()
        self._connections = threading.BoundedSemaphore(config.max_connections)
        super().__init__((config.host, config.port), ScoringHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def process_request(self, request, client_address):
        # Past the connection limit, answer 503 at once instead of starting yet another thread.
        if not self._connections.acquire(blocking=False):
            self.metrics.rejected_connections.inc()
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Retry-After: 1\r\nConnection: close\r\n\r\n")
            finally:
                self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    def model_description(self) -> dict:
        info, cfg = self.scorer.info, self.config
        return {"name": info.name, "version": info.version, "threshold": info.threshold,
                "text_chars_used": 2 * info.hashing.max_chars,  # see features.normalize
                "backend": cfg.backend, "device": cfg.device,
                "loaded_from": getattr(self.scorer.backend, "loaded_from", None),
                "limits": {"max_request_texts": cfg.max_request_texts, "max_request_bytes": cfg.max_request_bytes,
                           "max_text_bytes": cfg.max_text_bytes, "max_batch": cfg.max_batch,
                           "max_wait_ms": cfg.max_wait_ms, "max_queue_texts": cfg.max_queue_texts}}

    def track(self, delta: int) -> None:
        with self._in_flight_lock:
            self.in_flight += delta

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.in_flight > 0 and time.monotonic() < deadline:
            time.sleep(0.05)

    def drain_and_stop(self) -> None:
        """Graceful stop: refuse new work, score what is queued, close the listener."""
        if self.draining.is_set():
            return
        self.draining.set()
        self.batcher.stop(self.config.drain_timeout_s)
        self.shutdown()


class ScoringHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the Spark client reuses one connection per worker
    server: ScoringHTTPServer

    def setup(self):
        super().setup()
        self.connection.settimeout(self.server.config.read_timeout_s)

    def log_message(self, format, *args):  # noqa: A002 — the access log goes to /metrics instead
        pass

    # -- helpers

    def _send(self, status: int, body: bytes, content_type: str, headers: Optional[dict] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, status: int, obj, headers: Optional[dict] = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json", headers)

    def _authorized(self) -> bool:
        token = self.server.config.token
        if not token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    def _handle(self, endpoint: str, action) -> None:
        started = time.perf_counter()
        status = 500
        self._body_read = False
        self.server.track(+1)
        try:
            if endpoint != "/healthz" and not self._authorized():
                raise RequestError(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
            status = action()
        except RequestError as exc:
            status = exc.status
            if self.command == "POST" and not self._body_read:
                self.close_connection = True  # an unread body would be taken for the next request
            self.server.metrics.errors.labels(str(status)).inc()
            self._send_json(status, {"error": str(exc)}, exc.headers)
        except Exception as exc:  # noqa: BLE001 — a server error must still answer
            status = 500
            self.server.metrics.errors.labels("500").inc()
            self.close_connection = True
            self._send_json(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})
        finally:
            self.server.track(-1)
            self.server.metrics.requests.labels(endpoint, str(status)).inc()
            self.server.metrics.request_seconds.observe(time.perf_counter() - started)

    # -- routes

    def do_GET(self):
        routes = {"/healthz": self._healthz, "/readyz": self._readyz, "/metrics": self._metrics,
                  "/v1/model": self._model}
        path = self.path.split("?", 1)[0]
        if path not in routes:
            return self._handle(path if path == "/v1/score" else "other", self._not_found_or_method)
        self._handle(path, routes[path])

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        if path != "/v1/score":
            return self._handle("other", self._not_found_or_method)
        self._handle(path, self._score)

    def _not_found_or_method(self) -> int:
        if self.path.split("?", 1)[0] in ("/v1/score", "/healthz", "/readyz", "/metrics", "/v1/model"):
            raise RequestError(405, f"method {self.command} not allowed on {self.path}")
        raise RequestError(404, f"no such endpoint: {self.path}")

    def _healthz(self) -> int:
        self._send(200, b"ok\n", "text/plain")
        return 200

    def _readyz(self) -> int:
        if not self.server.ready.is_set() or self.server.draining.is_set():
            raise RequestError(503, "draining" if self.server.draining.is_set() else "model loading")
        self._send(200, b"ready\n", "text/plain")
        return 200

    def _metrics(self) -> int:
        self._send(200, self.server.metrics.render(), CONTENT_TYPE_LATEST)
        return 200

    def _model(self) -> int:
        self._send_json(200, self.server.model_description())
        return 200

    def _read_body(self) -> bytes:
        cfg = self.server.config
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise RequestError(411, "Content-Length required")
        try:
            size = int(length)
        except ValueError:
            self.close_connection = True
            raise RequestError(400, f"bad Content-Length {length!r}") from None
        if size > cfg.max_request_bytes:
            self.close_connection = True  # the body is not read, so the connection cannot be reused
            raise RequestError(413, f"request body of {size} bytes exceeds the limit of {cfg.max_request_bytes}")
        body = self.rfile.read(size)
        self._body_read = True
        return body

    def _parse_texts(self, body: bytes, content_type: str) -> List[str]:
        if content_type == ARROW_STREAM:
            try:
                table = pa.ipc.open_stream(body).read_all()
            except (pa.ArrowInvalid, OSError) as exc:
                raise RequestError(400, f"malformed Arrow stream: {exc}") from None
            if "text" not in table.column_names or not (pa.types.is_string(table.schema.field("text").type)
                                                        or pa.types.is_large_string(table.schema.field("text").type)):
                raise RequestError(400, "Arrow body needs a string column 'text'")
            texts = table.column("text").to_pylist()
        elif content_type == "application/json":
            try:
                payload = json.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise RequestError(400, f"malformed JSON: {exc}") from None
            texts = payload.get("texts") if isinstance(payload, dict) else None
            if not isinstance(texts, list):
                raise RequestError(400, 'JSON body must be {"texts": [string, ...]}')
        else:
            raise RequestError(415, f"unsupported Content-Type {content_type!r} (use application/json or {ARROW_STREAM})")
        for i, text in enumerate(texts):
            if text is not None and not isinstance(text, str):
                raise RequestError(400, f"texts[{i}] is {type(text).__name__}, expected a string")
        return ["" if t is None else t for t in texts]

    def _check_limits(self, texts: List[str]) -> None:
        cfg = self.server.config
        if len(texts) > cfg.max_request_texts:
            raise RequestError(413, f"{len(texts)} texts in one request exceed the limit of {cfg.max_request_texts}")
        for i, text in enumerate(texts):
            # UTF-8 is at most 4 bytes per character: count bytes only when it could matter.
            if len(text) * 4 > cfg.max_text_bytes and len(text.encode("utf-8")) > cfg.max_text_bytes:
                raise RequestError(413, f"texts[{i}] exceeds the limit of {cfg.max_text_bytes} bytes per text")

    def _score(self) -> int:
        server = self.server
        if server.draining.is_set() or not server.ready.is_set():
            self.close_connection = True
            raise RequestError(503, "shutting down" if server.draining.is_set() else "model loading",
                               {"Retry-After": "1"})
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        body = self._read_body()
        texts = self._parse_texts(body, content_type)
        self._check_limits(texts)
        scores = self._run(texts)
        server.metrics.texts.inc(len(texts))
        info = server.scorer.info
        headers = {"X-Model-Name": info.name, "X-Model-Version": info.version}
        if content_type == ARROW_STREAM:
            table = pa.table({"score": pa.array(scores, type=pa.float32())}).replace_schema_metadata(
                {"model": info.name, "version": info.version})
            sink = io.BytesIO()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            self._send(200, sink.getvalue(), ARROW_STREAM, headers)
        else:
            self._send_json(200, {"scores": [round(float(s), 6) for s in scores], "model": info.name,
                                  "version": info.version}, headers)
        return 200

    def _run(self, texts: List[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        job = self.server.batcher.submit(texts)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.scores


# ---------------------------------------------------------------- process

def resolve_token(token_file: Optional[str]) -> Optional[str]:
    if token_file:
        with open(token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
        if not token:
            raise SystemExit(f"scoring_service: token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def serve(config: ServerConfig, exit_with_parent: bool = False) -> int:
    if not is_loopback(config.host) and not config.token:
        print(f"scoring_service: refusing to listen on {config.host} without a token: set {TOKEN_ENV} "
              "or --token-file (only 127.0.0.1 / ::1 / localhost may go without)", file=sys.stderr)
        return 2
    scorer = TextScorer.load(config.model_dir, config.backend, config.device)
    scorer.score(["warm-up text.", "a\nb"])  # compile the graph before declaring readiness
    server = ScoringHTTPServer(config, scorer)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.drain_and_stop, daemon=True).start())
    signal.signal(signal.SIGINT, lambda *_: threading.Thread(target=server.drain_and_stop, daemon=True).start())
    if exit_with_parent:
        _watch_parent(server)
    server.ready.set()
    print(json.dumps({"event": "ready", "url": server.url, "model": scorer.info.name,
                      "version": scorer.info.version}), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.wait_idle(config.drain_timeout_s)  # let answers to drained requests go out
        server.server_close()
    return 0


def _watch_parent(server: ScoringHTTPServer) -> None:
    """Embedded mode: stop when the process that started us is gone (no orphaned sidecars)."""
    parent = os.getppid()

    def watch():
        while not server.draining.is_set():
            if os.getppid() != parent:
                server.drain_and_stop()
                return
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
