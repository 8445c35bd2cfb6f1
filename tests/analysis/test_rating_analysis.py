"""`reasoneval analyze RUN --rating` on a run whose problems carry no rating: a one-line error saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoneval.cli.main import main
from tests.analysis.runs import loopback_servers, make_run


def test_a_run_without_rated_problems_has_no_rating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with loopback_servers() as make:
        run = make_run(make, tmp_path, "model-a", lambda i, j: (i + j) % 2 == 0, q=4, n=2)
    assert main(["analyze", str(run), "--rating"]) == 2
    err = capsys.readouterr().err
    assert "no task has two or more problems of known rating" in err and "--rating has nothing to estimate" in err
