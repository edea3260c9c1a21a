"""Train a quality model from positive and negative texts; save checkpoint, MindIR and model card.

    python -m scoring_service train --positive 'good/*.jsonl' --negative 'bad/*.txt' --out models/mine

Documents are split by group (the pages of one site, the chapters of one book stay together) into
train / validation / test (80/10/10), so held-out figures are not inflated by near-copies. A model is
``NetShape.members`` networks, each validated on a tenth of its own and all tested on the same one
(``split_of``); the model's score is the mean of theirs. Each stops when its validation loss has not
improved for ``patience`` epochs and keeps its best epoch. The threshold comes from the class-balanced
validation P-R curve (``evaluation.best_f1_threshold``: F1-optimal, taken robustly) of each member's
validation texts scored by that member; the test split (never used for any choice) gives the reported
precision, recall and AUC, measured on the exported MindIR.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from scoring_service.model.artifacts import (CARD, CHECKPOINT, MEMORY, MINDIR, MODEL_JSON, ModelInfo, NetShape,
                                              write_info, write_memory)
from scoring_service.model.features import Bags, FeatureHasher, HashingSpec, NgramMemory
from scoring_service.training import evaluation, negatives
from scoring_service.training.corpus import Example, iter_examples, read_examples

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 30
    patience: int = 3
    batch_size: int = 64
    # Slow enough that a few thousand texts take several epochs to fit; ten times faster, the
    # validation loss is lowest after the first epoch and the model judges fewer languages well.
    learning_rate: float = 3e-4
    weight_decay: float = 1e-6
    seed: int = 13


def split_of(group: str, seed: int, member: int = 0) -> str:
    """Deterministic 80/10/10 split by group: the first tenth is the test split of every member of a
    model (``NetShape.members``), member k validates on the (k + 2)-th tenth and trains on the rest."""
    bucket = int(hashlib.sha1(f"{seed}:{group}".encode()).hexdigest()[:8], 16) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 + member else "train"


@dataclass(frozen=True)
class DataSettings:
    """How the training texts are read and what negatives are made of them."""

    # Most positives read per language (the rest of a language's input is skipped): bounds memory and
    # keeps one language from dominating.
    max_docs_per_language: int = 5000
    # Positives of one language corrupted together: each half's machine-made negatives draw on a
    # pool fitted on the other half (chains, templates and spun words from OTHER text of the language).
    chunk_docs: int = 256
    # Machine-made negatives made of each positive, each of another kind (``negatives.TRAINING_TURN``):
    # three judge more languages well than one (the class weights keep the two classes even).
    negatives_per_positive: int = 3

    def __post_init__(self):
        if self.negatives_per_positive < 1:
            raise ValueError(f"negatives_per_positive must be at least 1, got {self.negatives_per_positive}")


MEMORY_FILL_WARNING = 0.2  # an n-gram memory with more of its bits set mistakes one unknown n-gram in five
CLEAN = "clean"  # the kind of a positive
GIVEN = "given"  # the kind of a negative read from a file


@dataclass
class LabelledSet:
    """Hashed texts with their labels and, per text, its language, kind (``CLEAN``, ``GIVEN`` or a
    ``negatives.KINDS`` entry), source and licence; the texts themselves are not kept."""

    labels: np.ndarray  # float32, 1 = high quality
    bags: Bags  # one row per text
    langs: np.ndarray
    kinds: np.ndarray
    sources: np.ndarray
    licences: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence["LabelledSet"]) -> "LabelledSet":
        return cls(np.concatenate([p.labels for p in parts]), Bags.concat([p.bags for p in parts]),
                   *(np.concatenate([getattr(p, column) for p in parts]) for column in
                     ("langs", "kinds", "sources", "licences")))

    def batches(self, batch_size: int, rng: Optional[np.random.Generator]):
        """Batches of ``batch_size`` examples as the network takes them; shuffled when ``rng`` is given."""
        order = rng.permutation(self.bags.rows) if rng is not None else np.arange(self.bags.rows)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            yield rows, self.bags.encoded(rows)


class _SetBuilder:
    """Texts hashed chunk by chunk into one ``LabelledSet``."""

    def __init__(self, hasher: FeatureHasher):
        self.hasher = hasher
        self.bags: List[Bags] = []
        self.labels: List[float] = []
        self.meta: List[Tuple[str, str, str, str]] = []

    def add(self, texts: Sequence[str], label: int, meta: Sequence[Tuple[str, str, str, str]],
            hasher: Optional[FeatureHasher] = None) -> None:
        if texts:
            self.bags.append((hasher or self.hasher).encode_bags(texts))
            self.labels += [float(label)] * len(texts)
            self.meta += meta

    def build(self) -> LabelledSet:
        bags = Bags.concat(self.bags) if self.bags else self.hasher.encode_bags([])
        columns = [np.array(column, dtype=object) for column in zip(*self.meta)] or [np.array([], dtype=object)] * 4
        return LabelledSet(np.array(self.labels, dtype=np.float32), bags, *columns)


def _lang(example: Example) -> str:
    return example.lang or "und"


def _machine_negatives(examples: List[Example], seed: int, first_kind: int,
                       per_example: int = 1) -> List[Tuple[Example, str, str]]:
    """``per_example`` negatives per example (kinds in turn from ``first_kind``), each half of the
    examples corrupted with a pool fitted on the other half."""
    half = len(examples) // 2
    halves = (examples[:half], examples[half:])
    pools = [negatives.LanguagePool(e.text for e in other) for other in (halves[1], halves[0])]
    out = []
    for part, pool in zip(halves, pools):
        kinds = negatives.training_turn(pool)
        for ex in part:
            for i in range(per_example):
                kind = kinds[(first_kind + len(out)) % len(kinds)]
                rng = random.Random(f"{seed}:{kind}:{ex.text}" + (f":{i}" if i else ""))
                out.append((ex, kind, negatives.make(kind, ex.text, rng, pool)))
    return out


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


def _taken_positives(positive: Sequence[str], negative_digests: set, data_settings: DataSettings, taken: set,
                     per_language: Counter, in_both: set) -> Iterator[Example]:
    """The positives training takes, streamed: a text also given as a negative is dropped (its digest
    added to ``in_both``), a repeated one skipped, a language's beyond its cap skipped."""
    for ex in iter_examples(positive):
        key = _digest(ex.text)
        lang = _lang(ex)
        if key in negative_digests:
            in_both.add(key)
            continue
        if key in taken or per_language[lang] >= data_settings.max_docs_per_language:
            continue
        taken.add(key)
        per_language[lang] += 1
        yield ex


