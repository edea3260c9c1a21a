"""Train a quality model from positive and negative texts; save checkpoint, MindIR and model card.

    python -m scoring_service train --positive 'good/*.jsonl' --negative 'bad/*.txt' --out models/mine

Documents are split by group (the pages of one site, the chapters of one book stay together) into
train / validation / test (80/10/10), so held-out figures are not inflated by near-copies. Training
stops when the validation loss has not improved for ``patience`` epochs and keeps the best epoch.
The threshold comes from the validation P-R curve (``evaluation.best_f1_threshold``: F1-optimal, taken
robustly); the test split (never used for any choice) gives the reported precision, recall and AUC,
measured on the exported MindIR.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from scoring_service.model.artifacts import CARD, CHECKPOINT, MINDIR, MODEL_JSON, ModelInfo, NetShape, write_info
from scoring_service.model.features import Bags, FeatureHasher, HashingSpec
from scoring_service.training import evaluation
from scoring_service.training.corpus import Example, read_examples

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class TrainSettings:
    epochs: int = 30
    patience: int = 3
    batch_size: int = 64
    learning_rate: float = 3e-3
    weight_decay: float = 1e-6
    seed: int = 13


def split_of(group: str, seed: int) -> str:
    """Deterministic 80/10/10 split by group."""
    bucket = int(hashlib.sha1(f"{seed}:{group}".encode()).hexdigest()[:8], 16) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 else "train"


@dataclass
class LabelledSet:
    examples: List[Example]
    labels: np.ndarray  # float32, 1 = high quality
    bags: Bags  # one row per example

    def batches(self, batch_size: int, rng: Optional[np.random.Generator]):
        """Batches of ``batch_size`` examples as the network takes them; shuffled when ``rng`` is given."""
        order = rng.permutation(self.bags.rows) if rng is not None else np.arange(self.bags.rows)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            yield rows, self.bags.encoded(rows)


def encode_all(hasher: FeatureHasher, texts: Sequence[str], chunk: int = 512) -> Bags:
    parts = [hasher.encode_bags(texts[start:start + chunk]) for start in range(0, len(texts), chunk)]
    return Bags.concat(parts) if parts else hasher.encode_bags([])


def load_sets(positive: Sequence[str], negative: Sequence[str], hasher: FeatureHasher,
              seed: int) -> Tuple[Dict[str, LabelledSet], dict]:
    """Read, de-duplicate (a text in both classes is dropped), split and hash."""
    pos, neg = read_examples(positive), read_examples(negative)
    both = {e.text for e in pos} & {e.text for e in neg}
    by_text: Dict[str, Tuple[Example, int]] = {}
    for label, examples in ((1, pos), (0, neg)):
        for ex in examples:
            if ex.text not in both:
                by_text.setdefault(ex.text, (ex, label))
    parts: Dict[str, List[Tuple[Example, int]]] = {s: [] for s in SPLITS}
    for ex, label in by_text.values():
        parts[split_of(ex.group or ex.text, seed)].append((ex, label))
    sets = {}
    for name, rows in parts.items():
        examples = [ex for ex, _ in rows]
        sets[name] = LabelledSet(examples, np.array([lb for _, lb in rows], dtype=np.float32),
                                 encode_all(hasher, [ex.text for ex in examples]))
    sources = Counter()
    for name, s in sets.items():
        for ex, label in zip(s.examples, s.labels):
            sources[("positive" if label else "negative", ex.source, ex.licence, name)] += 1
    data = {"dropped_in_both_classes": len(both), "sources": _source_table(sources)}
    return sets, data


def _source_table(counts: Counter) -> List[dict]:
    rows: Dict[Tuple[str, str, str], dict] = {}
    for (label, source, licence, split), n in counts.items():
        row = rows.setdefault((label, source, licence),
                              {"label": label, "source": source, "licence": licence, **{s: 0 for s in SPLITS}})
        row[split] += n
    return sorted(rows.values(), key=lambda r: (r["label"] != "positive", r["source"]))


class Trainer:
    """MindSpore graph-mode training with dynamic input shapes (compiled once for every batch shape)."""

    def __init__(self, buckets: int, shape: NetShape, settings: TrainSettings):
        import mindspore as ms
        from mindspore import nn, ops

        from scoring_service.model.network import QualityNet, dynamic_inputs

        self.ms = ms
        ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
        ms.set_seed(settings.seed)
        self.net = QualityNet(buckets, shape)

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

    def snapshot(self) -> Dict[str, np.ndarray]:
        return {p.name: p.asnumpy().copy() for p in self.net.trainable_params()}

    def restore(self, values: Dict[str, np.ndarray]) -> None:
        for p in self.net.trainable_params():
            p.set_data(self.ms.Tensor(values[p.name]))


def class_weights(labels: np.ndarray) -> np.ndarray:
    """Each class weighs half of the loss, whatever the class sizes."""
    n_pos = max(float(labels.sum()), 1.0)
    n_neg = max(float(len(labels) - labels.sum()), 1.0)
    return np.where(labels > 0, len(labels) / (2 * n_pos), len(labels) / (2 * n_neg)).astype(np.float32)


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


def train(positive: Sequence[str], negative: Sequence[str], out_dir: str, name: str, version: str,
          hashing: HashingSpec = HashingSpec(), shape: NetShape = NetShape(),
          settings: TrainSettings = TrainSettings(), eval_dir: Optional[str] = None,
          notes: Optional[str] = None, log=print) -> ModelInfo:
    import mindspore as ms

    from scoring_service.model.network import export_mindir
    from scoring_service.model.scorer import TextScorer

    started = time.time()
    hasher = FeatureHasher(hashing)
    sets, data = load_sets(positive, negative, hasher, settings.seed)
    for split in SPLITS:
        labels = sets[split].labels
        if len(labels) == 0 or labels.min() == labels.max():
            raise ValueError(f"{split} split needs both classes; got {int(labels.sum())} positive of {len(labels)}")
    log(f"train {len(sets['train'].labels)}  valid {len(sets['valid'].labels)}  test {len(sets['test'].labels)}")

    trainer = Trainer(hashing.buckets, shape, settings)
    rng = np.random.default_rng(settings.seed)
    train_w, valid_w = class_weights(sets["train"].labels), class_weights(sets["valid"].labels)
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

    os.makedirs(out_dir, exist_ok=True)
    ms.save_checkpoint(trainer.net, os.path.join(out_dir, CHECKPOINT))
    mindir = export_mindir(trainer.net, out_dir)
    for path in (os.path.join(out_dir, CHECKPOINT), mindir):
        os.chmod(path, 0o644)  # MindSpore writes them owner-read-only
    info = ModelInfo(name=name, version=version, hashing=hashing, shape=shape)
    write_info(out_dir, info)

    # Everything below is measured on the exported MindIR: the artifact that is served.
    scorer = TextScorer.load(out_dir)
    valid_scores = scorer.score([e.text for e in sets["valid"].examples])
    info.threshold = round(evaluation.best_f1_threshold(sets["valid"].labels, valid_scores), 4)
    test_scores = scorer.score([e.text for e in sets["test"].examples])
    info.metrics = {
        "valid": evaluation.summary(sets["valid"].labels, valid_scores, info.threshold),
        "test": evaluation.summary(sets["test"].labels, test_scores, info.threshold, curve_points=19),
        "per_source_test": _per_source(sets["test"], test_scores, info.threshold),
        "evaluation": {},
    }
    for set_name, (pos, neg) in evaluation_sets(eval_dir).items():
        scores = scorer.score(pos + neg)
        labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
        info.metrics["evaluation"][set_name] = evaluation.summary(labels, scores, info.threshold)
    write_info(out_dir, info)
    training = {"settings": asdict(settings), "history": history, "best_valid_loss": round(best_loss, 5),
                "wall_s": round(time.time() - started, 1), "command": " ".join(sys.argv),
                "trained_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    with open(os.path.join(out_dir, CARD), "w", encoding="utf-8") as fh:
        fh.write(model_card(info, data, training, notes))
    log(f"threshold {info.threshold}  test AUC {info.metrics['test']['auc']}  "
        f"P {info.metrics['test']['precision']}  R {info.metrics['test']['recall']}  -> {out_dir}")
    return info


def _per_source(data: LabelledSet, scores: np.ndarray, threshold: float) -> Dict[str, dict]:
    """Share of each source's test documents on the right side of the threshold, per class."""
    out: Dict[str, dict] = {}
    keys = [("positive" if label > 0 else "negative", e.source) for e, label in zip(data.examples, data.labels)]
    for key in sorted(set(keys)):
        idx = np.array([i for i, k in enumerate(keys) if k == key])
        correct = (scores[idx] >= threshold) == (data.labels[idx] > 0)
        out["/".join(key)] = {"n": int(len(idx)), "correct": round(float(correct.mean()), 4),
                              "median_score": round(float(np.median(scores[idx])), 4)}
    return out


