"""Scoring reads one way: a trace of the modules `score_run` enters (every call into a reasoneval module) stays in
run.score and goes down from there (results, scoring, metrics, report), never back to another module of `run`
(the sampler, generation, the wiring), and decides the headline with one call of the pure rule, scope.decide."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import reasoneval
from reasoneval.run.score import score_run


def test_score_run_enters_run_score_only_and_the_headline_rule_once(tmp_path: Path) -> None:
    result = reasoneval.evaluate(tasks=["arith"], limit=3, n=2, engine="echo", output_dir=str(tmp_path),
                                 print_table=False, progress=False, grading_workers=1)
    entered: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("reasoneval."):
            entered.append((module, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        score_run(Path(result.run_dir), print_table=False, workers=1)
    finally:
        sys.setprofile(None)
    modules = {m for m, _ in entered}
    assert {m for m in modules if m.startswith("reasoneval.run.")} == {"reasoneval.run.score"}
    assert {"reasoneval.results.stream", "reasoneval.metrics.summary", "reasoneval.report.parquet"} <= modules
    rule = [f for m, f in entered if m == "reasoneval.results.scope" and f in ("decide", "choose_headline")]
    assert rule == ["decide", "choose_headline"]  # one decision, made by the pure function
