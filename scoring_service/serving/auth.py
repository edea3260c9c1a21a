"""Who may use the scoring server: the bearer token (from ``CORPUSMILL_SCORE_TOKEN`` or a token
file), its constant-time check against a request's ``Authorization`` header, and the loopback test
that decides whether the server may listen without a token at all.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Optional

TOKEN_ENV = "CORPUSMILL_SCORE_TOKEN"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(token_file: Optional[str]) -> Optional[str]:
    if token_file:
        with open(token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
        if not token:
            raise SystemExit(f"scoring_service: token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def authorized(token: Optional[str], given: Optional[str]) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` (always, when there is no token)."""
    if not token:
        return True
    scheme, _, credentials = (given or "").strip().partition(" ")
    # RFC 7235: the scheme is case-insensitive.
    return scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(), token.encode())
