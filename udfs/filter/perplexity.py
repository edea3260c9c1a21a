"""The perplexity signal: how unlike reference prose a document reads, per language (CCNet, RefinedWeb).

Each language with a model gets ``perplexity``: every paragraph (line) within the first ``max_chars``
characters is scored as a sentence by the
language's n-gram model (``udfs.filter.ngram_lm``), and the document's perplexity is
``10 ** -(sum of log10 probabilities / number of predictions)`` over its words and paragraph ends
(and punctuation marks in ``count_punctuation`` languages; elsewhere they are context only), i.e.
the length-weighted mean of the paragraphs' log-perplexities, so one bad block raises it in
proportion to its length. A document in a language without a model gets null, never a guess from
another language's model.

The same pass gives ``word_order_gain``: over the document's predicted words that the model knows,
the mean of log10 P(word | its n-gram context) less log10 P(word) alone, i.e. log10 of how many
times better the context predicts them than their frequencies do. Words in an order of the language
gain; the same words shuffled gain about nothing, whatever their vocabulary (rare words lower both
probabilities), so it tells word salad from prose where perplexity alone mixes it up with text on an
unusual subject. Unknown words are left out: their probability is ``<unk>``'s with or without context.

Three decisions use them:
* the ``perplexity`` rule: a maximum per language (``max_perplexity``), like any filter rule;
* the ``perplexity_word_order`` rule (``conf/filter.yaml``): a minimum ``word_order_gain``;
* ``ppl_bucket``: CCNet's head / middle / tail, cut at per-language percentiles of the run's own
  distribution (``bucket_quantiles``), computed in a second pass over the run (``jobs/stages/filter/perplexity.py``)
  so a mixture can weight the buckets.

The shipped models live in ``udfs/filter/lm_models/`` (``<lang>.arpa.gz`` + ``<lang>.card.json``: sources,
licences, order, held-out perplexity); ``models`` maps a language to another ARPA file. Only English
ships: the one sizeable Chinese reference text we have is research-only, so Chinese documents get null
until a model trained on licensed text is configured (``udfs/filter/lm_models/README.md`` shows how).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from corpusmill.config import ConfigError, defaults_from_yaml, require_file
from udfs.common.worker import worker_resource
from udfs.filter.ngram_lm import BACKENDS, load_model

MODELS_DIR = Path(__file__).resolve().parent / "lm_models"
SHIPPED = "shipped"
BUCKETS = ("head", "middle", "tail")


def shipped_model(lang: str) -> Path:
    return MODELS_DIR / f"{lang}.arpa.gz"


@dataclass(frozen=True)
@defaults_from_yaml("filter", "perplexity")
class PerplexityConfig:
    # Language (lid.176 code) -> ARPA model file, or "shipped" for udfs/filter/lm_models/<lang>.arpa.gz.
    models: Dict[str, str]
    # Query engine: numpy (built in: compiled n-gram tables, scores faster than KenLM), kenlm
    # (C++, pip install kenlm: loads a model faster), or auto (the built-in one).
    # bench/speed/perplexity_bench.py times both.
    backend: str
    # The perplexity rule: documents above their language's maximum are rejected; languages not
    # listed have no maximum, and a maximum acts only once its language has a model (else the
    # perplexity is null). The defaults sit at about the 80th percentile of the sample crawls'
    # pages (so the worst fifth of a crawl is dropped; there: search boxes, link lists, set lists,
    # keyword pages) and well above the 95th percentile of unseen reference text (ABC news 2,500; People's
    # Daily paragraphs 520, measured with a People's Daily model that does not ship);
    # bench/speed/perplexity_bench.py measures both. Perplexity is per token: words for English,
    # characters for Chinese, so the scales differ.
    max_perplexity: Dict[str, float]
    # CCNet buckets: perplexity quantiles (per language, of the run's kept documents) between
    # head | middle | tail: CCNet's even thirds.
    bucket_quantiles: List[float]
    # Languages whose punctuation marks count as predictions. Elsewhere they are context only: in
    # English a comma is cheap to predict, so counting it put comma-separated keyword lists below
    # news (median 980 vs 730) and chat close to it (ROC AUC 0.77); not counting it: 40,000 vs
    # 1,100 and AUC 0.89. In Chinese the marks around navigation and link lists are the tell: on
    # ClueWeb09 zh pages counting them gave AUC 0.73 against 0.63 (bench/speed/perplexity_bench.py).
    count_punctuation: List[str]
    # Relative error of Spark's percentile_approx for the bucket cut-offs (accuracy = 1 / this).
    quantile_relative_error: float
    # Characters of a document that are scored: its paragraphs up to this many characters (at least
    # the first, cut there). Bounds the cost of a long document; ~3,500 English words are a stable
    # estimate of the whole (a longer one's perplexity is that of its opening).
    max_chars: int

    def validate(self, prefix: str) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"{prefix}.backend: must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        for lang, path in self.models.items():
            if path == SHIPPED:
                if not shipped_model(lang).exists():
                    raise ConfigError(f"{prefix}.models.{lang}: no shipped model for {lang!r} "
                                      f"(shipped: {', '.join(shipped_languages())}; to train one see "
                                      f"udfs/filter/lm_models/README.md)")
            else:
                require_file(path, f"{prefix}.models.{lang}")
        for lang, value in self.max_perplexity.items():
            if value <= 1:
                raise ConfigError(f"{prefix}.max_perplexity.{lang}: must be > 1, got {value}")
        qs = self.bucket_quantiles
        if len(qs) != len(BUCKETS) - 1 or not 0 < qs[0] < qs[1] < 1:
            raise ConfigError(f"{prefix}.bucket_quantiles: need two increasing values in (0, 1), got {qs}")
        if not 0 < self.quantile_relative_error < 0.1:
            raise ConfigError(f"{prefix}.quantile_relative_error: must be within (0, 0.1)")
        if self.max_chars < 1:
            raise ConfigError(f"{prefix}.max_chars: must be a positive number of characters, got {self.max_chars}")

    def model_path(self, lang: str) -> str:
        path = self.models[lang]
        return str(shipped_model(lang)) if path == SHIPPED else path


def shipped_languages() -> List[str]:
    return sorted(p.name.split(".")[0] for p in MODELS_DIR.glob("*.arpa.gz"))


def cached_model(path: str, backend: str):
    """The n-gram model at ``path``, loaded once per Python worker."""
    return worker_resource("filter.ngram_lm", (path, backend), lambda: load_model(path, backend))


def scored_part(text: str, max_chars: int) -> str:
    """The paragraphs (lines) of ``text`` that fit in ``max_chars``; the first one cut there if longer."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    end = head.rfind("\n")
    return head[:end] if end > 0 else head


