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
                     columns ``content``, ``lines``, ``layout`` and schema metadata ``hashing`` = the
                     spec's digest; answered like Arrow on ``/v1/score``. The service then only runs
                     the network: this is how a cluster's executors keep an accelerator busy.
    GET  /v1/model   name, version, threshold, how many characters of a text the model reads, the
                     hashing spec and its digest, limits.
    GET  /healthz    the process is up.      GET /readyz   the model is loaded and not draining.
    GET  /metrics    Prometheus exposition (prometheus_client): requests by endpoint and code, texts,
                     batch sizes, latencies, queue depth, errors, rejections.

Requests from concurrent connections are merged into micro-batches (up to ``max_batch`` texts, or
whatever arrived within ``max_wait_ms`` of the first). ``workers`` > 1 runs that many model
replicas, each in a process of its own (``model_process.py``) on its own device id, behind this one
HTTP front: one queue, one set of limits and one ``/metrics`` for the whole service, N batches in
flight at once. (N uvicorn processes sharing the port would each have their own queue, limits and
metrics, and a scrape of ``/metrics`` would see one of them.)

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
answered 400 before the app sees it, listen backlog); this module adds the request deadline, the
connection cap and the ASGI app.

Binds 127.0.0.1 by default. Binding any other address requires a token (``CORPUSMILL_SCORE_TOKEN``
or ``--token-file``), then checked as ``Authorization: Bearer <token>`` (scheme in any case) on every
endpoint but ``/healthz``.
"""
from __future__ import annotations

import asyncio
import functools
import hmac
import io
import ipaddress
import json
import os
import queue
import resource
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import h11
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from uvicorn.protocols.http.h11_impl import H11Protocol

from scoring_service.artifacts import ModelInfo, read_info
from scoring_service.backend import TextScorer
from scoring_service.features import LAYOUT_FEATURES, LAYOUT_VOCAB, Bags, FeatureHasher, HashingSpec
from scoring_service.model_process import ModelProcess, ReplicaGone

ARROW_STREAM = "application/vnd.apache.arrow.stream"
TOKEN_ENV = "CORPUSMILL_SCORE_TOKEN"
SCORE_TEXTS, SCORE_ENCODED = "/v1/score", "/v1/score/encoded"
ROUTES = (SCORE_TEXTS, SCORE_ENCODED, "/healthz", "/readyz", "/metrics", "/v1/model")
ENCODED_COLUMNS = ("content", "lines", "layout")
HASHING_KEY = b"hashing"  # Arrow schema metadata of an encoded body: HashingSpec.digest
DEVICES = ("CPU", "GPU", "Ascend")


@dataclass(frozen=True)
class ServerConfig:
    model_dir: str
    host: str = "127.0.0.1"
    port: int = 8808  # 0 = any free port (reported on stdout when ready)
    backend: str = "mindspore"
    device: str = "CPU"  # CPU, GPU or Ascend
    # Model replicas, each in a process of its own behind this one HTTP front (1: the model runs in
    # the front's process). Replica i runs on device_ids[i % len(device_ids)].
    workers: int = 1
    device_ids: Tuple[int, ...] = (0,)
    max_batch: int = 512  # texts merged into one forward pass
    max_wait_ms: float = 5.0  # how long the first text of a batch waits for company
    max_queue_texts: int = 16384  # pending texts beyond which requests get 429
    max_queue_bytes: int = 256 << 20  # bytes of requests being handled beyond which requests get 429
    max_request_texts: int = 4096
    max_request_bytes: int = 64 << 20
    max_text_bytes: int = 1 << 20
    max_connections: int = 1024  # open connections; idle and slow ones are closed by request_timeout_s
    backlog: int = 2048  # connections the kernel queues before they are accepted
    request_timeout_s: float = 30.0  # a request's headers and body, from its connection's last answer
    answer_timeout_s: float = 120.0  # the model's answer to a queued request
    drain_timeout_s: float = 30.0
    token: Optional[str] = None

    def problems(self) -> List[str]:
        found = []
        if self.max_queue_bytes < self.max_request_bytes:
            found.append(f"max_queue_bytes ({self.max_queue_bytes}) must be at least max_request_bytes "
                         f"({self.max_request_bytes}): a request of the largest size would never fit")
        if self.max_queue_texts < 1 or self.max_request_texts < 1 or self.max_connections < 1:
            found.append("max_queue_texts, max_request_texts and max_connections must be positive")
        if min(self.request_timeout_s, self.answer_timeout_s, self.drain_timeout_s) <= 0:
            found.append("request_timeout_s, answer_timeout_s and drain_timeout_s must be positive")
        if self.workers < 1:
            found.append(f"workers must be at least 1, got {self.workers}")
        if self.device not in DEVICES:
            found.append(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if not self.device_ids or min(self.device_ids) < 0:
            found.append(f"device ids must be non-negative, got {list(self.device_ids)}")
        return found


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


class ClientGone(Exception):
    """The client closed the connection (or it was closed for being too slow) before its answer."""


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
        self.request_timeouts = Counter("scoring_request_timeouts", "Connections closed because a request "
                                        "did not arrive whole within request_timeout_s", registry=registry)
        self.queue_texts = Gauge("scoring_queue_texts", "Texts submitted and not yet scored", registry=registry)
        self.queue_bytes = Gauge("scoring_queue_bytes", "Body bytes of the requests being read, decoded, "
                                 "queued or scored", registry=registry)
        self.replica_batches = Counter("scoring_replica_batches", "Forward passes by model replica (serve "
                                       "--workers)", ["replica"], registry=registry)
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
        jobs, size = [first], first.bags.rows
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
            size += job.bags.rows
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


# ---------------------------------------------------------------- request bodies

def _arrow_batch_is_compressed(metadata: pa.Buffer) -> bool:
    """Whether a record-batch message declares compressed buffers: field ``compression`` of the
    ``RecordBatch`` table (Arrow's Message.fbs), read from the flatbuffer without touching the body.
    pyarrow has verified the flatbuffer when it read the message."""
    buf = memoryview(metadata)

    def field(table: int, index: int) -> int:  # absolute position of a table's field, 0 when absent
        vtable = table - struct.unpack_from("<i", buf, table)[0]
        slot = 4 + 2 * index
        if slot + 2 > struct.unpack_from("<H", buf, vtable)[0]:
            return 0
        offset = struct.unpack_from("<H", buf, vtable + slot)[0]
        return table + offset if offset else 0

    message = struct.unpack_from("<I", buf, 0)[0]
    header = field(message, 2)  # Message.header; slot 1 is the union's type tag
    header += struct.unpack_from("<I", buf, header)[0]
    return field(header, 3) != 0  # RecordBatch.compression


def arrow_columns(body: bytes, wanted: Dict[str, Callable[[pa.DataType], bool]],
                  shape: str) -> Tuple[pa.Schema, Dict[str, pa.ChunkedArray]]:
    """The ``wanted`` columns (name → accepted type) of an uncompressed Arrow IPC stream, checked
    before anything is decoded; ``shape`` says what the body must hold when they are missing.

    Compressed streams are refused: Arrow's reader allocates each buffer's declared uncompressed size
    before a caller can look, so a 33 KB zstd body can ask for gigabytes. Uncompressed, every buffer
    lies inside the body (read zero-copy), so ``max_request_bytes`` bounds what decoding holds.
    """
    try:
        messages = pa.ipc.MessageReader.open_stream(pa.py_buffer(body))
        schema = pa.ipc.read_schema(messages.read_next_message())
        indices = {name: schema.get_field_index(name) for name in wanted}
        if any(index < 0 or not wanted[name](schema.field(index).type) for name, index in indices.items()):
            raise RequestError(400, f"Arrow body needs {shape}")
        chunks: Dict[str, list] = {name: [] for name in wanted}
        for message in messages:
            if message.type != "record batch":
                raise RequestError(400, f"unexpected Arrow IPC message: {message.type}")
            if _arrow_batch_is_compressed(message.metadata):
                raise RequestError(415, "compressed Arrow IPC streams are not accepted; send it uncompressed")
            batch = pa.ipc.read_record_batch(message, schema)
            batch.validate(full=True)  # offsets within the body, valid UTF-8
            for name, index in indices.items():
                chunks[name].append(batch.column(index))
        return schema, {name: pa.chunked_array(chunks[name], schema.field(indices[name]).type) for name in wanted}
    except (pa.ArrowInvalid, OSError, struct.error) as exc:
        raise RequestError(400, f"malformed Arrow stream: {exc}") from None


def texts_from_arrow(body: bytes) -> pa.ChunkedArray:
    """The ``text`` column of an Arrow body."""
    def is_string(kind):
        return pa.types.is_string(kind) or pa.types.is_large_string(kind)

    return arrow_columns(body, {"text": is_string}, "a string column 'text'")[1]["text"]


def bags_from_arrow(body: bytes, config: ServerConfig, spec: HashingSpec) -> Bags:
    """Encoded texts (``/v1/score/encoded``): list<int32> columns ``content``, ``lines`` and
    ``layout``, hashed as the model hashes (schema metadata ``hashing`` = ``HashingSpec.digest``).

    Each text's bags are no longer than the model's hashing can make them and every id lies within
    its embedding table, so the forward pass never reads outside a table and a batch's padded size
    stays bounded.
    """
    def is_int32_list(kind):
        return pa.types.is_list(kind) and kind.value_type == pa.int32()

    schema, columns = arrow_columns(body, dict.fromkeys(ENCODED_COLUMNS, is_int32_list),
                                    "list<int32> columns " + ", ".join(repr(c) for c in ENCODED_COLUMNS))
    given = (schema.metadata or {}).get(HASHING_KEY, b"").decode("latin-1")
    if not given:
        raise RequestError(400, f"Arrow schema metadata {HASHING_KEY.decode()!r} missing: the digest of the "
                                "hashing spec the texts were encoded with (GET /v1/model)")
    if given != spec.digest:
        raise RequestError(409, f"texts encoded with hashing {given!r}, the model hashes with {spec.digest!r}: "
                                "re-read GET /v1/model and encode again")
    check_text_count(len(columns["layout"]), config)
    parts = []
    for name, most, vocab in (("content", spec.max_content_ids, spec.buckets),
                              ("lines", spec.max_line_ids, LAYOUT_VOCAB),
                              ("layout", LAYOUT_FEATURES, LAYOUT_VOCAB)):
        column = columns[name].combine_chunks()
        ids = column.flatten()
        if column.null_count or ids.null_count:
            raise RequestError(400, f"{name}: null rows or ids")
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        wrong = np.flatnonzero(lengths != most) if name == "layout" else np.flatnonzero(lengths > most)
        if len(wrong):
            row = int(wrong[0])
            raise RequestError(400 if name == "layout" else 413,
                               f"{name}[{row}] has {lengths[row]} ids; the model's hashing gives "
                               f"{'exactly' if name == 'layout' else 'at most'} {most}")
        ids = ids.to_numpy()
        if len(ids) and (ids.min() < 0 or ids.max() >= vocab):
            raise RequestError(400, f"{name}: ids must lie in [0, {vocab}), got {ids.min()}..{ids.max()}")
        parts.append((ids, np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))))
    (content, content_offsets), (lines, lines_offsets), (layout, _) = parts
    return Bags(content, content_offsets, lines, lines_offsets, layout.reshape(-1, LAYOUT_FEATURES))


JSON_CONTAINERS = 64  # arrays and objects a JSON body may hold: {"texts": [...]} and some room


def json_structure(body: bytes, chunk: int = 1 << 22) -> Tuple[int, int]:
    """(arrays and objects, commas) of a JSON text, outside its strings: a pass of numpy over the
    bytes (a regular expression takes seconds on 64 MB). Escaped backslashes and quotes go first, so
    that every quote left opens or closes a string."""
    data = np.frombuffer(body.replace(b"\\\\", b"").replace(b'\\"', b""), dtype=np.uint8)
    containers = commas = 0
    in_string = 0  # at the start of the chunk
    for start in range(0, len(data), chunk):
        part = data[start:start + chunk]
        quotes = part == ord('"')
        # uint8 running counts wrap at 256, which keeps their parity: odd = inside a string
        outside = ((np.cumsum(quotes.view(np.uint8), dtype=np.uint8) + in_string) & 1) == 0
        containers += int(np.count_nonzero(outside & ((part == ord("[")) | (part == ord("{")))))
        commas += int(np.count_nonzero(outside & (part == ord(","))))
        in_string = (in_string + int(np.count_nonzero(quotes))) & 1
    return containers, commas


def texts_from_json(body: bytes, config: ServerConfig) -> list:
    # json.loads builds every value before the body's shape can be checked, and a value can cost
    # twenty times its bytes ("[]," becomes a 56-byte list; nesting ends in RecursionError): count
    # the arrays, objects and values outside strings first, on the body without its strings.
    containers, commas = json_structure(body)
    if containers > JSON_CONTAINERS:
        raise RequestError(400, f"malformed JSON: {containers} arrays and objects; the body must be "
                                '{"texts": [string, ...]}')
    if commas + 1 > config.max_request_texts + JSON_CONTAINERS:
        raise RequestError(413, f"{commas + 1} JSON values exceed the limit of {config.max_request_texts} texts")
    try:
        payload = json.loads(body)
    except ValueError as exc:  # JSON and UTF-8 errors
        raise RequestError(400, f"malformed JSON: {exc}") from None
    texts = payload.get("texts") if isinstance(payload, dict) else None
    if not isinstance(texts, list):
        raise RequestError(400, 'JSON body must be {"texts": [string, ...]}')
    return texts


def decode_texts(body: bytes, content_type: str, config: ServerConfig, text_chars_used: int) -> List[str]:
    """A request body's texts, checked against the limits and cut to what the model reads."""
    if content_type == ARROW_STREAM:
        column = texts_from_arrow(body)
        check_text_count(len(column), config)
        lengths = pc.binary_length(column)
        longest = (pc.max(lengths).as_py() or 0) if len(column) else 0
        if longest > config.max_text_bytes:
            where = pc.index(lengths, longest).as_py()
            raise RequestError(413, f"texts[{where}] exceeds the limit of {config.max_text_bytes} bytes per text")
        texts = column.to_pylist()
    elif content_type == "application/json":
        texts = texts_from_json(body, config)
        check_text_count(len(texts), config)
        for i, text in enumerate(texts):
            if text is not None and not isinstance(text, str):
                raise RequestError(400, f"texts[{i}] is {type(text).__name__}, expected a string")
            # UTF-8 is at most 4 bytes per character: count bytes only when it could matter. A JSON
            # "\ud800" is a lone surrogate: counted, not refused, as the model reads it as "?".
            if text and len(text) * 4 > config.max_text_bytes and \
                    len(text.encode("utf-8", "surrogatepass")) > config.max_text_bytes:
                raise RequestError(413, f"texts[{i}] exceeds the limit of {config.max_text_bytes} bytes per text")
    else:
        raise RequestError(415, f"unsupported Content-Type {content_type!r} (use application/json or {ARROW_STREAM})")
    # The model reads no more of a text than this (features.normalize): queue no more.
    return ["" if t is None else t[:text_chars_used] for t in texts]


def check_text_count(count: int, config: ServerConfig) -> None:
    if count > config.max_request_texts:
        raise RequestError(413, f"{count} texts in one request exceed the limit of {config.max_request_texts}")


# ---------------------------------------------------------------- HTTP

def _raw_answer(status: str, error: str, extra: str = "") -> bytes:
    """A whole HTTP answer for a connection h11 has no request on yet (then closed)."""
    body = json.dumps({"error": error}).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}"
            "connection: close\r\n\r\n").encode() + body


