"""Issue 41.2: a logged run is one evaluation. A sweep over checkpoints of two training runs keeps them apart on the
dashboards and in its checkpoints table; a battery's rows record their own settings."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from reasoneval.report.dashboards import Dashboards, rows_settings, run_settings
from reasoneval.results.schema import load_run
from tests.analysis.runs import TASK, make_run
from tests.report.test_dashboards import tensorboard_hparams, tensorboard_scalars


@pytest.mark.usefixtures("ray_cluster")
def test_a_sweep_over_two_training_runs_logs_each_to_its_own_dashboard_run(tmp_path: Path) -> None:
    """run7/checkpoint-100 and run8/checkpoint-100 in one sweep: they went to one TensorBoard run (two values of
    `arith/pass@1` at step 100; the hparams' model run7's only) and checkpoints.csv had no training-run column.
    Now each training run is its own dashboard run with one value per step and its own model, and the table has
    a training run column, ordered by training run, then step."""
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.loop import run_jobs
    from reasoneval.fleet.status import show_status

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text(f"""
defaults: {{tasks: [arith], limit: 3, n: 2, engine: echo, log_to: tensorboard,
            log_args: {{tensorboard_dir: {tmp_path / 'tb'}}}}}
models:
  - {{model: run8/checkpoint-100, name: run8-100}}
  - {{model: run7/checkpoint-100, name: run7-100}}
  - {{model: run7/checkpoint-200, name: run7-200}}
""")
    jobs = load_jobs(jobs_file)
    state = run_jobs(jobs, tmp_path / "jobs.yaml.state.json")
    assert {e.state for e in state.values()} == {"done"}
    assert not (tmp_path / "tb" / "jobs").exists()  # no dashboard run holding both training runs
    for run, steps in (("run7", [100, 200]), ("run8", [100])):
        scalars = tensorboard_scalars(tmp_path / "tb" / f"jobs-{run}")
        assert sorted(s for s, _ in scalars["arith/pass@1"]) == steps  # one value per step (in any order)
        hp = tensorboard_hparams(tmp_path / "tb" / f"jobs-{run}")
        assert hp["model"].startswith(f"{run}/checkpoint-")
    assert show_status(jobs_file, jobs)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "jobs.yaml.checkpoints.csv").read_text())))
    assert [(r["training_run"], r["checkpoint"], r["step"]) for r in rows] == [
        ("run7", "run7-100", "100"), ("run7", "run7-200", "200"), ("run8", "run8-100", "100")]
    md = (tmp_path / "jobs.yaml.checkpoints.md").read_text().splitlines()
    assert md[0].startswith("| training run | checkpoint | step | arith/pass@1 |") and md[1].startswith("|---|---|---|---:")


def test_a_batterys_rows_record_their_own_settings(make_openai_server: Any, tmp_path: Path) -> None:
    """The battery's TensorBoard hparams recorded the first row's settings (num_fewshot 4, max_tokens 256) for every
    row. `rows_settings` records each row's under `<battery>/<row>/<setting>`, the shared ones once."""
    four = make_run(make_openai_server, tmp_path, "run7/checkpoint-100", lambda i, j: j < 2, q=4, n=2, num_fewshot=4,
                    prompt_style="gsm8k_wei", max_tokens=256)
    eight = make_run(make_openai_server, tmp_path, "run7/checkpoint-100", lambda i, j: j < 1, q=4, n=2, num_fewshot=8,
                     prompt_style="gsm8k_wei", max_tokens=512)
    rows = {"lmeval-base/gsm8k/4-shot/exact_match": load_run(four), "lmeval-base/gsm8k/8-shot/exact_match": load_run(eight)}
    settings = rows_settings(rows)
    assert settings["lmeval-base/gsm8k/4-shot/exact_match/num_fewshot"] == 4
    assert settings["lmeval-base/gsm8k/8-shot/exact_match/num_fewshot"] == 8
    assert settings["lmeval-base/gsm8k/4-shot/exact_match/max_tokens"] == 256
    assert settings["lmeval-base/gsm8k/8-shot/exact_match/max_tokens"] == 512
    assert settings["model"] == "run7/checkpoint-100" and "num_fewshot" not in settings and "max_tokens" not in settings

    from reasoneval.run.options import EvalConfig

    cfg = EvalConfig(log_to=("tensorboard",), log_args={"tensorboard_dir": str(tmp_path / "tb"), "run_name": "bat"},
                     output_dir=str(tmp_path / "results"))
    with Dashboards() as d:
        d.log(cfg, rows["lmeval-base/gsm8k/4-shot/exact_match"], 100, {"lmeval-base/gsm8k/4-shot/exact_match": 0.5},
              settings)
    hp = tensorboard_hparams(tmp_path / "tb" / "bat")
    assert hp["lmeval-base/gsm8k/8-shot/exact_match/num_fewshot"] == 8
    assert hp["lmeval-base/gsm8k/4-shot/exact_match/num_fewshot"] == 4
    assert run_settings(rows["lmeval-base/gsm8k/8-shot/exact_match"])["num_fewshot"] == 8
    assert TASK  # the runs are of tests.analysis.runs' task
