"""Ranking and threshold metrics of a binary scorer, in numpy (labels: 1 = high quality)."""
from __future__ import annotations

from typing import Dict, List

import numpy as np


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties counted half (Mann-Whitney)."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def pr_curve(labels: np.ndarray, scores: np.ndarray, negative_weight: float = 1.0):
    """Precision and recall of ``score >= t`` for every distinct score ``t`` (descending); each
    negative counts ``negative_weight`` times in the precision."""
    labels = np.asarray(labels).astype(bool)
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    s, y = np.asarray(scores, dtype=np.float64)[order], labels[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tp = np.cumsum(y)[last_of_tie]
    fp = ((last_of_tie + 1) - tp) * negative_weight
    precision = tp / (tp + fp)
    recall = tp / max(int(labels.sum()), 1)
    return precision, recall, s[last_of_tie]


def best_f1_threshold(labels: np.ndarray, scores: np.ndarray, tolerance: float = 0.005,
                      prior: float = 0.5) -> float:
    """The F1-optimal threshold of the class-balanced P-R curve, taken robustly.

    The negatives weigh as much as the positives together (as in the training loss), so the threshold
    does not move with how many negatives a set holds: training makes several of each positive.
    F1 is usually flat near its maximum, so the exact argmax is decided by a handful of documents.
    Among the thresholds whose F1 is within ``tolerance`` of the best, the one nearest ``prior`` is
    returned: 0.5 is where a classifier trained with class-balanced loss puts the boundary, and the
    P-R curve has to say so by more than the tolerance to move it away from there.
    """
    labels = np.asarray(labels).astype(bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    precision, recall, thresholds = pr_curve(labels, scores, n_pos / n_neg if n_pos and n_neg else 1.0)
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    near_best = thresholds[f1 >= f1.max() - tolerance]
    return float(near_best[np.argmin(np.abs(near_best - prior))])


def at_threshold(labels: np.ndarray, scores: np.ndarray, threshold: float) -> Dict[str, float]:
    labels = np.asarray(labels).astype(bool)
    predicted = np.asarray(scores) >= threshold
    tp = int((predicted & labels).sum())
    fp = int((predicted & ~labels).sum())
    fn = int((~predicted & labels).sum())
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    return {"precision": round(precision, 4), "recall": round(recall, 4),
            "f1": round(2 * precision * recall / max(precision + recall, 1e-12), 4),
            "accuracy": round(float((predicted == labels).mean()), 4)}


def summary(labels: np.ndarray, scores: np.ndarray, threshold: float, curve_points: int = 0) -> dict:
    out = {"n_positive": int(np.sum(labels)), "n_negative": int(len(labels) - np.sum(labels)),
           "auc": round(roc_auc(labels, scores), 4), "threshold": round(threshold, 4),
           **at_threshold(labels, scores, threshold)}
    if curve_points:
        out["pr_curve"] = sampled_pr_curve(labels, scores, curve_points)
    return out


def sampled_pr_curve(labels: np.ndarray, scores: np.ndarray, points: int) -> List[dict]:
    """The P-R curve at ``points`` evenly spaced thresholds in [0, 1] (for the model card)."""
    return [{"threshold": round(float(t), 3), **{k: v for k, v in at_threshold(labels, scores, t).items()
                                                 if k in ("precision", "recall")}}
            for t in np.linspace(0.05, 0.95, points)]
