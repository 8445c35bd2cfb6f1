"""Issue 41.10: a battery's group rows (minerva_math, hendrycks_math) print lm-eval's pooled within-subject
stderr, with reasoneval's SE over all problems beside it, labelled."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from reasoneval.analysis.battery import Battery, BatteryRow, BatteryRun, row_figures
from reasoneval.report.battery import table_cells
from reasoneval.results.schema import load_run
from tests.analysis.runs import SUBJECTS, TASK, make_run, problems


def _lmeval_pooled(groups: list[list[float]]) -> float:
    """lm-eval 0.4.13's pooled_sample_stderr over subtasks whose per-problem scores are `groups`: each subtask's
    stderr is its sample SD (ddof 1) / √n (mean_stderr), pooled by size."""
    sizes = [len(g) for g in groups]
    stderrs = [math.sqrt(sum((x - sum(g) / len(g)) ** 2 for x in g) / (len(g) - 1)) / math.sqrt(len(g)) for g in groups]
    var = sum((n - 1) * se ** 2 * n for n, se in zip(sizes, stderrs)) / (sum(sizes) - len(sizes))
    return math.sqrt(var / sum(sizes))


def test_a_group_row_prints_lm_evals_pooled_stderr_and_ours_beside_it(make_openai_server: Any, tmp_path: Path) -> None:
    run_dir = make_run(make_openai_server, tmp_path, "m", lambda i, j: (i * 7) % 5 < 2 + i % 3, q=24, n=1)
    result = load_run(run_dir)
    battery = Battery("b", "", (BatteryRun("r", {}),),
                      (BatteryRow("minerva_math", "0-shot", "exact_match", "r", TASK, "mean"),
                       BatteryRow("minerva_math_algebra", "0-shot", "exact_match", "r", TASK, "mean", "Algebra")))
    group, subject = row_figures(battery, {"r": result})
    subject_of = {f"p{i:03d}": meta["subject"] for i, (_, _, meta) in enumerate(problems(24))}
    scores: dict[str, list[float]] = {s: [] for s in SUBJECTS}
    for row in pq.read_table(run_dir / "results.parquet").to_pylist():
        scores[subject_of[row["id"]]].append(float(row["correct"][0]))
    everything = [x for g in scores.values() for x in g]
    pooled = _lmeval_pooled(list(scores.values()))
    # (from the subjects' reported figures, 10 significant digits each: metrics.summary.settle)
    assert math.isclose(group.stderr or math.nan, pooled, rel_tol=1e-9)
    assert math.isclose(group.stderr_all or math.nan, result.tasks[TASK].stderr or math.nan)
    mean = sum(everything) / len(everything)
    over_all = math.sqrt(sum((x - mean) ** 2 for x in everything) / (len(everything) - 1) / len(everything))
    assert math.isclose(group.stderr_all or math.nan, over_all, rel_tol=1e-9) and abs(pooled - over_all) > 1e-4
    assert subject.stderr_all is None  # a subtask row: its own stderr, as lm-eval prints it
    head, cells = table_cells([group, subject])
    assert head[-1] == "SE over all problems (reasoneval)"
    assert cells[0][4] == f"{pooled:.4f}" and cells[0][-1] == f"{over_all:.4f}" and cells[1][-1] == ""
