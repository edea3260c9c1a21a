"""Data Mixing Laws (Ye et al. 2024, "Data Mixing Laws: Optimizing Data Mixtures by Predicting Language
Modeling Performance"): fit loss as a function of the training mixture from small runs, then propose
the mixture that minimises the predicted loss: the mixture is predicted from cheap experiments
instead of found by trial and error at full scale.

For each validation loss ``i`` and mixture proportions ``r`` (summing to 1) over ``M`` training domains,

    L_i(r) = c_i + k_i · exp(Σ_j t_ij · r_j)

Because ``Σ r_j = 1``, one ``t`` is redundant with ``k`` (adding a constant to every t_ij scales k_i);
we fit the identifiable form with the last domain as reference (``t_i,M = 0``). An overall objective
is a weighted sum of the per-validation-set laws (weights = the validation set's composition). The
objective is convex in ``r`` (a sum of exponentials of linear functions with k > 0), so the
constrained optimum is found reliably.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
from scipy.optimize import least_squares, minimize


@dataclass
class MixingLaw:
    """L(r) = c + k · exp(t · r) for one validation loss; ``t[-1] == 0`` (the reference domain)."""
    loss: str
    domains: List[str]
    c: float
    k: float
    t: np.ndarray
    r2: float = float("nan")
    rmse: float = float("nan")
    loo_rmse: float = float("nan")   # leave-one-out prediction error: how well it predicts an unseen run

    def predict(self, proportions: np.ndarray) -> np.ndarray:
        return self.c + self.k * np.exp(np.atleast_2d(proportions) @ self.t)

    def to_dict(self) -> dict:
        return {"loss": self.loss, "c": self.c, "k": self.k,
                "t": {d: float(v) for d, v in zip(self.domains, self.t)},
                "r2": self.r2, "rmse": self.rmse, "loo_rmse": self.loo_rmse}


def _fit_params(proportions: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """(c, log k, t_1..t_{M-1}) by profiling c (for fixed c the law is linear in log(L − c)), then
    a joint least-squares refinement."""
    design = np.column_stack([np.ones(len(losses)), proportions[:, :-1]])
    span = max(float(losses.max() - losses.min()), 1e-6)

    def profile(c: float):
        beta, *_ = np.linalg.lstsq(design, np.log(losses - c), rcond=None)
        return beta, float(np.sum((c + np.exp(design @ beta) - losses) ** 2))

    candidates = losses.min() - span * np.logspace(-4, 3, 120)
    best_c = min(candidates, key=lambda c: profile(c)[1])
    beta, _ = profile(best_c)

    def residuals(params: np.ndarray) -> np.ndarray:
        return params[0] + np.exp(design @ params[1:]) - losses

    return least_squares(residuals, np.concatenate([[best_c], beta]), method="lm").x


def fit_law(proportions: np.ndarray, losses: np.ndarray, domains: Sequence[str], loss_name: str = "loss") -> MixingLaw:
    """Fit one law from ``n`` runs: ``proportions`` is ``(n, M)`` with rows summing to 1."""
    proportions, losses = np.asarray(proportions, float), np.asarray(losses, float)
    n, m = proportions.shape
    if n < m + 2:
        raise ValueError(f"{loss_name}: {n} runs cannot fit {m + 1} parameters; run at least {m + 2} mixtures")
    if not np.allclose(proportions.sum(axis=1), 1.0, atol=1e-3):
        raise ValueError("mixture proportions of every run must sum to 1")

    def law_from(params: np.ndarray) -> MixingLaw:
        return MixingLaw(loss_name, list(domains), float(params[0]), float(np.exp(params[1])),
                         np.append(params[2:], 0.0))

    law = law_from(_fit_params(proportions, losses))
    predicted = law.predict(proportions)
    law.rmse = float(np.sqrt(np.mean((predicted - losses) ** 2)))
    total = float(np.sum((losses - losses.mean()) ** 2))
    law.r2 = 1.0 - float(np.sum((predicted - losses) ** 2)) / total if total > 0 else float("nan")
    if n > m + 2:
        errors = []
        for i in range(n):
            keep = np.arange(n) != i
            held_out = law_from(_fit_params(proportions[keep], losses[keep]))
            errors.append(float(held_out.predict(proportions[i])[0] - losses[i]))
        law.loo_rmse = float(np.sqrt(np.mean(np.square(errors))))
    return law


def predict_total(laws: Sequence[MixingLaw], weights: Sequence[float], proportions: np.ndarray) -> np.ndarray:
    return sum(w * law.predict(proportions) for law, w in zip(laws, weights))


def optimal_mixture(laws: Sequence[MixingLaw], weights: Sequence[float],
                    lower: Optional[Dict[str, float]] = None, upper: Optional[Dict[str, float]] = None) -> np.ndarray:
    """The mixture minimising the weighted predicted loss, with per-domain bounds on the proportions."""
    domains = laws[0].domains
    lo = np.array([(lower or {}).get(d, 0.0) for d in domains])
    hi = np.array([(upper or {}).get(d, 1.0) for d in domains])
    if lo.sum() > 1 + 1e-9 or hi.sum() < 1 - 1e-9 or np.any(lo > hi):
        raise ValueError(f"the bounds admit no mixture: lower bounds sum to {lo.sum():.4f}, upper bounds to "
                         f"{hi.sum():.4f} ({', '.join(f'{d} {a:.4f}..{b:.4f}' for d, a, b in zip(domains, lo, hi))})")

    def objective(r):
        return float(predict_total(laws, weights, r)[0])

    # Start inside the bounds: the lower bounds plus the remainder spread in proportion to the room.
    room = hi - lo
    start = lo + (1 - lo.sum()) * room / room.sum() if room.sum() > 0 else lo
    result = minimize(objective, start, method="SLSQP", bounds=list(zip(lo, hi)),
                      constraints=[{"type": "eq", "fun": lambda r: r.sum() - 1.0}],
                      options={"ftol": 1e-12, "maxiter": 500})
    if not result.success:
        raise RuntimeError(f"mixture optimisation did not converge: {result.message}")
    return np.clip(result.x, lo, hi)
