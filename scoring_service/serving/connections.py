"""The HTTP front's defences below the ASGI app: uvicorn's h11 protocol with a deadline for each
request to arrive whole and a cap on open connections. It answers 408 and 503 itself, on connections
that hold no request the app could answer, and closes them, so that slow, idle or too many clients
cannot hold the service's connections.
"""
from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    from scoring_service.serving import ScoringServer


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
