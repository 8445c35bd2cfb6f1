"""Issue 52.3: one dashboard run per run directory, updated in place, for TensorBoard, MLflow (real mlflow-skinny on a
SQLite store) and W&B (offline); a smoke test (a view) logs nothing under the headline's name. Before: MLflow got one
new run per command (three after K = 4, a smoke test and K = 8), two with stale figures under one name; TensorBoard got
every scalar twice after a smoke test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.cli.main import main
from tests.reliability._helpers import arith_reply, run_args, write_data
from tests.report.test_dashboards import offline_wandb, tensorboard_scalars, wandb_records  # noqa: F401  (fixture)


def test_one_dashboard_run_per_run_directory_updated_in_place(make_openai_server: Any, tmp_path: Path,
                                                              offline_wandb: Path) -> None:  # noqa: F811
    from mlflow.tracking import MlflowClient

    server = make_openai_server(responder=arith_reply)
    write_data(tmp_path / "data", {"aime24": 4})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    log = ["--log-to", "tensorboard,mlflow,wandb", "--mlflow-tracking-uri", uri, "--tensorboard-dir", str(tmp_path / "tb")]
    headlines = []
    for extra in (["--n", "4"], ["--limit", "2", "--n", "1"], ["--n", "8"]):  # K = 4, a smoke test, K = 8
        assert main(run_args(server.base_url, tmp_path, "--tasks", "aime24", *extra, *log)) == 0
        (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
        headlines.append(json.loads((run_dir / "summary.json").read_text())["tasks"]["aime24"])
    assert headlines[0] == headlines[1] and headlines[2]["num_samples"] == 8
    name = f"test-model-{run_dir.name}"

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("reasoneval")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])  # one MLflow run for the run directory
    assert run.info.run_name == name
    assert run.data.metrics["aime24/pass_at_1"] == pytest.approx(headlines[2]["mean"], rel=1e-12)  # the latest
    history = [m.value for m in client.get_metric_history(run.info.run_id, "aime24/pass_at_1")]
    assert history == [pytest.approx(headlines[0]["mean"]), pytest.approx(headlines[2]["mean"])]  # no smoke test

    tb = tensorboard_scalars(tmp_path / "tb" / name)
    assert [d.name for d in (tmp_path / "tb").iterdir()] == [name]
    assert tb["aime24/pass@1"] == [(0, pytest.approx(headlines[2]["mean"], rel=1e-6))]  # once, the headline's now

    ids = {r.run.run_id for r in wandb_records(offline_wandb) if r.HasField("run")}
    assert len(ids) == 1  # the two commands that logged resumed one W&B run
    assert len(list((offline_wandb / "wandb").glob("offline-run-*"))) == 2  # and the smoke test logged none