def memory_half(ex: Example, seed: int) -> Tuple[int, bool]:
    """The half (0 or 1) of the training positives' n-gram memory an example is in, and whether it is
    hashed against the whole memory, its own text in it (one text in eight), rather than against the
    other half: the model must learn that text the memory holds whole is a person's text (a crawl
    scored by a model trained on a sample of it has its sample in the memory). Texts, not groups, are
    halved: a new text is scored against a memory that holds other text of its kind (its language,
    its site), and so is a training positive against the other half."""
    value = int(hashlib.sha1(f"{seed}:memory:{ex.text}".encode()).hexdigest()[:8], 16)
    return value % 2, value % 16 < 2


class Memories(NamedTuple):
    """``build_memories``: the halves of the training and of the validation positives, and the test ones."""

    train_halves: Tuple[NgramMemory, NgramMemory]
    valid_halves: Tuple[NgramMemory, NgramMemory]
    test: NgramMemory

    @property
    def train(self) -> NgramMemory:
        """What training negatives and test texts are hashed with."""
        return self.train_halves[0] | self.train_halves[1]

    @property
    def served(self) -> NgramMemory:
        return self.train | self.valid_halves[0] | self.valid_halves[1] | self.test

    def hashers(self, spec: HashingSpec) -> Dict[Tuple[str, int], FeatureHasher]:
        """(split, half of the text) -> the hasher of a training positive or a validation text."""
        train = self.train
        return {**{("train", half): FeatureHasher(spec, self.train_halves[1 - half]) for half in (0, 1)},
                **{("valid", half): FeatureHasher(spec, train | self.valid_halves[1 - half]) for half in (0, 1)}}


def build_memories(positive: Sequence[str], negative: Sequence[str], spec: HashingSpec, seed: int,
                   data_settings: DataSettings = DataSettings(), chunk: int = 256, member: int = 0) -> Memories:
    """The n-gram memories of the positives, streamed: each half (``memory_half``) of the training
    split's, each half of the validation split's, and the test split's.

    A training positive is hashed with the memory of the other half: against a memory that holds its
    own text, every n-gram of it is known, and the model would learn that a person's text is text it
    holds. A validation text (a positive, or a negative made of it) is hashed with the training
    memory and the other half of the validation texts: as a served text is, against a memory that
    holds other text of its language but not it, so that the threshold is chosen where the model is
    used. Test texts are hashed with the training memory alone: the card's test figures are for
    languages and sources the memory never saw. The model is served with all of them. ``member``:
    the splits of that member of the model (``split_of``)."""
    memories = [NgramMemory.empty(spec.memory_log2_bits) for _ in range(5)]  # train 0, 1; valid 0, 1; test
    pending: List[List[str]] = [[] for _ in memories]
    negative_digests = {_digest(ex.text) for ex in iter_examples(negative)}
    for ex in _taken_positives(positive, negative_digests, data_settings, set(), Counter(), set()):
        split = split_of(ex.group or ex.text, seed, member)
        part = 4 if split == "test" else memory_half(ex, seed)[0] + (2 if split == "valid" else 0)
        pending[part].append(ex.text)
        if len(pending[part]) >= chunk:
            memories[part].add(pending[part], spec)
            pending[part].clear()
    for part, texts in enumerate(pending):
        memories[part].add(texts, spec)
    return Memories((memories[0], memories[1]), (memories[2], memories[3]), memories[4])


