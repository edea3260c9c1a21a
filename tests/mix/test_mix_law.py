"""The data mixing law helper: recover a known law from synthetic experiment tables, find its optimum."""
import itertools
import json

import numpy as np
import pandas as pd
import pytest

from jobs.mixing_law_command import main
from udfs.mix.mixing_law import MixingLaw, fit_law, optimal_mixture

DOMAINS = ["web", "wiki", "code", "books"]
# A known law in the identifiable form (books is the reference domain, t = 0).
TRUE = MixingLaw("loss", DOMAINS, c=2.1, k=1.4, t=np.array([-0.9, -1.6, 0.4, 0.0]))


def experiments(runs: int, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(len(DOMAINS)), size=runs)


def test_fit_recovers_the_parameters_of_a_known_law():
    r = experiments(20)
    law = fit_law(r, TRUE.predict(r), DOMAINS)
    assert law.c == pytest.approx(TRUE.c, abs=1e-6)
    assert law.k == pytest.approx(TRUE.k, rel=1e-6)
    np.testing.assert_allclose(law.t, TRUE.t, atol=1e-6)
    assert law.r2 == pytest.approx(1.0) and law.loo_rmse < 1e-6


def test_fit_is_robust_to_measurement_noise_and_reports_it():
    r = experiments(30, seed=1)
    noisy = TRUE.predict(r) + np.random.default_rng(2).normal(0, 0.003, len(r))
    law = fit_law(r, noisy, DOMAINS)
    np.testing.assert_allclose(law.t, TRUE.t, atol=0.15)
    held_out = experiments(50, seed=3)
    assert np.abs(law.predict(held_out) - TRUE.predict(held_out)).max() < 0.01
    assert 0.001 < law.rmse < 0.006 and law.loo_rmse >= law.rmse


def test_too_few_runs_or_bad_proportions_are_clear_errors():
    with pytest.raises(ValueError, match="at least 6 mixtures"):
        fit_law(experiments(5), np.ones(5), DOMAINS)
    with pytest.raises(ValueError, match="sum to 1"):
        fit_law(experiments(8) * 2, np.ones(8), DOMAINS)


def grid_minimum(laws, weights, upper):
    """Brute force over a 1/100 grid of the simplex, for comparison."""
    best = None
    steps = 100
    for a, b, c in itertools.product(range(steps + 1), repeat=3):
        d = steps - a - b - c
        if d < 0:
            continue
        r = np.array([a, b, c, d]) / steps
        if any(r[i] > upper.get(name, 1) + 1e-12 for i, name in enumerate(DOMAINS)):
            continue
        value = sum(w * law.predict(r)[0] for law, w in zip(laws, weights))
        if best is None or value < best[0]:
            best = (value, r)
    return best


def test_optimum_under_bounds_matches_brute_force():
    second = MixingLaw("loss_code", DOMAINS, c=1.2, k=0.9, t=np.array([0.3, 0.2, -2.0, 0.0]))
    upper = {"wiki": 0.2, "web": 0.5}
    r = optimal_mixture([TRUE, second], [0.6, 0.4], upper=upper)
    assert r.sum() == pytest.approx(1) and r[1] <= 0.2 + 1e-9 and r[0] <= 0.5 + 1e-9
    value = 0.6 * TRUE.predict(r)[0] + 0.4 * second.predict(r)[0]
    grid_value, _ = grid_minimum([TRUE, second], [0.6, 0.4], upper)
    assert value <= grid_value + 1e-9


def test_infeasible_bounds_are_a_clear_error():
    with pytest.raises(ValueError, match="admit no mixture"):
        optimal_mixture([TRUE], [1.0], upper={d: 0.2 for d in DOMAINS})


def test_cli_fits_a_csv_and_proposes_a_mixture(tmp_path, capsys):
    r = experiments(16, seed=4)
    table = pd.DataFrame(r, columns=DOMAINS)
    table["loss"] = TRUE.predict(r)
    csv = tmp_path / "runs.csv"
    table.to_csv(csv, index=False)
    stats = tmp_path / "mix_stats.json"  # a mix stage's figures: wiki can give at most 3 x 1e6 of 1e8 tokens
    stats.write_text(json.dumps({"domains": {
        "wiki": {"max_epochs": 3, "available_tokens": 1_000_000}, "news": {"max_epochs": 1, "available_tokens": 5}}}))
    out = tmp_path / "proposal.json"
    assert main(["fit", str(csv), "--max", "web=0.6", "--mix-stats", str(stats), "--budget-tokens", "1e8",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["proposal"]["wiki"] <= 0.03 + 1e-9 and result["proposal"]["web"] <= 0.6 + 1e-9
    feasible = table[(table["wiki"] <= 0.03) & (table["web"] <= 0.6)]
    assert len(feasible) and result["predicted_loss"] <= feasible["loss"].min() + 1e-9
    assert result["predicted_loss"] == pytest.approx(TRUE.predict(np.array(list(result["proposal"].values())))[0])
    assert "L = 2.1000 + 1.4000·exp(" in printed and "wiki: {weight:" in printed