SERVICE_FULL = _raw_answer("503 Service Unavailable", "too many open connections", "retry-after: 1\r\n")
REQUEST_TIMEOUT = _raw_answer("408 Request Timeout", "the request did not arrive within the time limit")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 connection with a deadline per request and a cap on open connections.

    uvicorn arms no timer before a connection's first request and restarts its keep-alive timer on
    every byte, so a client dripping its headers or body would hold a connection for ever. Here a
    request must have arrived whole within ``request_timeout_s`` of its connection opening or of the
    previous answer, else the connection is closed (408 first when part of a request came). Past
    ``max_connections`` a new connection is answered 503 at once, before it can send anything.
    """

    def __init__(self, *args, service: "ScoringServer", **kwargs):
        super().__init__(*args, **kwargs)
        self.service = service
        self._deadline: Optional[asyncio.TimerHandle] = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.service.config.max_connections:
            self.service.metrics.rejected_connections.inc()
            transport.write(SERVICE_FULL)
            transport.close()
            return
        self._arm_deadline()

    def on_response_complete(self) -> None:
        self._disarm_deadline()
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_deadline()  # for the next request on this connection

    def connection_lost(self, exc) -> None:
        self._disarm_deadline()
        super().connection_lost(exc)

    def _arm_deadline(self) -> None:
        self._disarm_deadline()
        self._deadline = self.loop.call_later(self.service.config.request_timeout_s, self._request_overdue)

    def _disarm_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _request_overdue(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return  # the request is in: answering it is the model's time, bounded by answer_timeout_s
        partial_headers = self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
        if partial_headers or self.conn.their_state is h11.SEND_BODY:
            self.service.metrics.request_timeouts.inc()
        if partial_headers:
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()  # a request reading its body sees a disconnect


class ScoringApp:
    """The ASGI application: routes, token, limits, and the wait for the micro-batcher."""

    def __init__(self, service: "ScoringServer"):
        self.service = service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        request = _Exchange(scope, receive, send)
        service, path = self.service, scope["path"]
        endpoint = path if path in ROUTES else "other"
        started = time.perf_counter()
        status = 500
        try:
            if path != "/healthz" and not service.authorized(request.header("authorization")):
                raise RequestError(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
            status = await self._route(request, path)
        except RequestError as exc:
            status = exc.status
            service.metrics.errors.labels(str(status)).inc()
            await request.answer_json(status, {"error": str(exc)}, exc.headers)
        except ClientGone:
            status = "disconnected"
        except Exception as exc:  # noqa: BLE001 — a server error must still answer
            status = 500
            service.metrics.errors.labels("500").inc()
            request.must_close = True
            await request.answer_json(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})
        finally:
            service.metrics.requests.labels(endpoint, str(status)).inc()
            service.metrics.request_seconds.observe(time.perf_counter() - started)

    async def _route(self, request: "_Exchange", path: str) -> int:
        service, method = self.service, request.scope["method"]
        if method == "POST" and path in (SCORE_TEXTS, SCORE_ENCODED):
            return await self._score(request, encoded=path == SCORE_ENCODED)
        if method == "GET" and path == "/healthz":
            return await request.answer(200, b"ok\n", "text/plain")
        if method == "GET" and path == "/readyz":
            if not service.ready:
                raise RequestError(503, "draining" if service.draining.is_set() else "the batching thread is "
                                   "not running")
            return await request.answer(200, b"ready\n", "text/plain")
        if method == "GET" and path == "/metrics":
            return await request.answer(200, service.metrics.render(), CONTENT_TYPE_LATEST)
        if method == "GET" and path == "/v1/model":
            return await request.answer_json(200, service.model_description())
        if path in ROUTES:
            raise RequestError(405, f"method {method} not allowed on {path}")
        raise RequestError(404, f"no such endpoint: {path}")

    async def _score(self, request: "_Exchange", encoded: bool) -> int:
        service, config = self.service, self.service.config
        if not service.ready:
            raise RequestError(503, "shutting down" if service.draining.is_set() else
                               "the batching thread is not running", {"Retry-After": "1"})
        content_type = (request.header("content-type") or "").split(";", 1)[0].strip().lower()
        if encoded and content_type != ARROW_STREAM:
            raise RequestError(415, f"{SCORE_ENCODED} takes {ARROW_STREAM} only, got {content_type!r}")
        length = request.header("content-length")
        if length is None:  # h11 has refused malformed and negative lengths with 400 already
            raise RequestError(411, "Content-Length required")
        size = int(length)
        if size > config.max_request_bytes:
            raise RequestError(413, f"request body of {size} bytes exceeds the limit of {config.max_request_bytes}")
        service.budget.reserve(size)
        try:
            body = await request.read_body()
            loop = asyncio.get_running_loop()
            bags = await loop.run_in_executor(None, service.decode, body, content_type, encoded)
            del body
            scores = await service.score(bags)
        finally:
            service.budget.release(size)
        service.metrics.texts.inc(bags.rows)
        info = service.info
        headers = {"X-Model-Name": info.name, "X-Model-Version": info.version}
        if content_type == ARROW_STREAM:
            table = pa.table({"score": pa.array(scores, type=pa.float32())}).replace_schema_metadata(
                {"model": info.name, "version": info.version})
            sink = io.BytesIO()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            return await request.answer(200, sink.getvalue(), ARROW_STREAM, headers)
        return await request.answer_json(200, {"scores": [round(float(s), 6) for s in scores], "model": info.name,
                                               "version": info.version}, headers)


class _Exchange:
    """One request and its answer, over ASGI."""

    def __init__(self, scope, receive, send):
        self.scope, self._receive, self._send = scope, receive, send
        self.body_read = False
        self.must_close = False

    def header(self, name: str) -> Optional[str]:
        key = name.encode("latin-1")
        for k, v in self.scope["headers"]:
            if k == key:
                return v.decode("latin-1")
        return None

    async def read_body(self) -> bytes:
        chunks = []
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.body_read = True
                return b"".join(chunks)

    async def answer(self, status: int, body: bytes, content_type: str, headers: Optional[dict] = None) -> int:
        raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        raw += [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
        if self.must_close or (self.scope["method"] == "POST" and not self.body_read):
            raw.append((b"connection", b"close"))  # an unread body would be taken for the next request
        await self._send({"type": "http.response.start", "status": status, "headers": raw})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
        return status

    async def answer_json(self, status: int, obj, headers: Optional[dict] = None) -> int:
        return await self.answer(status, json.dumps(obj).encode("utf-8"), "application/json", headers)


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
        self.hasher = FeatureHasher(info.hashing)
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
        token = self.config.token
        if not token:
            return True
        scheme, _, credentials = (given or "").strip().partition(" ")
        # RFC 7235: the scheme is case-insensitive.
        return scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(), token.encode())

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
        scorer = TextScorer.load(config.model_dir, config.backend, config.device, config.device_ids[0])
        scorer.score(["warm-up text.", "a\nb"])
        return [scorer]
    replicas = [ModelProcess(config.model_dir, config.backend, config.device,
                             config.device_ids[i % len(config.device_ids)]) for i in range(config.workers)]
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
