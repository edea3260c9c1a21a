"""The scoring server's ASGI application: the endpoints and their routing, the bearer-token check,
a score request's content type, ``Content-Length`` and size checks, its reservation in the byte
budget, its decoding off the event loop and its wait for the micro-batcher, and every answer (JSON,
Arrow, Prometheus text, and the JSON of an error), each request counted in the metrics.
"""
from __future__ import annotations

import asyncio
import io
import json
import time
from typing import TYPE_CHECKING, Optional

import pyarrow as pa
from prometheus_client import CONTENT_TYPE_LATEST

from scoring_service.serving.decoding import ARROW_STREAM
from scoring_service.serving.errors import ClientGone, RequestError

if TYPE_CHECKING:
    from scoring_service.serving import ScoringServer

SCORE_TEXTS, SCORE_ENCODED = "/v1/score", "/v1/score/encoded"
MODEL_MEMORY = "/v1/model/memory"
ROUTES = (SCORE_TEXTS, SCORE_ENCODED, "/healthz", "/readyz", "/metrics", "/v1/model", MODEL_MEMORY)


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
        if method == "GET" and path == MODEL_MEMORY:
            if service.memory_bytes is None:
                raise RequestError(404, "this model has no n-gram memory")
            return await request.answer(200, service.memory_bytes, "application/octet-stream")
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
