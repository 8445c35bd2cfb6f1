"""`reasoneval compare` on real runs: the paired difference equals the hand-computed one; flips; renderers;
and the test's calibration by simulation (scripts/compare_simulation.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from reasoneval.analysis import compare_runs
from reasoneval.cli.main import main
from reasoneval.errors import UserError
from tests.analysis.runs import TASK, make_run

ROOT = Path(__file__).resolve().parents[2]


def acc_a(i: int, j: int) -> bool:  # problem i: i % 5 of its 4 samples right (all 4 when i % 5 == 4)
    return j < (i % 5)


def acc_b(i: int, j: int) -> bool:  # another pattern over the same problems
    return j < ((i + 2) % 5)


@pytest.fixture
def two_runs(make_openai_server: Any, tmp_path: Path) -> tuple[Path, Path]:
    a = make_run(make_openai_server, tmp_path, "model-a", acc_a, q=12, n=4)
    b = make_run(make_openai_server, tmp_path, "model-b", acc_b, q=12, n=4)
    return a, b


def test_paired_difference_matches_hand_computation(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    c = compare_runs([a, b])
    [t] = c.tasks
    pa = np.array([min(i % 5, 4) / 4 for i in range(12)])
    pb = np.array([min((i + 2) % 5, 4) / 4 for i in range(12)])
    d = pb - pa
    se = d.std(ddof=1) / math.sqrt(12)
    v = t.versus[0]
    assert v.num_common == 12
    assert v.diff == pytest.approx(d.mean()) and v.stderr == pytest.approx(se)
    tq = stats.t.ppf(0.975, 11)
    assert v.ci95 == pytest.approx((d.mean() - tq * se, d.mean() + tq * se))
    assert v.p_value == pytest.approx(2 * stats.t.sf(abs(d.mean() / se), 11))
    assert t.pass1[0][0] == pytest.approx(pa.mean()) and t.pass1[1][0] == pytest.approx(pb.mean())
    # flips: mostly right (>= 0.5) in one run and mostly wrong in the other
    want = {f"p{i:03d}" for i in range(12) if (pa[i] >= 0.5) != (pb[i] >= 0.5)}
    assert {f.id for f in t.flips[0]} == want and want
    assert t.ks == [1, 2, 3, 4] and t.maj_ks
    # pass@4 per problem is 1 if any sample is right
    anya, anyb = (pa > 0).astype(float), (pb > 0).astype(float)
    assert t.pass_at_k_diff[0][4].diff == pytest.approx((anyb - anya).mean())


def test_compare_only_pairs_common_problems(make_openai_server: Any, tmp_path: Path) -> None:
    a = make_run(make_openai_server, tmp_path / "a", "model-a", acc_a, q=12, n=4)
    b = make_run(make_openai_server, tmp_path / "b", "model-b", acc_b, q=7, n=4)
    [t] = compare_runs([a, b]).tasks
    assert t.versus[0].num_common == 7
    pa = np.array([min(i % 5, 4) / 4 for i in range(7)])
    pb = np.array([min((i + 2) % 5, 4) / 4 for i in range(7)])
    assert t.versus[0].diff == pytest.approx((pb - pa).mean())


def test_cli_table_json_markdown_and_html(two_runs: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    v = data["tasks"]["math500"]["versus_first"][0]
    assert v["num_common"] == 12 and len(v["ci95"]) == 2 and 0 <= v["p_value"] <= 1
    assert main(["compare", str(a), str(b), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| math500 | B |" in md and "Δ vs A" in md and "flipped" in md
    page = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "paired comparison" in out and "model-b" in out and "not compared" not in out
    html = page.read_text()
    assert "model-a" in html and "model-b" in html and "<svg" in html


def test_compare_needs_two_runs_and_a_shared_task(two_runs: tuple[Path, Path]) -> None:
    with pytest.raises(UserError, match="at least two"):
        compare_runs([two_runs[0]])


def test_simulation_calibrates_the_test() -> None:
    """1000 simulated comparisons: equal accuracy rejects 3-7%; a 5-point gap at the power the formula gives."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_simulation.py"), "--runs", "1000"],
                       capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" ok") == 8


def test_an_adaptive_run_is_compared_on_its_two_stage_estimates(make_openai_server: Any, tmp_path: Path) -> None:
    """run --target-se gives problems different sample counts, chosen from their pilots; compare pairs the
    two-stage estimate its summary's mean uses (plan_adaptive.task_estimates), not the pooled c/n."""
    from reasoneval.analysis.outcomes import read_problem_rows
    from reasoneval.metrics.plan_adaptive import task_estimates
    from reasoneval.results.schema import load_config

    def acc_c(i: int, j: int) -> bool:  # 5 never solved, 5 always, 2 in between (at another rate after the pilot)
        return i > 6 or (4 < i < 7 and (j % 2 == 0 if j < 4 else j % 3 == 0))

    a = make_run(make_openai_server, tmp_path / "a", "model-a", acc_c, q=12, n=34, target_se=2.5, max_n=34,
                 concurrency=4)
    b = make_run(make_openai_server, tmp_path / "b", "model-b", acc_b, q=12, n=4)
    rows = read_problem_rows(a)
    rows_b = {r.problem_key: r for r in read_problem_rows(b)}
    adaptive = load_config(a).adaptive or {}
    est = task_estimates([dict(zip(r.sample_indices, r.correct)) for r in rows], adaptive["history"], TASK).estimate
    two_stage = {r.problem_key: float(e) for r, e in zip(rows, est)}
    pooled = {r.problem_key: r.num_correct / r.n for r in rows}
    assert len({r.n for r in rows}) > 1 and any(abs(two_stage[k] - pooled[k]) > 1e-9 for k in pooled)
    [t] = compare_runs([a, b]).tasks
    d = np.array([rows_b[k].num_correct / rows_b[k].n - two_stage[k] for k in pooled])
    assert t.versus[0].diff == pytest.approx(d.mean()) and t.versus[0].stderr == pytest.approx(d.std(ddof=1) / math.sqrt(12))
    assert t.pass1[0][0] == pytest.approx(np.mean(list(two_stage.values())))  # the summary's mean: the same estimates
    # the other way round (the adaptive run second) reads it the same way
    [u] = compare_runs([b, a]).tasks
    assert u.versus[0].diff == pytest.approx(-d.mean())


def test_an_adaptive_run_of_the_earlier_design_is_compared_on_its_crossfit_estimates(tmp_path: Path) -> None:
    """tests/fixtures/runs/adaptive_crossfit (made before the two-stage design): compare reads the cross-fit
    estimate its summary's mean uses (mean of the even- and odd-indexed samples' rates), not c/n."""
    import shutil

    from reasoneval.analysis.outcomes import read_problem_rows

    fixture = ROOT / "tests" / "fixtures" / "runs" / "adaptive_crossfit"
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(fixture, a)
    shutil.copytree(fixture, b)

    def rate(r: Any, s: int) -> float:
        got = [x for j, x in zip(r.sample_indices, r.correct) if j % 2 == s]
        return sum(got) / len(got)

    rows = read_problem_rows(a)
    crossfit = np.mean([(rate(r, 0) + rate(r, 1)) / 2 for r in rows])
    [t] = compare_runs([a, b]).tasks
    assert t.versus[0].diff == 0 and t.pass1[0][0] == pytest.approx(crossfit)
    assert crossfit != pytest.approx(sum(r.num_correct for r in rows) / sum(r.n for r in rows), abs=1e-6)