def load_sets(positive: Sequence[str], negative: Sequence[str], hasher: FeatureHasher, seed: int,
              data_settings: DataSettings = DataSettings(), log=print,
              memories: Optional[Memories] = None, member: int = 0) -> Tuple[Dict[str, LabelledSet], dict]:
    """Read (streamed), cap per language, de-duplicate (a text in both classes is dropped), make the
    machine-made negatives, split by group and hash, a chunk of one language at a time. With
    ``memories`` (``build_memories``), a training positive and a validation text are hashed as
    ``build_memories`` says; every other text with ``hasher``'s. ``member``: that member's splits."""
    builders = {split: _SetBuilder(hasher) for split in SPLITS}
    taken = set()  # sha1 of each text taken, in either class
    per_language: Counter = Counter()
    pending: Dict[str, List[Example]] = {}
    kind_turn: Counter = Counter()
    counts: Counter = Counter()
    hashers = memories.hashers(hasher.spec) if memories else {}

    def add(examples: Sequence[Example], texts: Sequence[str], label: int, kinds: Sequence[str]) -> None:
        parts: Dict[Tuple[str, Optional[int]], list] = {}
        for ex, text, kind in zip(examples, texts, kinds):
            split = split_of(ex.group or ex.text, seed, member)
            half, whole = memory_half(ex, seed)  # a negative made of a positive: the positive's half
            if not hashers or split == "test" or (split == "train" and (not label or whole)):
                half = None
            parts.setdefault((split, half), []).append((text, (_lang(ex), kind, ex.source, ex.licence)))
            role = "positive" if label else "negative" if kind == GIVEN else "machine-made negative"
            counts[(role, ex.source, ex.licence, split)] += 1
        for (split, half), rows in parts.items():
            builders[split].add([t for t, _ in rows], label, [m for _, m in rows], hashers.get((split, half)))

    def flush(lang: str) -> None:
        chunk = pending.pop(lang, [])
        if not chunk:
            return
        add(chunk, [e.text for e in chunk], 1, [CLEAN] * len(chunk))
        # Machine-made negatives of each positive (negatives.TRAINING_TURN), given negatives or not.
        made = _machine_negatives(chunk, seed, kind_turn[lang], data_settings.negatives_per_positive)
        kind_turn[lang] += len(made)
        add([ex for ex, _, _ in made], [text for _, _, text in made], 0, [kind for _, kind, _ in made])

    negative_texts = {_digest(ex.text) for ex in iter_examples(negative)}
    in_both: set = set()
    for ex in _taken_positives(positive, negative_texts, data_settings, taken, per_language, in_both):
        lang = _lang(ex)
        pending.setdefault(lang, []).append(ex)
        if len(pending[lang]) >= data_settings.chunk_docs:
            flush(lang)
    for lang in list(pending):
        flush(lang)
    given: List[Example] = []
    for ex in iter_examples(negative):
        key = _digest(ex.text)
        if key in taken or key in in_both:
            continue
        taken.add(key)
        given.append(ex)
        if len(given) >= 1024:
            add(given, [e.text for e in given], 0, [GIVEN] * len(given))
            given = []
    add(given, [e.text for e in given], 0, [GIVEN] * len(given))
    sets = {split: builder.build() for split, builder in builders.items()}
    log(f"read {sum(per_language.values())} positives in {len(per_language)} languages")
    data = {"dropped_in_both_classes": len(in_both), "sources": _source_table(counts),
            "positives_per_language": dict(sorted(per_language.items()))}
    return sets, data


def _source_table(counts: Counter) -> List[dict]:
    rows: Dict[Tuple[str, str, str], dict] = {}
    for (label, source, licence, split), n in counts.items():
        row = rows.setdefault((label, source, licence),
                              {"label": label, "source": source, "licence": licence, **{s: 0 for s in SPLITS}})
        row[split] += n
    return sorted(rows.values(), key=lambda r: (r["label"] != "positive", r["label"], r["source"]))