def model_card(info: ModelInfo, data: dict, training: dict, notes: Optional[str]) -> str:
    m = info.metrics
    lines = [
        f"# Model card: {info.name} (version {info.version})", "",
        "A small MindSpore text classifier that scores how much a document reads like written prose "
        "(books, speeches, encyclopaedia articles, article bodies) as opposed to web boilerplate "
        "(menus, footers, link lists, notices) and short informal or spam text. Output: P(high quality) in [0, 1].",
        "",
        "## Architecture",
        f"- Hashed features ({info.hashing.buckets} buckets): character n-grams {list(info.hashing.char_ngrams)} "
        f"(CJK text is covered by these; no segmenter), word 1..{info.hashing.word_ngrams}-grams; "
        f"text lower-cased, digits mapped to 0, first {info.hashing.max_chars} characters read.",
        f"- Embedding bag (dim {info.shape.dim}, mean) → Dense({info.shape.hidden}, ReLU) → Dense(1) → sigmoid.",
        f"- Files: `{MINDIR}` (inputs: `features.Encoded`), `{CHECKPOINT}`, `{MODEL_JSON}`.",
        "",
        "## Training data", "",
        "| label | source | licence | train | valid | test |", "|---|---|---|---|---|---|",
    ]
    for row in data["sources"]:
        lines.append(f"| {row['label']} | {row['source']} | {row['licence']} | {row['train']} | {row['valid']} | {row['test']} |")
    lines += ["", f"Texts present in both classes were dropped ({data['dropped_in_both_classes']}). "
              "Splits are by group (page, book, speech, file), 80/10/10.", ""]
    lines += ["## Threshold", "",
              f"**{info.threshold}** — from the validation P-R curve: of the thresholds whose F1 "
              "is within 0.005 of the best, the one nearest 0.5 (the class-balanced boundary; F1 is flat there). "
              "The score is stored by the pipeline and the threshold applied separately, so a new "
              "threshold needs no re-scoring.", "",
              "## Held-out test metrics (exported MindIR)", "",
              "| n pos | n neg | AUC | precision | recall | F1 | accuracy |", "|---|---|---|---|---|---|---|",
              _metric_row(m["test"]), "", "P-R curve (test split):", "",
              "| threshold | precision | recall |", "|---|---|---|"]
    lines += [f"| {p['threshold']} | {p['precision']} | {p['recall']} |" for p in m["test"]["pr_curve"]]
    lines += ["", "Per source (test split): share on the correct side of the threshold, median score.", "",
              "| source | n | correct | median score |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['correct']} | {v['median_score']} |" for k, v in m["per_source_test"].items()]
    if m["evaluation"]:
        lines += ["", "## Out-of-distribution evaluation (sources never used for training)", "",
                  "| set | n pos | n neg | AUC | precision | recall | F1 | accuracy |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {k} " + _metric_row(v) for k, v in m["evaluation"].items()]
    lines += ["", "## Training", "",
              f"- Settings: {json.dumps(training['settings'])}",
              f"- Epochs run: {len(training['history'])}, best validation loss {training['best_valid_loss']}, "
              f"wall time {training['wall_s']} s, trained {training['trained_at']}.",
              f"- Command: `{training['command']}`", ""]
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)


def _metric_row(s: dict) -> str:
    return (f"| {s['n_positive']} | {s['n_negative']} | {s['auc']} | {s['precision']} | {s['recall']} "
            f"| {s['f1']} | {s['accuracy']} |")
