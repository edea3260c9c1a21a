"""How a request ends without scores, shared by every layer of the server: ``RequestError`` is a
refusal (an HTTP status, a one-line reason and extra headers such as ``Retry-After``) that batching,
decoding or routing may raise and the ASGI app turns into a JSON answer; ``ClientGone`` is a client
that went away (or was cut off for being too slow) before its answer, so there is nobody to answer.
"""
from __future__ import annotations

from typing import Optional


class RequestError(Exception):
    """A request the server refuses: HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


class ClientGone(Exception):
    """The client closed the connection (or it was closed for being too slow) before its answer."""