class PerplexityScorer:
    """Document perplexities for a batch of (text, lang) pairs, grouped by language so each model
    scores all of its paragraphs in one call."""

    def __init__(self, cfg: PerplexityConfig):
        self.cfg = cfg

    def model(self, lang: Optional[str]):
        if lang not in self.cfg.models:
            return None
        return cached_model(self.cfg.model_path(lang), self.cfg.backend)

    def score(self, texts: Sequence[Optional[str]], langs: Sequence[Optional[str]]) -> List[Optional[float]]:
        """Each document's perplexity (None: no model for its language, or no tokens)."""
        return self.score_with_word_order(texts, langs)[0]

    def score_with_word_order(self, texts: Sequence[Optional[str]], langs: Sequence[Optional[str]]
                              ) -> Tuple[List[Optional[float]], List[Optional[float]]]:
        """Each document's perplexity and its word-order gain (None where there is no model or nothing
        to score)."""
        ppl: List[Optional[float]] = [None] * len(texts)
        gain: List[Optional[float]] = [None] * len(texts)
        by_lang: Dict[str, List[int]] = {}
        for i, (text, lang) in enumerate(zip(texts, langs)):
            if text is not None and lang in self.cfg.models:
                by_lang.setdefault(lang, []).append(i)
        for lang, indices in by_lang.items():
            # marks are context, not predictions, except in count_punctuation languages
            parts = [scored_part(texts[i], self.cfg.max_chars) for i in indices]
            sums = self.model(lang).document_sums(parts, lang in self.cfg.count_punctuation)
            for i, total, count, order_gain, known in zip(indices, *sums):
                ppl[i] = float(10 ** (-total / count)) if count else None  # no tokens: nothing to judge
                gain[i] = float(order_gain / known) if known else None
        return ppl, gain
