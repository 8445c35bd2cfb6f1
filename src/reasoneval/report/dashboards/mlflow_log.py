"""`--log-to mlflow`: metrics of one MLflow run (a sweep's checkpoints at their steps), via MlflowClient.

MLflow's metric names allow letters, digits, `_ - . / :` and spaces: `pass@1` becomes `pass_at_1`,
lm-eval's `exact_match,strict-match` becomes `exact_match_strict-match`.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Mapping


def mlflow_key(name: str) -> str:
    return re.sub(r"[^\w\-./: ]", "_", name.replace("@", "_at_"))


# The tag naming the reasoneval run a dashboard run is of (its default name: model and run id), to find it again.
RUN_TAG = "reasoneval.dashboard_run"


class MLflowSession:
    def __init__(self, tracking_uri: str | None, experiment: str, run_name: str, reuse: bool = False) -> None:
        """reuse: the MLflow run tagged with this run name, when there is one (one MLflow run per run directory,
        updated in place by each command that logs its headline), else a new one."""
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found is not None else self.client.create_experiment(experiment)
        quoted = run_name.replace("\\", "\\\\").replace("'", "\\'")
        earlier = self.client.search_runs([experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{quoted}'",
                                          order_by=["attributes.start_time DESC"], max_results=1) if reuse else []
        if earlier:
            self.run_id = earlier[0].info.run_id
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            self.run_id = self.client.create_run(experiment_id, run_name=run_name,
                                                 tags={"reasoneval": "eval", RUN_TAG: run_name}).info.run_id

    def log(self, metrics: Mapping[str, float], step: int | None, info: Mapping[str, str]) -> None:
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        items = [Metric(mlflow_key(k), v, now, step or 0) for k, v in metrics.items()]
        tags = [RunTag(f"reasoneval.{k}", v) for k, v in info.items()]
        for i in range(0, len(items), 1000):  # log_batch takes at most 1000 metrics
            self.client.log_batch(self.run_id, metrics=items[i:i + 1000], tags=tags if i == 0 else [])

    def log_params(self, params: Mapping[str, str | float | int], step: int | None) -> None:
        from mlflow.entities import Param

        items = [Param(mlflow_key(k), str(v)) for k, v in params.items()]
        for i in range(0, len(items), 100):  # log_batch takes at most 100 params
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


# MLflow retries an unreachable server for about 4 minutes per request by default; a dashboard that is down
# must not hold up a sweep's scoring that long. Settings the user gave are kept.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


def open_session(args: Mapping[str, Any], run_name: str, output_dir: Path) -> MLflowSession:
    for key, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(key, value)
    experiment = str(args.get("mlflow_experiment") or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "reasoneval")
    uri = args.get("mlflow_tracking_uri")
    return MLflowSession(str(uri) if uri else None, experiment, run_name, reuse=bool(args.get("one_per_run_dir")))
