"""score: settings, and the per-batch client call run inside the pandas UDF (no Spark here)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np
import pandas as pd

from udfs.config import ConfigError, require_file
from scoring_service.client import ScoringClient, ScoringUnavailable

ON_FAILURE = ("fail", "null")


@dataclass(frozen=True)
class ScoreConfig:
    # URL of a running scoring service; empty: the stage starts one on loopback (local Spark only).
    service_url: Optional[str] = None
    # Model directory of the service the stage starts itself; empty: the shipped default model.
    model: Optional[str] = None
    device: str = "CPU"
    # Documents scoring at or above it are kept. Empty: the model's own F1-optimal threshold.
    threshold: Optional[float] = None
    batch_size: int = 256  # texts per request
    timeout_s: float = 60.0
    retries: int = 4
    backoff_s: float = 0.5
    backoff_max_s: float = 10.0
    # After the retries: "fail" stops the stage with the service's error; "null" writes the rows
    # with a null score to errors/ (error = "score_unavailable") and goes on.
    on_failure: str = "fail"
    # Name of the environment variable holding the bearer token of a non-loopback service.
    token_env: str = "CORPUSMILL_SCORE_TOKEN"
    # Rows that already carry a quality_score (a previous run's output) are not sent again, so a
    # new threshold needs no re-scoring.
    reuse_scores: bool = True
    startup_timeout_s: float = 180.0

    def validate(self, prefix: str) -> None:
        def key(name):
            return f"{prefix}.{name}" if prefix else name

        if self.on_failure not in ON_FAILURE:
            raise ConfigError(f"{key('on_failure')}: must be one of {', '.join(ON_FAILURE)}, got {self.on_failure!r}")
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"{key('threshold')}: must be within [0, 1], got {self.threshold}")
        for name in ("batch_size", "timeout_s", "startup_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{key(name)}: must be positive, got {getattr(self, name)}")
        if self.retries < 0 or self.backoff_s < 0 or self.backoff_max_s < 0:
            raise ConfigError(f"{key('retries')}: retries and backoff must not be negative")
        if self.service_url and not self.service_url.startswith("http://"):
            raise ConfigError(f"{key('service_url')}: must be http://host:port, got {self.service_url!r}")
        require_file(self.model, key("model"))

    def client(self, url: str) -> ScoringClient:
        return ScoringClient(url, timeout_s=self.timeout_s, retries=self.retries, backoff_s=self.backoff_s,
                             backoff_max_s=self.backoff_max_s, token=os.environ.get(self.token_env) or None,
                             batch_size=self.batch_size)


# One client (one keep-alive connection) per Python worker and service.
_CLIENTS: Dict[Tuple[str, ScoreConfig], ScoringClient] = {}


def worker_client(url: str, settings: ScoreConfig) -> ScoringClient:
    key = (url, settings)
    if key not in _CLIENTS:
        _CLIENTS[key] = settings.client(url)
    return _CLIENTS[key]


def score_texts(texts: pd.Series, previous: Optional[pd.Series], client: ScoringClient,
                on_failure: str) -> pd.Series:
    """Scores for one Arrow batch: rows with a previous score keep it, the rest go to the service.

    Under ``on_failure="null"`` a batch the service cannot score gets null scores; under ``"fail"``
    the ``ScoringUnavailable`` error propagates and fails the Spark task (and the stage).
    """
    scores = np.full(len(texts), np.nan, dtype=np.float32)
    todo = np.ones(len(texts), dtype=bool)
    if previous is not None:
        known = previous.notna().to_numpy()
        scores[known] = previous[known].to_numpy(dtype=np.float32)
        todo = ~known
    if todo.any():
        try:
            scores[todo] = client.score(texts[todo].tolist())
        except ScoringUnavailable:
            if on_failure == "fail":
                raise
    return pd.Series(scores, index=texts.index, dtype="float32")
