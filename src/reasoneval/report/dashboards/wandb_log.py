"""`--log-to wandb`: one W&B run per process (a sweep's or watcher's checkpoints in one run).

Figures are logged against `checkpoint_step` (`define_metric(..., step_metric=...)`), not W&B's own
`_step`: checkpoints finish in any order in a sweep, and W&B drops a `step=` lower than the last one.
WANDB_MODE (offline), WANDB_DIR, WANDB_API_KEY and the other WANDB_* variables work as with any W&B run.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping

STEP_METRIC = "checkpoint_step"


class WandbSession:
    def __init__(self, args: Mapping[str, Any], run_name: str) -> None:
        import wandb

        # One W&B run per run directory (its default name), resumed by each command that logs its headline: its id
        # is the name's digest (issue 52.3).
        own = bool(args.get("one_per_run_dir"))
        self.run = wandb.init(project=str(args.get("wandb_project") or os.environ.get("WANDB_PROJECT") or "reasoneval"),
                              entity=args.get("wandb_entity"), group=args.get("wandb_group"), name=run_name,
                              job_type="eval", reinit="create_new",
                              id=hashlib.sha256(run_name.encode()).hexdigest()[:32] if own else None,
                              resume="allow" if own else None)
        self.run.define_metric(STEP_METRIC)
        self.run.define_metric("*", step_metric=STEP_METRIC)

    def log(self, metrics: Mapping[str, float], step: int | None, info: Mapping[str, str]) -> None:
        self.run.config.update({f"reasoneval/{k}": v for k, v in info.items()}, allow_val_change=True)
        self.run.log({**({STEP_METRIC: step} if step is not None else {}), **metrics})

    def log_params(self, params: Mapping[str, str | float | int], step: int | None) -> None:
        if params:
            self.run.config.update(dict(params), allow_val_change=True)

    def close(self) -> None:
        self.run.finish()


def open_session(args: Mapping[str, Any], run_name: str, output_dir: Path) -> WandbSession:
    return WandbSession(args, run_name)
