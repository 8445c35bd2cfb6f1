"""`reasoneval analyze` on a real run: closed form vs subsampling, target SE, disjoint-subset spread."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from reasoneval.analysis.analyze import analyze_run, target_se
from reasoneval.cli.main import main
from tests.analysis.runs import loopback_servers, make_run

Q, K = 20, 16


def correct(i: int, j: int) -> bool:  # problem i right on (i * 7) % 17 of its 16 samples, spread over indices
    return (j * 5 + i) % 16 < (i * 7) % 17


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with loopback_servers() as make:
        return make_run(make, tmp_path_factory.mktemp("an"), "model-a", correct, q=Q, n=K)


def test_subsampling_agrees_with_the_closed_form(run: Path) -> None:
    an = analyze_run(run, draws=2000, seed=1)
    [t] = an.tasks
    assert [r.k for r in t.se] == [1, 2, 4, 8, 16]
    for r in t.se:
        assert r.stderr is not None and r.stderr_subsampled is not None
        assert r.stderr_subsampled == pytest.approx(r.stderr, rel=0.03), r
    # with all K samples the subsample is the whole run: exactly the run's SE
    assert t.se[-1].stderr_subsampled == pytest.approx(an.result.tasks["math500"].stderr)


def test_disjoint_subsets_are_runs_of_k_samples(run: Path) -> None:
    an = analyze_run(run)
    [t] = an.tasks
    by_k = {s.k: s for s in t.spread}
    assert set(by_k) == {1, 2, 4, 8}  # k = 16 leaves one subset: no spread
    s = by_k[4]
    means = [np.mean([sum(correct(i, j) for j in range(g * 4, g * 4 + 4)) / 4 for i in range(Q)]) for g in range(4)]
    assert s.runs == 4 and s.mean == pytest.approx(np.mean(means)) and s.sd == pytest.approx(np.std(means, ddof=1))
    assert s.min == pytest.approx(min(means)) and s.max == pytest.approx(max(means))
    assert s.predicted_sd == an.result.tasks["math500"].se_vs_k[4].stderr_resample


def test_target_se_inverts_the_variance_formula() -> None:
    rng = np.random.default_rng(0)
    n = np.full(400, 8)
    c = rng.binomial(8, rng.uniform(0.2, 0.8, 400))
    tg = target_se(n, c, 0.02)
    p = c / n
    v = p * (1 - p) * n / (n - 1)
    between = max(0.0, float(np.var(p, ddof=1) - np.mean(v / n)))
    se = lambda k: math.sqrt((between + np.mean(v) / k) / 400)  # noqa: E731
    assert tg.k_for_stderr is not None and se(tg.k_for_stderr) <= 0.02 < se(tg.k_for_stderr - 1)
    unreachable = target_se(n, c, 0.001)
    assert unreachable.k_for_stderr is None and unreachable.problems_needed and unreachable.problems_needed > 400
    assert math.sqrt(np.sum(v) / unreachable.k_for_resample) / 400 <= 0.001


def test_cli_table_json_markdown(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(run), "--target-se", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "SE (subsampled)" in out and "disjoint" in out and "samples per problem" in out
    assert main(["analyze", str(run), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["tasks"]["math500"]["se_vs_k"][0]["k"] == 1 and d["tasks"]["math500"]["disjoint_subsets"]
    assert main(["analyze", str(run), "--markdown"]) == 0
    assert "| math500 | 1 |" in capsys.readouterr().out
    # a target no number of samples reaches with these problems says so in words
    assert main(["analyze", str(run), "--target-se", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "math500: SE 0.10 points is not reachable with 20 problems, whatever the samples (about " in out
    assert "needs not reachable" not in out


def test_target_se_says_what_an_adaptive_run_would_spend() -> None:
    """Problems the model always or never solves need few samples: an adaptive run's Neyman total is below
    uniform K's for the same re-run SE, and at least the 4-sample first round."""
    rng = np.random.default_rng(1)
    p_true = np.concatenate([np.zeros(60), np.ones(60), rng.uniform(0.3, 0.7, 30)])
    n = np.full(150, 16)
    c = rng.binomial(16, p_true)
    tg = target_se(n, c, 0.003)
    assert tg.adaptive_samples is not None and 4 * 150 <= tg.adaptive_samples < tg.k_for_resample * 150


def test_an_adaptive_run_is_analysed_for_k_up_to_its_fewest_samples(make_openai_server: object, tmp_path: Path) -> None:
    """Problems sampled 18 to 27 times (8 always right, 8 never, 4 in between: the plan gives the settled ones
    fewest): every row of `analyze` is over all problems (k <= the fewest), none over the few that reached more
    (it reported those rows, from a subset)."""
    def settled(i: int, j: int) -> bool:
        return i < 8 or (i < 12 and correct(i, j))

    d = make_run(make_openai_server, tmp_path, "model-a", settled, q=Q, n=32, target_se=1.25, max_n=32, concurrency=4)
    an = analyze_run(d, draws=200, seed=1)
    [t] = an.tasks
    fewest, most = json.loads((d / "summary.json").read_text())["tasks"]["math500"].get("samples_per_problem", [0, 0])
    assert 0 < fewest < most and [r.k for r in t.se][-1] == fewest and all(r.stderr is not None for r in t.se)