class Trainer:
    """MindSpore graph-mode training with dynamic input shapes (compiled once for every batch shape)."""

    def __init__(self, hashing: HashingSpec, shape: NetShape, settings: TrainSettings, device: str = "CPU"):
        import mindspore as ms
        from mindspore import nn, ops

        from scoring_service.model.network import QualityNet, dynamic_inputs

        self.ms = ms
        ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
        ms.set_seed(settings.seed)
        self.net = QualityNet(hashing.buckets, shape, hashing.layout_vocab)

        class WeightedLoss(nn.Cell):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def construct(self, content, content_segments, lines, lines_rows, layout, labels, weights):
                logits = self.net.logits(content, content_segments, lines, lines_rows, layout)
                loss = ops.binary_cross_entropy_with_logits(logits, labels, weights, ops.ones_like(labels),
                                                            reduction="sum")
                return loss / weights.sum()

        dynamic = (*dynamic_inputs(), ms.Tensor(shape=[None], dtype=ms.float32),
                   ms.Tensor(shape=[None], dtype=ms.float32))
        optimizer = nn.Adam(self.net.trainable_params(), learning_rate=settings.learning_rate,
                            weight_decay=settings.weight_decay)
        self.step = nn.TrainOneStepCell(WeightedLoss(self.net), optimizer)
        self.step.set_inputs(*dynamic)
        self.eval_loss = WeightedLoss(self.net)
        self.eval_loss.set_inputs(*dynamic)

        class Scores(nn.Cell):  # the network's scores, compiled once for dynamic shapes as the losses are
            def __init__(self, net):
                super().__init__()
                self.net = net

            def construct(self, content, content_segments, lines, lines_rows, layout):
                return self.net(content, content_segments, lines, lines_rows, layout)

        self.predict = Scores(self.net)
        self.predict.set_inputs(*dynamic_inputs())

    def train_epoch(self, data: LabelledSet, weights: np.ndarray, batch_size: int, rng) -> float:
        ms = self.ms
        self.step.set_train(True)
        total, n = 0.0, 0
        for rows, batch in data.batches(batch_size, rng):
            loss = self.step(*(ms.Tensor(part) for part in batch), ms.Tensor(data.labels[rows]),
                             ms.Tensor(weights[rows]))
            total += float(loss.asnumpy()) * len(rows)
            n += len(rows)
        return total / max(n, 1)

    def loss(self, data: LabelledSet, weights: np.ndarray, batch_size: int = 256) -> float:
        ms = self.ms
        self.eval_loss.set_train(False)
        total = 0.0
        for rows, batch in data.batches(batch_size, None):
            batch_loss = self.eval_loss(*(ms.Tensor(part) for part in batch), ms.Tensor(data.labels[rows]),
                                        ms.Tensor(weights[rows]))
            total += float(batch_loss.asnumpy()) * float(weights[rows].sum())
        return total / float(weights.sum())

    def scores(self, data: LabelledSet, batch_size: int = 256) -> np.ndarray:
        """P(high quality) of each text of ``data``, by the network as it is now."""
        self.predict.set_train(False)
        out = [self.predict(*(self.ms.Tensor(part) for part in batch)).asnumpy()
               for _, batch in data.batches(batch_size, None)]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)

    def copy_to(self, net) -> None:
        """This network's weights into ``net``, a network of the same shape (a member of a ``MemberMean``)."""
        for source, target in zip(self.net.trainable_params(), net.trainable_params()):
            assert target.name.split(".")[-2:] == source.name.split(".")[-2:], (source.name, target.name)
            target.set_data(self.ms.Tensor(source.asnumpy()))

    def snapshot(self) -> Dict[str, np.ndarray]:
        return {p.name: p.asnumpy().copy() for p in self.net.trainable_params()}

    def restore(self, values: Dict[str, np.ndarray]) -> None:
        for p in self.net.trainable_params():
            p.set_data(self.ms.Tensor(values[p.name]))


def class_weights(data: LabelledSet) -> np.ndarray:
    """Each class weighs half of the loss, whatever the class sizes; within the negatives, the given
    ones (e.g. furniture) weigh as much as the machine-made ones together, so that neither judgement
    is learned at the other's expense."""
    groups = np.where(data.labels > 0, 0, np.where(data.kinds == GIVEN, 1, 2))
    sizes = np.bincount(groups, minlength=3).astype(np.float64)
    shares = np.array([0.5, 0.25, 0.25]) if sizes[1] and sizes[2] else np.array([0.5, 0.5, 0.5])
    return (shares[groups] * len(groups) / np.maximum(sizes[groups], 1.0)).astype(np.float32)


def evaluation_sets(eval_dir: Optional[str]) -> Dict[str, Tuple[List[str], List[str]]]:
    """``<eval_dir>/<name>/{positive,negative}.jsonl`` → held-out sets scored into the card."""
    out = {}
    if not eval_dir:
        return out
    for name in sorted(os.listdir(eval_dir)):
        folder = os.path.join(eval_dir, name)
        pos, neg = os.path.join(folder, "positive.jsonl"), os.path.join(folder, "negative.jsonl")
        if os.path.exists(pos) and os.path.exists(neg):
            out[name] = ([e.text for e in read_examples([pos])], [e.text for e in read_examples([neg])])
    return out


def machine_sets(eval_dir: Optional[str], hasher: FeatureHasher, seed: int) -> Dict[str, LabelledSet]:
    """``<eval_dir>/<name>/clean.jsonl`` (with ``lang``): held-out clean texts, each with a negative of
    every kind made from it; chains, templates and spun words draw on ``pool.jsonl`` beside it (other
    text of the same languages, read for nothing else), else on the other half of the clean texts."""
    out: Dict[str, LabelledSet] = {}
    if not eval_dir:
        return out
    for name in sorted(os.listdir(eval_dir)):
        folder = os.path.join(eval_dir, name)
        clean_path, pool_path = os.path.join(folder, "clean.jsonl"), os.path.join(folder, "pool.jsonl")
        if not os.path.exists(clean_path):
            continue
        by_lang: Dict[str, List[Example]] = {}
        for ex in iter_examples([clean_path]):
            by_lang.setdefault(_lang(ex), []).append(ex)
        pool_texts: Dict[str, List[str]] = {}
        if os.path.exists(pool_path):
            for ex in iter_examples([pool_path]):
                pool_texts.setdefault(_lang(ex), []).append(ex.text)
        builder = _SetBuilder(hasher)
        for lang, examples in by_lang.items():
            builder.add([e.text for e in examples], 1, [(lang, CLEAN, e.source, e.licence) for e in examples])
            half = len(examples) // 2
            for part, other in ((examples[:half], examples[half:]), (examples[half:], examples[:half])):
                pool = negatives.LanguagePool(pool_texts.get(lang) or [e.text for e in other])
                for kind in negatives.kinds_for(pool):
                    made = [negatives.make(kind, e.text, random.Random(f"{seed}:{kind}:{e.text}"), pool) for e in part]
                    builder.add(made, 0, [(lang, kind, e.source, e.licence) for e in part])
        out[name] = builder.build()
    return out


