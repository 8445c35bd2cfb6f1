"""`--log-to tensorboard`: scalars in a TensorBoard event file, written by TensorBoard's own writer.

`tensorboard.summary.writer.event_file_writer.EventFileWriter` needs neither TensorFlow nor torch
(`torch.utils.tensorboard` needs torch; tensorboardX is a second package): the `tensorboard` package
both writes the events and reads them back (`EventAccumulator`, the tests).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping


class TensorBoardSession:
    def __init__(self, log_dir: Path, replace: bool = False) -> None:
        """replace: the folder is one run directory's dashboard run (its default name), which each command logs
        whole: its earlier event files go, so TensorBoard shows each scalar once, updated in place (issue 52.3)."""
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        log_dir.mkdir(parents=True, exist_ok=True)
        if replace:
            for old in log_dir.glob("events.out.tfevents.*"):
                old.unlink(missing_ok=True)
        self.log_dir = log_dir
        self.writer = EventFileWriter(str(log_dir))
        self.params: dict[str, str | float | int] = {}

    def log(self, metrics: Mapping[str, float], step: int | None, info: Mapping[str, str]) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        values = [summary_pb2.Summary.Value(tag=k, simple_value=v) for k, v in metrics.items()]
        self.writer.add_event(event_pb2.Event(wall_time=time.time(), step=step or 0,
                                              summary=summary_pb2.Summary(value=values)))
        self.writer.flush()

    def log_params(self, params: Mapping[str, str | float | int], step: int | None) -> None:
        """The settings as the HParams plugin's record of this run (every one so far: a reader keeps the last)."""
        if not params:
            return
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.hparams import summary_v2

        self.params.update(params)
        self.writer.add_event(event_pb2.Event(wall_time=time.time(), step=step or 0,
                                              summary=summary_v2.hparams_pb(dict(self.params))))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def open_session(args: Mapping[str, Any], run_name: str, output_dir: Path) -> TensorBoardSession:
    base = Path(str(args["tensorboard_dir"])) if args.get("tensorboard_dir") else output_dir / "tensorboard"
    # One sub-folder per run name: TensorBoard shows each as its own run beside the training's.
    return TensorBoardSession(base / run_name.replace("/", "_"), replace=bool(args.get("one_per_run_dir")))
