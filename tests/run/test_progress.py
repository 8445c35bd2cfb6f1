"""The progress display: a rich bar on a terminal, log lines elsewhere (rich is imported only for the bar, so the
CLI's logging set-up stays light: tests/cli/test_main.py)."""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from reasoneval.run.progress import ProgressReporter
from reasoneval.run.runner import GenerationStats


def test_the_bar_on_a_terminal_shows_the_count_and_the_rates() -> None:
    out = io.StringIO()
    with ProgressReporter(4, enabled=True, console=Console(file=out, force_terminal=True, width=120)) as p:
        p.update(GenerationStats(total=4, done=3, failed=1, retries=2, output_tokens=10))
    text = out.getvalue()
    assert "samples done" in text and "4/4" in text and "retries 2" in text and "FAILED 1 samples" in text


def test_elsewhere_each_update_is_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="reasoneval")
    try:
        with ProgressReporter(2, enabled=False, interval_s=3600) as p:
            assert p._progress is None
            p.update(GenerationStats(total=2, done=1))  # not yet: the interval has not passed
            p.update(GenerationStats(total=2, done=2))  # the last one always
    finally:
        logger.removeHandler(caplog.handler)
    lines = sorted({id(r): r.getMessage() for r in caplog.records}.values())
    assert len(lines) == 1 and lines[0].startswith("samples 2/2 done: 2 generated, 0 failed")