def per_language(data: LabelledSet, scores: np.ndarray, threshold_of) -> Dict[str, dict]:
    """Per language: its clean texts (how many, the share kept at its threshold) and, per negative
    kind, the AUC of clean against that kind and the share of that kind rejected."""
    out: Dict[str, dict] = {}
    for lang in sorted(set(data.langs)):
        mine = data.langs == lang
        clean = mine & (data.kinds == CLEAN)
        if not clean.any():
            continue
        threshold = threshold_of(lang)
        row = {"n_clean": int(clean.sum()), "threshold": threshold,
               "kept": round(float((scores[clean] >= threshold).mean()), 4),
               "sources": sorted(set(data.sources[clean])), "kinds": {}}
        for kind in sorted(set(data.kinds[mine]) - {CLEAN}):
            negative = mine & (data.kinds == kind)
            both = clean | negative
            row["kinds"][kind] = {"n": int(negative.sum()),
                                  "auc": round(evaluation.roc_auc(data.labels[both], scores[both]), 4),
                                  "rejected": round(float((scores[negative] < threshold).mean()), 4)}
        out[lang] = row
    return out


def thresholds_by_language(data: LabelledSet, scores: np.ndarray, min_each: int = 20) -> Dict[str, float]:
    """The validation P-R threshold of each language with at least ``min_each`` texts of each class."""
    out = {}
    for lang in sorted(set(data.langs) - {"und"}):  # texts of no stated language: the model's threshold
        mine = data.langs == lang
        n_pos = int(data.labels[mine].sum())
        if n_pos >= min_each and int(mine.sum()) - n_pos >= min_each:
            out[lang] = round(evaluation.best_f1_threshold(data.labels[mine], scores[mine]), 4)
    return out


class TrainedMember(NamedTuple):
    """One network of a model (``_train_member``): its trainer at its best epoch, its validation texts
    and their scores, and, the same for every member (``None`` once the first member holds them), the
    test split, the hasher, the memory served and what was read."""

    trainer: "Trainer"
    valid: LabelledSet
    valid_scores: np.ndarray
    history: List[dict]
    best_loss: float
    test: Optional[LabelledSet]
    hasher: Optional[FeatureHasher]
    served_memory: Optional[NgramMemory]
    data: Optional[dict]


def _train_member(positive: Sequence[str], negative: Sequence[str], hashing: HashingSpec, shape: NetShape,
                  settings: TrainSettings, data_settings: DataSettings, member: int, device: str,
                  log) -> TrainedMember:
    """Member ``member`` of a model, on its splits (``split_of``), to the epoch of its lowest validation loss."""
    started = time.time()
    if shape.members > 1:
        log(f"member {member + 1} of {shape.members}")
    memories, served_memory = None, None
    if hashing.memory_log2_bits:
        memories = build_memories(positive, negative, hashing, settings.seed, data_settings, member=member)
        served_memory = memories.served
        hashing = replace(hashing, memory_sha256=served_memory.sha256)
    hasher = FeatureHasher(hashing, memories.train if memories else None)
    sets, data = load_sets(positive, negative, hasher, settings.seed, data_settings, log, memories, member)
    if served_memory is not None:
        data["memory_fill"] = round(served_memory.fill(), 4)
        log(f"n-gram memory: 2**{hashing.memory_log2_bits} bits, {data['memory_fill']:.1%} set"
            + (" (so many that unknown n-grams often read as known: raise --memory-bits)"
               if data["memory_fill"] > MEMORY_FILL_WARNING else ""))
    for split in SPLITS:
        labels = sets[split].labels
        if len(labels) == 0 or labels.min() == labels.max():
            raise ValueError(f"{split} split needs both classes; got {int(labels.sum())} positive of {len(labels)}")
    log(f"train {len(sets['train'].labels)}  valid {len(sets['valid'].labels)}  test {len(sets['test'].labels)}  "
        f"(read and hashed in {time.time() - started:.0f} s)")

    member_settings = replace(settings, seed=settings.seed + member)  # its own initial weights and batches
    trainer = Trainer(hashing, shape, member_settings, device)
    rng = np.random.default_rng(member_settings.seed)
    train_w, valid_w = class_weights(sets["train"]), class_weights(sets["valid"])
    best, best_loss, history, stale = None, float("inf"), [], 0
    for epoch in range(1, settings.epochs + 1):
        train_loss = trainer.train_epoch(sets["train"], train_w, settings.batch_size, rng)
        valid_loss = trainer.loss(sets["valid"], valid_w)
        history.append({"epoch": epoch, "train_loss": round(train_loss, 5), "valid_loss": round(valid_loss, 5)})
        log(f"epoch {epoch:>2}  train loss {train_loss:.4f}  valid loss {valid_loss:.4f}")
        if valid_loss < best_loss - 1e-4:
            best, best_loss, stale = trainer.snapshot(), valid_loss, 0
        else:
            stale += 1
            if stale >= settings.patience:
                log(f"early stop: no validation improvement for {settings.patience} epochs")
                break
    trainer.restore(best)
    return TrainedMember(trainer, sets["valid"], trainer.scores(sets["valid"]), history, best_loss, sets["test"],
                         hasher, served_memory, data)


