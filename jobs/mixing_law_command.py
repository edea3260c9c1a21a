"""``corpusmill mixing-law``: fit a data mixing law to small runs and propose the big run's mixture.

The law's maths is ``udfs.mix.mixing_law``; this module is its command line.

    corpusmill mixing-law fit experiments.csv
    corpusmill mixing-law fit experiments.csv --max web=0.6 --min code=0.05 \\
        --mix-stats out/demo/mix/_stats.json --budget-tokens 2e9 --json proposal.json

The CSV has one row per small training run: one column per training domain with its share of the
run's training tokens (rows sum to 1), and one or more validation-loss columns named ``loss…``
(e.g. ``loss`` or ``loss_web``, ``loss_code``). Several loss columns are combined with
``--loss-weights`` (default: equal), e.g. the composition of the validation set.

``--mix-stats`` with ``--budget-tokens`` adds the data limits of a real corpus: a domain cannot take
more than ``max_epochs × available_tokens / budget`` of the mixture (figures from a mix stage's
``_stats.json``). The proposal is printed as a ``mix:`` snippet for ``conf/mix.yaml``.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from udfs.mix.mixing_law import fit_law, optimal_mixture, predict_total


def parse_pairs(items: Optional[List[str]], option: str) -> Dict[str, float]:
    pairs = {}
    for item in items or []:
        for part in item.split(","):
            name, sep, value = part.partition("=")
            if not sep:
                raise SystemExit(f"{option}: expected name=value, got {part!r}")
            pairs[name.strip()] = float(value)
    return pairs


def data_limits(stats_path: str, budget_tokens: float) -> Dict[str, float]:
    """Upper bound per domain from a mix stage's stats: max_epochs × available tokens / budget."""
    with open(stats_path, encoding="utf-8") as f:
        domains = json.load(f)["domains"]
    return {name: d["max_epochs"] * d["available_tokens"] / budget_tokens for name, d in domains.items()}


def propose(table: pd.DataFrame, loss_weights: Dict[str, float], lower: Dict[str, float],
            upper: Dict[str, float]) -> dict:
    losses = [c for c in table.columns if c.startswith("loss")]
    domains = [c for c in table.columns if c not in losses and pd.api.types.is_numeric_dtype(table[c])]
    if not losses or len(domains) < 2:
        raise SystemExit("the CSV needs loss… columns and at least two numeric domain-share columns")
    unknown = (set(lower) | set(upper)) - set(domains)
    if unknown:
        raise SystemExit(f"bounds name unknown domains: {', '.join(sorted(unknown))} (domains: {', '.join(domains)})")
    proportions = table[domains].to_numpy(float)
    laws = [fit_law(proportions, table[c].to_numpy(float), domains, c) for c in losses]
    weights = np.array([loss_weights.get(c, 1.0) for c in losses])
    weights = weights / weights.sum()
    best = optimal_mixture(laws, weights, lower, upper)
    observed = table[losses].to_numpy(float) @ weights
    best_run = int(np.argmin(observed))
    tested_low, tested_high = proportions.min(axis=0), proportions.max(axis=0)
    return {
        "runs": len(table), "domains": domains, "losses": losses,
        "loss_weights": dict(zip(losses, weights.round(6).tolist())),
        "laws": [law.to_dict() for law in laws],
        "bounds": {"min": lower, "max": upper},
        "proposal": dict(zip(domains, best.round(6).tolist())),
        "predicted_loss": float(predict_total(laws, weights, best)[0]),
        "best_run": {"row": best_run, "loss": float(observed[best_run]),
                     "predicted": float(predict_total(laws, weights, proportions[best_run])[0]),
                     "mixture": dict(zip(domains, proportions[best_run].round(6).tolist()))},
        "extrapolated": [d for d, r, lo, hi in zip(domains, best, tested_low, tested_high)
                         if r < lo - 1e-6 or r > hi + 1e-6],
    }


def report(result: dict) -> str:
    lines = [f"Data mixing law (Ye et al. 2024) fitted to {result['runs']} runs over "
             f"{len(result['domains'])} domains ({', '.join(result['domains'])})"]
    for law in result["laws"]:
        terms = " ".join(f"{v:+.3f}·{d}" for d, v in law["t"].items())
        lines.append(f"  {law['loss']}: L = {law['c']:.4f} + {law['k']:.4f}·exp({terms})   "
                     f"R² {law['r2']:.4f}  RMSE {law['rmse']:.4g}  leave-one-out RMSE {law['loo_rmse']:.4g}")
    if len(result["losses"]) > 1:
        lines.append("  objective: " + " + ".join(f"{w:.3f}·{c}" for c, w in result["loss_weights"].items()))
    for kind in ("min", "max"):
        if result["bounds"][kind]:
            lines.append(f"  {kind} bounds: " + ", ".join(f"{d} {v:.4f}" for d, v in result["bounds"][kind].items()))
    best = result["best_run"]
    lines.append(f"Proposed mixture (predicted loss {result['predicted_loss']:.4f}; best run in the table: "
                 f"row {best['row']}, loss {best['loss']:.4f}, predicted {best['predicted']:.4f}):")
    for d, r in result["proposal"].items():
        lines.append(f"  {d:<12} {r:.4f}   (best run {best['mixture'][d]:.4f})")
    if result["extrapolated"]:
        lines.append(f"  caution: outside the range the runs tested for {', '.join(result['extrapolated'])}; "
                     f"confirm with a run at this mixture")
    lines.append("For conf/mix.yaml:")
    lines.append("  mix:\n    domains:")
    lines += [f"      {d}: {{weight: {r:.4f}}}" for d, r in result["proposal"].items()]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="corpusmill mixing-law", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("fit", help="fit the law to a CSV of runs and propose a mixture")
    fit.add_argument("csv", help="one row per run: domain share columns and loss… columns")
    fit.add_argument("--loss-weights", nargs="*", help="loss_x=w,… weights of several loss columns")
    fit.add_argument("--min", nargs="*", help="domain=share,… lower bounds")
    fit.add_argument("--max", nargs="*", help="domain=share,… upper bounds")
    fit.add_argument("--mix-stats", help="a mix stage's _stats.json: caps shares by available tokens × max epochs")
    fit.add_argument("--budget-tokens", type=float, help="training tokens of the big run (with --mix-stats)")
    fit.add_argument("--json", help="also write the result as JSON here")
    args = parser.parse_args(argv)
    table = pd.read_csv(args.csv)
    upper = parse_pairs(args.max, "--max")
    if args.mix_stats:
        if not args.budget_tokens:
            raise SystemExit("--mix-stats needs --budget-tokens")
        for domain, limit in data_limits(args.mix_stats, args.budget_tokens).items():
            if domain in table.columns:  # the runs may group domains differently from the corpus
                upper[domain] = min(upper.get(domain, 1.0), limit)
    try:
        result = propose(table, parse_pairs(args.loss_weights, "--loss-weights"), parse_pairs(args.min, "--min"),
                         upper)
    except (ValueError, RuntimeError) as exc:
        print(f"mixing_law: {exc}", file=sys.stderr)
        return 2
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
