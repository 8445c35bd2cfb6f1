"""The codeforces judge's verdicts cached in the run directory (codeforces_runs.jsonl, the contest scorer's cache): a
re-scoring (`report`, `score`) reuses them without running a program, and a change of the problem's tests or
checker, or of the judge, runs them again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CODEFORCES_RUNS_FILE
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.codeforces import judge as judge_module
from reasoneval.scoring.programs.scorer import sandbox_pool
from tests.scoring.programs.test_codeforces_judge import CHECKER, DERANGEMENT_TESTS, fence, problem

RIGHT = fence("python", "n = int(input())\nprint(*([n] + list(range(1, n))))\n")  # 3 1 2: right, not the answer
FIXED_POINT = fence("python", "n = int(input())\nprint(*range(1, n + 1))\n")


def score(run_dir: Path | None, p: Problem, texts: list[str]) -> tuple[list[str], int]:
    """The verdicts and how many programs ran in a sandbox."""
    runs = [0]
    with ScoringContext(workers=1, cache_dir=run_dir) as ctx:
        scorer = create_scorer(TaskScoring("codeforces", {"calibrate": False, "wall_factor": 4.0}), ctx)
        pool = sandbox_pool(ctx)
        real = pool.run_many

        def counting(sources: Any, limits: Any = None, stdins: Any = None) -> Any:
            runs[0] += sum(len(json.loads(s[12:12 + int(s[:12])])["programs"]) for s in stdins)
            return real(sources, limits, stdins)

        pool.run_many = counting  # type: ignore[method-assign]
        scores = scorer.score_many([p] * len(texts), [
            SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok", text=t)
            for i, t in enumerate(texts)])
    return [str(s.details["verdict"]) for s in scores], runs[0]


def test_a_rescoring_reuses_the_verdicts_until_the_problem_or_judge_changes(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = problem(DERANGEMENT_TESTS)  # compared as tokens: only the reference answer passes
    assert score(tmp_path, tokens, [RIGHT, FIXED_POINT]) == (["wrong_answer", "wrong_answer"], 2)
    assert len((tmp_path / CODEFORCES_RUNS_FILE).read_text().splitlines()) == 2
    assert score(tmp_path, tokens, [RIGHT, FIXED_POINT, RIGHT]) == (["wrong_answer"] * 3, 0)  # all cached
    # the problem's checker is part of the key: with it the same programs run again, and the right one passes
    checked = problem(DERANGEMENT_TESTS, checker={"language": "python", "source": CHECKER})
    assert score(tmp_path, checked, [RIGHT, FIXED_POINT]) == (["passed", "wrong_answer"], 2)
    assert score(tmp_path, checked, [RIGHT, FIXED_POINT]) == (["passed", "wrong_answer"], 0)
    # so are its tests, and the judge's version
    assert score(tmp_path, problem(DERANGEMENT_TESTS[:1], checker={"language": "python", "source": CHECKER}),
                 [RIGHT])[1] == 1
    monkeypatch.setattr(judge_module, "CODEFORCES_SCORER_VERSION", "test-next")
    assert score(tmp_path, checked, [RIGHT]) == (["passed"], 1)
    # without a run directory (a scoring that keeps nothing) every scoring runs the programs
    assert score(None, tokens, [RIGHT])[1] == 1 and score(None, tokens, [RIGHT])[1] == 1


def test_a_sandbox_error_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "NATIVE_DRIVER_SOURCE", "raise SystemExit(0)\n")
    assert score(tmp_path, problem(DERANGEMENT_TESTS), [RIGHT]) == (["sandbox_error"], 1)
    assert not (tmp_path / CODEFORCES_RUNS_FILE).exists()
