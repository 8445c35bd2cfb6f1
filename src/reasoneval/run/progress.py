"""Live progress: a rich bar on a terminal, periodic log lines elsewhere (CI, nohup, files)."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from reasoneval.run_files import RUN_LOG

if TYPE_CHECKING:  # the CLI sets up logging with this module before it knows the command: no runner or rich imports
    from rich.console import Console
    from rich.progress import Progress

    from reasoneval.run.runner import GenerationStats

log = logging.getLogger("reasoneval")


class ProgressReporter:
    def __init__(self, total: int, *, enabled: bool | None = None, interval_s: float = 30.0,
                 console: Console | None = None) -> None:
        from rich.console import Console

        self.total = total
        self.console = console or Console(stderr=True)
        self.live = (self.console.is_terminal if enabled is None else enabled) and total > 0
        self.interval_s = interval_s
        self._last_log = time.monotonic()
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressReporter:
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("[bold]samples done"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"), TimeRemainingColumn(),
                console=self.console, transient=False, refresh_per_second=4)
            self._progress.start()
            self._task = self._progress.add_task("gen", total=self.total, info="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    @staticmethod
    def describe(s: GenerationStats) -> str:
        tps = s.output_tokens / s.wall_s if s.wall_s > 0 else 0.0
        return (f"in flight {s.in_flight} | {tps:,.0f} tok/s | retries {s.retries} | errors {s.errors}"
                + (f" | FAILED {s.failed} samples" if s.failed else ""))

    def update(self, s: GenerationStats) -> None:
        finished = s.done + s.failed
        self.total = max(self.total, s.total)  # an adaptive run (--target-se) asks for more as it goes
        if self._progress is not None:
            self._progress.update(self._task, completed=finished, total=self.total, info=self.describe(s))
            return
        now = time.monotonic()
        if now - self._last_log >= self.interval_s or finished == self.total:
            self._last_log = now
            eta = (s.wall_s / finished * (self.total - finished)) if finished else float("nan")
            # A sample that failed (after its retries) is done with, not generated: the two counts apart.
            log.info("samples %d/%d done: %d generated, %d failed | %s | ETA %s", finished, self.total, s.done,
                     s.failed, self.describe(s), "?" if eta != eta else f"{eta:,.0f} s")


def setup_logging(debug: bool = False) -> None:
    root = logging.getLogger("reasoneval")
    if not any(getattr(h, "_reasoneval", False) for h in root.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
        # A record logged with extra={"run_log_only": True} is detail for run.log (a crash report behind a plain
        # line already said), not for the terminal.
        h.addFilter(lambda record: not getattr(record, "run_log_only", False))
        h._reasoneval = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


_OPEN_RUN_LOGS: list[int] = []  # the logger's level before each open run log (restored when the last closes)
_CURRENT_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar("reasoneval_run", default=None)


@contextlib.contextmanager
def run_log(run_dir: Path) -> Iterator[None]:
    """Write the log records of this run to RUN_DIR/run.log while the block runs.

    The handler is bound to the run, not to the process: it keeps only records logged in this
    context (the run's task and the tasks it starts), so runs side by side in one process (a sweep,
    a notebook) each get their own log.
    """
    tag = str(Path(run_dir).resolve())
    handler = logging.FileHandler(Path(run_dir) / RUN_LOG, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.addFilter(lambda record: _CURRENT_RUN.get() == tag)
    token = _CURRENT_RUN.set(tag)
    logger = logging.getLogger("reasoneval")
    logger.addHandler(handler)
    # run.log gets INFO lines also when the caller configured no logging (the Python API).
    _OPEN_RUN_LOGS.append(logger.level)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        _CURRENT_RUN.reset(token)
        level = _OPEN_RUN_LOGS.pop()
        if not _OPEN_RUN_LOGS:
            logger.setLevel(level)
