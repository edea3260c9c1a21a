"""Train the block pass of the boilerplate filter (``udfs/extract/boilerplate.py``: ``BlockModel``) from the
two extraction development sets, with cross-set validation.

    python -m tools.train_block_classifier [--out udfs/extract/models/block_classifier.json]

Every page goes through the extract stage's own path up to the block pass (``main_content_units``),
so the model sees the units it will judge; it learns from those. Scores are of the stage's whole
path, ``kept_units``: where the main content kept is near-empty, the whole page's units
(``whole_page_units``) may replace it (``main_or_whole_page``). A unit's label comes from the set's
gold:

- readability-tests: content when most of its word 4-grams (or, if shorter, its whole word
  sequence) are in the article Readability keeps; weighted by its share of the page's words, so each
  page counts once, as in the per-page score.
- trafilatura-eval: content when it holds a snippet that must appear, not content when it holds one
  that must not; the rest of the page is unlabelled.

The model is a logistic regression (L2) on standardised features; the standardisation is folded into
the saved weights. The keep threshold maximises the training set's F1 (the bench's score, after the
line pass and normalisation, as the extract stage produces text). Printed: train on one set, score
the other, both ways, then the shipped model (trained on both) on each.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Dict, List

import numpy as np
from scipy.optimize import minimize

from tools.extraction_devsets import LOADERS, SETS, score, shingles, tokens_of
from udfs.extract.boilerplate import FEATURES, BlockModel, unit_features
from udfs.extract.html import (BLOCK_MODEL_PATH, kept_text, main_content_units, main_or_whole_page,
                               whole_page_units)
from udfs.extract.text import normalize_text

L2 = 1e-3
THRESHOLDS = [round(t, 3) for t in np.arange(0.1, 0.71, 0.05)]
MARGINS = [0.0, 0.5, 1.0, 2.0, 3.0]


def unit_label(page: dict, text: str):
    """1.0 content, 0.0 furniture, None unknown."""
    if "gold" in page:
        tokens = tokens_of(text)
        if not tokens:
            return None
        if len(tokens) < 4:
            return float(f" {' '.join(tokens)} " in page["gold_string"])
        grams = shingles(tokens)
        return float(sum((grams & page["gold"]).values()) >= 0.5 * sum(grams.values()))
    if any(s in text for s in page["with"]):
        return 1.0
    if any(s in text for s in page["without"]):
        return 0.0
    return None


def prepare(set_name: str) -> Dict[str, list]:
    """Units, features, labels and weights of every page of one set."""
    pages = LOADERS[set_name]()
    data = {"pages": pages, "units": [], "vectors": [], "whole_page": [], "X": [], "y": [], "w": [], "page_of": []}
    for index, page in enumerate(pages):
        if "gold" in page:
            page["gold_string"] = f" {' '.join(page['gold_tokens'])} "
        units = main_content_units(page["html"])
        vectors = unit_features(units)
        data["units"].append(units)
        data["vectors"].append(vectors)
        whole_page = whole_page_units(page["html"])
        data["whole_page"].append((whole_page, unit_features(whole_page)))
        words = [len(tokens_of(u.text)) for u in units]
        total_words = sum(words) or 1
        for unit, vector, n in zip(units, vectors, words):
            label = unit_label(page, unit.text)
            if label is None:
                continue
            data["X"].append(vector)
            data["y"].append(label)
            data["w"].append(n / total_words if "gold" in page else 1.0)
            data["page_of"].append(index)
    for key in ("X", "y", "w"):
        data[key] = np.array(data[key], dtype=float)
    data["w"] /= data["w"].sum()  # each set weighs the same when sets are combined
    return data


def fit(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> List[float]:
    """Weights over FEATURES (raw feature scale), bias first."""
    mean, std = X[:, 1:].mean(axis=0), X[:, 1:].std(axis=0)
    std[std == 0] = 1.0
    Z = np.hstack([np.ones((len(X), 1)), (X[:, 1:] - mean) / std])

    def loss(beta):
        z = Z @ beta
        p = 1 / (1 + np.exp(-z))
        value = np.sum(w * (np.logaddexp(0, z) - y * z)) + L2 * np.sum(beta[1:] ** 2)
        grad = Z.T @ (w * (p - y)) + 2 * L2 * np.concatenate([[0.0], beta[1:]])
        return value, grad

    beta = minimize(loss, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B").x
    weights = beta[1:] / std
    return [float(beta[0] - np.sum(weights * mean))] + [float(v) for v in weights]


def texts(data: dict, model: BlockModel) -> List[str]:
    """What ``extract_main_text`` returns with this model (the features computed once per page)."""
    weights = np.array(model.weights)

    def kept(units, vectors):
        return [u for u, keep in zip(units, model.decide(units, list(vectors @ weights))) if keep]
    out = []
    for units, vectors, whole_page in zip(data["units"], data["vectors"], data["whole_page"]):
        chosen, _ = main_or_whole_page(kept(units, vectors), lambda: kept(*whole_page))
        out.append(normalize_text(kept_text(chosen)))
    return out


def evaluate(data: dict, model: BlockModel) -> dict:
    return score(data["pages"], texts(data, model))


def train(datasets: List[dict]) -> BlockModel:
    """Weights fitted to the units' labels; threshold and context margin chosen for the page score."""
    X = np.vstack([d["X"] for d in datasets])
    y = np.concatenate([d["y"] for d in datasets])
    w = np.concatenate([d["w"] for d in datasets])
    weights = fit(X, y, w)

    def mean_f1(model):
        return sum(evaluate(d, model)["f1"] for d in datasets) / len(datasets)
    threshold = max(THRESHOLDS, key=lambda t: mean_f1(BlockModel(weights, t)))
    margin = max(MARGINS, key=lambda m: mean_f1(BlockModel(weights, threshold, m)))
    return BlockModel(weights, threshold, margin)


def row(label: str, m: dict) -> str:
    return f"{label:<44}{m['precision']:>7.3f}{m['recall']:>7.3f}{m['f1']:>7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(BLOCK_MODEL_PATH))
    args = parser.parse_args()
    data = {name: prepare(name) for name in SETS}
    print(f"{'':<44}{'P':>7}{'R':>7}{'F1':>7}")
    keep_all = BlockModel([1.0] + [0.0] * (len(FEATURES) - 1), 0.5)
    for name in SETS:
        print(row(f"no block pass, on {name}", evaluate(data[name], keep_all)))
    for train_on, test_on in (SETS, SETS[::-1]):
        model = train([data[train_on]])
        chosen = f"t={model.threshold}, m={model.context_margin}"
        print(row(f"train {train_on}, score {test_on} ({chosen})", evaluate(data[test_on], model)))
        print(row(f"train {train_on}, score {train_on}", evaluate(data[train_on], model)))
    model = train(list(data.values()))
    for name in SETS:
        print(row(f"shipped (both sets, t={model.threshold}) on {name}", evaluate(data[name], model)))
    Path(args.out).write_text(json.dumps({
        "features": list(FEATURES), "weights": [round(v, 6) for v in model.weights], "threshold": model.threshold,
        "context_margin": model.context_margin, "trained_on": list(SETS), "trained_by": "tools/train_block_classifier.py",
    }, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
