"""score: settings, and the per-batch call run inside the pandas UDF (no Spark here): the service's
client, or in local mode the model itself, loaded once per Python worker."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from corpusmill.config import ConfigError, defaults_from_yaml, require_file
from scoring_service.client import LocalService, ScoringClient, ScoringUnavailable
from scoring_service.model.artifacts import DEFAULT_MODEL_DIR, MODEL_JSON, model_dir_of
from udfs.common.worker import worker_resource

if TYPE_CHECKING:
    import pandas as pd

    from scoring_service.model.scorer import TextScorer

ON_FAILURE = ("fail", "null")
MODES = ("service", "local")
DEVICES = ("CPU", "GPU", "Ascend")


def check_threshold(value: Any, key: str) -> float:
    """``value`` as a threshold: a number within [0, 1] (NaN, booleans and the rest refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{key}: must be within [0, 1], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Thresholds:
    """The keep/reject line: a document scoring at or above its language's threshold is kept."""

    default: float
    by_language: Mapping[str, float]

    def for_language(self, lang: Optional[str]) -> float:
        return self.by_language.get(lang, self.default) if lang is not None else self.default


@dataclass(frozen=True)
@defaults_from_yaml("score")
class ScoreConfig:
    # "service": score through the HTTP scoring service; "local": every Spark Python worker loads
    # the model once and scores in process (clusters without a separate inference host).
    mode: str
    # URL of a running scoring service, or a list of replicas' URLs (each task starts on one by its
    # partition id, and moves to the next when one fails); empty: the stage starts one on
    # loopback (local Spark only).
    service_url: Any
    # Hash texts on the executors and send the service encoded batches (false: send the texts).
    encode: bool
    # Model directory of the service the stage starts itself, and of local mode; empty: the
    # shipped default model.
    model: Optional[str]
    device: str
    # Documents scoring at or above it are kept, unless their language has its own threshold (here
    # or in the model). Empty: the model's own F1-optimal threshold.
    threshold: Optional[float]
    # Language (the filter's ``lang``) -> its threshold, before the model's own per-language
    # thresholds (``threshold_by_language`` in its model.json) and ``threshold``. Held as sorted
    # (language, threshold) pairs, so the settings stay hashable.
    threshold_by_language: Dict[str, float]
    batch_size: int  # texts per request
    timeout_s: float
    retries: int
    backoff_s: float
    backoff_max_s: float
    # After the retries: "fail" stops the stage with the service's error; "null" writes the rows
    # with a null score to errors/ (error = "score_unavailable") and goes on.
    on_failure: str
    # Name of the environment variable holding the bearer token of a non-loopback service.
    token_env: str
    # Rows that already carry a quality_score (a previous run's output) are not sent again, so a
    # new threshold needs no re-scoring.
    reuse_scores: bool
    startup_timeout_s: float

    def __post_init__(self):
        if isinstance(self.service_url, list):  # hashable, like the rest of the settings
            object.__setattr__(self, "service_url", tuple(self.service_url))
        if isinstance(self.threshold_by_language, dict):
            pairs = sorted(self.threshold_by_language.items(), key=lambda kv: str(kv[0]))
            object.__setattr__(self, "threshold_by_language", tuple(pairs))

    @property
    def service_urls(self) -> Tuple[str, ...]:
        url = self.service_url
        return () if not url else (url,) if isinstance(url, str) else tuple(url)

    def validate(self, prefix: str) -> None:
        def key(name):
            return f"{prefix}.{name}" if prefix else name

        if self.mode not in MODES:
            raise ConfigError(f"{key('mode')}: must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"{key('device')}: must be one of {', '.join(DEVICES)}, got {self.device!r}")
        urls = self.service_url
        if urls is not None and not isinstance(urls, str) and not (
                isinstance(urls, tuple) and urls and all(isinstance(u, str) for u in urls)):
            raise ConfigError(f"{key('service_url')}: must be a URL or a non-empty list of URLs, got {urls!r}")
        for url in self.service_urls:
            if not url.startswith("http://"):
                raise ConfigError(f"{key('service_url')}: must be http://host:port, got {url!r}")

        if self.on_failure not in ON_FAILURE:
            raise ConfigError(f"{key('on_failure')}: must be one of {', '.join(ON_FAILURE)}, got {self.on_failure!r}")
        if self.threshold is not None:
            check_threshold(self.threshold, key("threshold"))
        for lang, value in self.threshold_by_language:
            if not isinstance(lang, str) or not lang:
                raise ConfigError(f"{key('threshold_by_language')}: keys must be language codes, got {lang!r}")
            check_threshold(value, key(f"threshold_by_language.{lang}"))
        for name in ("batch_size", "timeout_s", "startup_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{key(name)}: must be positive, got {getattr(self, name)}")
        if self.retries < 0 or self.backoff_s < 0 or self.backoff_max_s < 0:
            raise ConfigError(f"{key('retries')}: retries and backoff must not be negative")
        require_file(self.model_dir, key("model"))  # a shipped model's name, or a folder

    def client(self, urls: Sequence[str]) -> ScoringClient:
        return ScoringClient(urls, timeout_s=self.timeout_s, retries=self.retries, backoff_s=self.backoff_s,
                             backoff_max_s=self.backoff_max_s, token=os.environ.get(self.token_env) or None,
                             batch_size=self.batch_size, encode=self.encode)

    @property
    def model_dir(self) -> str:
        return model_dir_of(self.model) if self.model else DEFAULT_MODEL_DIR

    def thresholds(self, model: Mapping[str, Any]) -> Thresholds:
        """The thresholds that apply with ``model`` (its model.json, or a service's ``/v1/model``): per
        language, this config's; then ``threshold`` where set, for every other language (a user's own
        cut-off overrides the model's); else the model's per-language thresholds, then its threshold."""
        by_language: Dict[str, float] = {}
        if self.threshold is None:
            source = "the model's threshold_by_language"
            by_language = {lang: check_threshold(value, f"{source}.{lang}")
                           for lang, value in (model.get("threshold_by_language") or {}).items()}
        by_language.update(self.threshold_by_language)
        default = self.threshold if self.threshold is not None else check_threshold(model.get("threshold"),
                                                                                    "the model's threshold")
        return Thresholds(default, by_language)


def model_card(model_dir: str) -> Dict[str, Any]:
    """A model folder's model.json as it stands (fields a newer trainer adds are read with ``.get``)."""
    path = Path(model_dir) / MODEL_JSON
    if not path.exists():
        raise FileNotFoundError(f"{model_dir}: not a model directory (no {MODEL_JSON})")
    return json.loads(path.read_text(encoding="utf-8"))


_LAUNCHED = {}  # loopback services launched ahead of their stage (launch_local_service)


def _service_key(settings: ScoreConfig) -> tuple:
    return settings.model_dir, settings.device, settings.startup_timeout_s


def launch_local_service(settings: ScoreConfig, master: str) -> None:
    """Launch the loopback service that a score stage with ``settings`` would start, without waiting:
    it imports MindSpore and loads the model while the JVM starts. ``local_service`` hands it to the
    stage; one left unused (the stage was done already) stops when the process exits."""
    key = _service_key(settings)
    if settings.mode == "service" and not settings.service_urls and master.startswith("local") and key not in _LAUNCHED:
        _LAUNCHED[key] = LocalService(settings.model_dir, settings.device, settings.startup_timeout_s).launch()


def local_service(settings: ScoreConfig) -> LocalService:
    """The loopback service for ``settings``: the one launched ahead, else a new one (``start`` it)."""
    return (_LAUNCHED.pop(_service_key(settings), None)
            or LocalService(settings.model_dir, settings.device, settings.startup_timeout_s))


def worker_client(urls: Sequence[str], settings: ScoreConfig, partition: int) -> ScoringClient:
    """The worker's client (its keep-alive connections kept between tasks), sending this partition's
    requests to replica ``partition mod len(urls)``."""
    client = worker_resource("score.client", (tuple(urls), settings), lambda: settings.client(urls))
    client.prefer(partition)
    return client


def worker_scorer(settings: ScoreConfig) -> "TextScorer":
    """The model, loaded once per Python worker (``mode: local``)."""
    from scoring_service.model.scorer import TextScorer  # MindSpore only where the model runs

    return worker_resource("score.model", (settings.model_dir, settings.device),
                           lambda: TextScorer.load(settings.model_dir, device=settings.device))


def score_texts(texts: pd.Series, previous: Optional[pd.Series], client: Union[ScoringClient, "TextScorer"],
                on_failure: str) -> pd.Series:
    """Scores for one Arrow batch: rows with a previous score keep it, the rest go to the service
    (or, in local mode, to the model in this process).

    Under ``on_failure="null"`` a batch the service cannot score gets null scores; under ``"fail"``
    the ``ScoringUnavailable`` error propagates and fails the Spark task (and the stage).
    """
    import pandas as pd  # here, not at the top: the driver reads this module's config before starting the JVM

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