def train(positive: Sequence[str], negative: Sequence[str], out_dir: str, name: str, version: str,
          hashing: HashingSpec = HashingSpec(), shape: NetShape = NetShape(),
          settings: TrainSettings = TrainSettings(), eval_dir: Optional[str] = None,
          notes: Optional[str] = None, log=print, data_settings: DataSettings = DataSettings(),
          device: str = "CPU") -> ModelInfo:
    import mindspore as ms

    from scoring_service.model.network import MemberMean, export_mindir
    from scoring_service.model.scorer import TextScorer

    started = time.time()
    members: List[TrainedMember] = []
    for member in range(shape.members):
        trained = _train_member(positive, negative, hashing, shape, settings, data_settings, member, device, log)
        # The test split, the hasher's training memory and the served memory, kept once: at 2**33 bits a
        # memory is 1 GiB.
        members.append(trained._replace(test=None, hasher=None, served_memory=None, data=None) if members
                       else trained)
    first = members[0]
    hashing, data = first.hasher.spec, first.data  # every member's served memory holds every positive
    train_s = time.time() - started

    os.makedirs(out_dir, exist_ok=True)
    if shape.members == 1:
        net = first.trainer.net
    else:
        net = MemberMean(hashing.buckets, shape, hashing.layout_vocab)
        for k, member in enumerate(members):
            member.trainer.copy_to(net.members[k])
    ms.save_checkpoint(net, os.path.join(out_dir, CHECKPOINT))
    mindir = export_mindir(net, out_dir)
    for path in (os.path.join(out_dir, CHECKPOINT), mindir):
        os.chmod(path, 0o644)  # MindSpore writes them owner-read-only
    info = ModelInfo(name=name, version=version, hashing=hashing, shape=shape)
    write_info(out_dir, info)
    if first.served_memory is not None:
        write_memory(out_dir, first.served_memory)

    # The threshold: each member's validation texts scored by that member, the one that never trained on them.
    valid = LabelledSet.concat([member.valid for member in members])
    valid_scores = np.concatenate([member.valid_scores for member in members])
    info.threshold = round(evaluation.best_f1_threshold(valid.labels, valid_scores), 4)
    info.threshold_by_language = thresholds_by_language(valid, valid_scores)
    # Everything below is measured on the exported MindIR: the artifact that is served.
    scorer = TextScorer.load(out_dir)
    test = first.test
    test_scores = scorer.score_bags(test.bags)
    threshold_of = info.threshold_for
    info.metrics = {
        "valid": evaluation.summary(valid.labels, valid_scores, info.threshold),
        "test": evaluation.summary(test.labels, test_scores, info.threshold, curve_points=19),
        "per_source_test": _per_source(test, test_scores, info.threshold),
        "per_language_test": per_language(test, test_scores, threshold_of),
        "evaluation": {}, "machine_made": {},
    }
    for set_name, (pos, neg) in evaluation_sets(eval_dir).items():
        scores = scorer.score(pos + neg)
        labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
        info.metrics["evaluation"][set_name] = evaluation.summary(labels, scores, info.threshold)
    for set_name, held_out in machine_sets(eval_dir, first.hasher, settings.seed).items():
        info.metrics["machine_made"][set_name] = per_language(held_out, scorer.score_bags(held_out.bags),
                                                              threshold_of)
    write_info(out_dir, info)
    training = {"settings": asdict(settings), "data_settings": asdict(data_settings), "device": device,
                "history": [member.history for member in members],
                "best_valid_loss": [round(member.best_loss, 5) for member in members], "train_s": round(train_s, 1),
                "wall_s": round(time.time() - started, 1), "command": " ".join(["python -m scoring_service", *sys.argv[1:]]),
                "trained_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    with open(os.path.join(out_dir, CARD), "w", encoding="utf-8") as fh:
        fh.write(model_card(info, data, training, notes))
    log(f"threshold {info.threshold}  test AUC {info.metrics['test']['auc']}  "
        f"P {info.metrics['test']['precision']}  R {info.metrics['test']['recall']}  -> {out_dir}")
    return info


def _per_source(data: LabelledSet, scores: np.ndarray, threshold: float) -> Dict[str, dict]:
    """Share of each source's test documents on the right side of the threshold, per class."""
    out: Dict[str, dict] = {}
    keys = np.array([f"positive/{source}" if kind == CLEAN else f"negative/{source}" if kind == GIVEN
                     else f"machine-made/{kind}" for source, kind in zip(data.sources, data.kinds)], dtype=object)
    for key in sorted(set(keys)):
        idx = np.flatnonzero(keys == key)
        correct = (scores[idx] >= threshold) == (data.labels[idx] > 0)
        out[key] = {"n": int(len(idx)), "correct": round(float(correct.mean()), 4),
                    "median_score": round(float(np.median(scores[idx])), 4)}
    return out


def model_card(info: ModelInfo, data: dict, training: dict, notes: Optional[str]) -> str:
    m = info.metrics
    h = info.hashing
    lines = [
        f"# Model card: {info.name} (version {info.version})", "",
        "A small MindSpore text classifier that scores how much a document reads like fluent text written by a "
        "person for a reader, as opposed to web furniture (menus, footers, link lists, notices), short informal "
        "or spam text, and machine-made text (shuffled or spun words, n-gram chains, slot-filled templates, "
        "padded filler). Output: P(high quality) in [0, 1]; one score per document.",
        "",
        "## Architecture",
        f"- Content bag ({h.buckets} hashed buckets): character n-grams {list(h.char_ngrams)}, word 1..{h.word_ngrams}-grams "
        "(word bigrams and trigrams read word order; a character of a script written without spaces — Han, kana"
        + (", Thai, Lao, Khmer, Myanmar" if h.spaceless_scripts else "") + (", Yi" if h.script_words else "")
        + " — is a word"
        + ("; in Thai, Lao, Khmer and Myanmar, with the marks written on it and the letter stacked under it"
           if h.spaceless_scripts and h.spaceless_clusters else "")
        + ("; Tibetan and Ethiopic words end at the tsheg and the wordspace, a Hangul word at a space" if h.script_words
           else "") + "); "
        f"text lower-cased, digits mapped to 0"
        + (", the sentence marks of other scripts (danda, Arabic, Ethiopic, Armenian, Myanmar, Khmer, Tibetan) read "
           "as ASCII ones" if h.script_words else "") + f"; first {h.max_chars} characters read.",
        "- Line bag: each line's and each pair of lines' shape (length × ending); the furniture signal.",
        "- Layout bag: document statistics in buckets"
        + ("; and word-order statistics that carry to languages never seen in training: the document's "
           "repeated bigrams and trigrams against a seeded shuffle of its own words (natural text repeats them "
           "far above what its word frequencies predict; shuffled text does not, a chain is in between), its "
           "repeated-bigram and near-repeat word rates, the spread and mean of its sentence lengths, the share "
           "of its sentences that start with a capital and of its other words that do (a shuffle moves the capital)"
           if h.order_stats else "") + "."
        + (f" And the n-gram memory (`{MEMORY}`, 2**{h.memory_log2_bits} bits, {data.get('memory_fill', 0):.1%} set): "
           "the words, word pairs and triples of the positives as hashed bits. Its features: of a document's "
           "pairs of known words, the share of known pairs; of its triples of known pairs, the share of known "
           "triples (a chain is known pairs in unknown triples, shuffled words known words in unknown pairs)"
           + ("; and the pair share over the share of its pairs of words one apart, asked as pairs (about "
              "equal in shuffled words, whether the memory knows the text's subject well or little)"
              if h.memory_skip_pairs else "") + ". "
           "A training positive is hashed against the memory of the other half of the training positives "
           "(texts halved, not groups), one text in eight against the whole, its own text in it; a validation "
           "text against the training split's and the other half of the validation texts (as a served text is: "
           "other text of its language known, itself not), so the threshold is chosen there; test texts against "
           "the training split's alone. The memory served holds every positive."
           if h.memory_log2_bits else ""),
        f"- Each bag an embedding bag (dim {info.shape.dim}, mean) → Dense({info.shape.hidden}, ReLU) → Dense(1) → "
        "sigmoid. One model judges furniture and fluency together: the furniture negatives and the machine-made "
        "negatives are trained in the same loss, so a single score and threshold serve both. Every row is "
        "computed on its own, so a text scores the same in any batch."
        + (f" {info.shape.members} such networks (members), each validated on another tenth of the groups and "
           "trained on the rest but the test split; the score is the mean of their probabilities."
           if info.shape.members > 1 else ""),
        f"- Files: `{MINDIR}` (inputs: `features.Encoded`), `{CHECKPOINT}`, `{MODEL_JSON}`"
        + (f", `{MEMORY}`" if h.memory_log2_bits else "") + ".",
        "",
        "## Training data", "",
        "Machine-made negatives are made from the positives while reading them (`scoring_service/training/"
        f"negatives.py`): {training['data_settings']['negatives_per_positive']} per positive, each of another kind, "
        "the kinds of `negatives.TRAINING_TURN` in turn ("
        + ", ".join(sorted(set(negatives.TRAINING_TURN))) + "), chains and templates from a pool of OTHER "
        "positives of the same language. Every kind, trained or not, is measured in the tables below.", "",
        "| label | source | licence | train | valid | test |", "|---|---|---|---|---|---|",
    ]
    for row in data["sources"]:
        lines.append(f"| {row['label']} | {row['source']} | {row['licence']} | {row['train']} | {row['valid']} | {row['test']} |")
    languages = data.get("positives_per_language", {})
    lines += ["", f"Texts present in both classes were dropped ({data['dropped_in_both_classes']}). "
              "Splits are by group (site, page, book, speech, file), 80/10/10"
              + (" for each member, all of them tested on the same tenth (the table counts the first member's)"
                 if info.shape.members > 1 else "") + ". "
              f"Positives in {len(languages)} languages (at most {training['data_settings']['max_docs_per_language']} "
              "per language).", ""]
    lines += ["## Threshold", "",
              f"**{info.threshold}** — from the validation P-R curve"
              + (" (each member's validation texts scored by that member)" if info.shape.members > 1 else "")
              + ", the negatives weighted to weigh as much as "
              "the positives (so that the threshold does not move with how many negatives training made): of the "
              "thresholds whose F1 is within 0.005 of the best, the one nearest 0.5 (the class-balanced boundary; "
              "F1 is flat there). "
              "The score is stored by the pipeline and the threshold applied separately, so a new "
              "threshold needs no re-scoring.", ""]
    if info.threshold_by_language:
        lines += ["Per language (`threshold_by_language` in `model.json`, from each language's own validation "
                  "P-R curve, for languages with at least 20 validation texts of each class; the score stage's "
                  "`score.threshold_by_language` overrides it):", "",
                  "| lang | threshold |", "|---|---|"]
        lines += [f"| {lang} | {t} |" for lang, t in info.threshold_by_language.items()]
        lines.append("")
    lines += ["## Held-out test metrics (exported MindIR)", "",
              "| n pos | n neg | AUC | precision | recall | F1 | accuracy |", "|---|---|---|---|---|---|---|",
              _metric_row(m["test"]), "", "P-R curve (test split):", "",
              "| threshold | precision | recall |", "|---|---|---|"]
    lines += [f"| {p['threshold']} | {p['precision']} | {p['recall']} |" for p in m["test"]["pr_curve"]]
    lines += ["", "Per source (test split): share on the correct side of the threshold, median score.", "",
              "| source | n | correct | median score |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['correct']} | {v['median_score']} |" for k, v in m["per_source_test"].items()]
    lines += ["", "## Per language, test split", ""] + _language_table(m["per_language_test"])
    for set_name, table in m.get("machine_made", {}).items():
        lines += ["", f"## Per language, held-out set `{set_name}`", "",
                  "Clean held-out text against a negative of every kind made from each clean text."] + [""]
        lines += _language_table(table)
    if m["evaluation"]:
        lines += ["", "## Out-of-distribution evaluation (sources never used for training)", "",
                  "| set | n pos | n neg | AUC | precision | recall | F1 | accuracy |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {k} " + _metric_row(v) for k, v in m["evaluation"].items()]
    lines += ["", "## Training", "",
              f"- Settings: {json.dumps(training['settings'])}; data: {json.dumps(training['data_settings'])}; "
              f"device {training['device']}.",
              f"- Epochs run: {', '.join(str(len(h)) for h in training['history'])}, best validation loss "
              f"{', '.join(map(str, training['best_valid_loss']))} (per member), "
              f"wall time {training['wall_s']} s (reading, corrupting, hashing and training: {training['train_s']} s), "
              f"trained {training['trained_at']}.",
              f"- Command: `{training['command']}`", ""]
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)


def _language_table(table: Dict[str, dict]) -> List[str]:
    """Per language: clean texts kept at its threshold; per kind AUC against clean / share rejected."""
    kinds = [k for k in negatives.KINDS + (GIVEN,) if any(k in row["kinds"] for row in table.values())]
    lines = ["Each kind: AUC of clean against it / share of it rejected at the language's threshold.", "",
             "| lang | sources | n clean | kept | " + " | ".join(kinds) + " |",
             "|---|---|---|---|" + "---|" * len(kinds)]
    for lang, row in table.items():
        cells = [f"{row['kinds'][k]['auc']:.2f} / {row['kinds'][k]['rejected']:.0%}" if k in row["kinds"] else ""
                 for k in kinds]
        lines.append(f"| {lang} | {', '.join(row['sources'])} | {row['n_clean']} | {row['kept']:.0%} | "
                     + " | ".join(cells) + " |")
    lines.append("")
    lines += _language_summary(table)
    return lines


def _language_summary(table: Dict[str, dict]) -> List[str]:
    """How many languages meet the fluency targets: keep >= 90 % of clean text, reject >= 90 % of
    shuffled and >= 80 % of bigram-chain text."""
    judged = [row for row in table.values() if "shuffled" in row["kinds"] and "chain2" in row["kinds"]]
    if not judged:
        return []
    met = sum(row["kept"] >= 0.9 and row["kinds"]["shuffled"]["rejected"] >= 0.9
              and row["kinds"]["chain2"]["rejected"] >= 0.8 for row in judged)
    median = {k: float(np.median([row["kinds"][k]["auc"] for row in judged if k in row["kinds"]]))
              for k in ("shuffled", "chain2", "template") if any(k in row["kinds"] for row in judged)}
    return [f"{met} of {len(judged)} languages keep >= 90 % of clean text while rejecting >= 90 % of shuffled and "
            f">= 80 % of bigram-chain (chain2) text. Median AUC: "
            + ", ".join(f"{k} {v:.3f}" for k, v in median.items()) + "."]


def _metric_row(s: dict) -> str:
    return (f"| {s['n_positive']} | {s['n_negative']} | {s['auc']} | {s['precision']} | {s['recall']} "
            f"| {s['f1']} | {s['accuracy']} |")
