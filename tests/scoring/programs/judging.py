"""Shared by the sandbox tests: the mode fixture (bubblewrap, and the fallback without it), scoring texts with
the real `code` scorer while counting sandbox runs, and the processes of a sandbox as the host sees them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Sequence

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import Score, ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.scorer import sandbox_pool
from tests.scoring.programs.test_sandbox import _sandboxed_processes


@pytest.fixture(params=["bwrap", "rlimits"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each sandbox mode in turn ($REASONEVAL_SANDBOX, which the code scorer reads)."""
    if request.param == "bwrap" and shutil.which("bwrap") is None:
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not installed: apt-get install -y bubblewrap (CI installs it)")
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setenv("REASONEVAL_SANDBOX", request.param)
    return str(request.param)


HE0_HEAD = "def has_close_elements(numbers, threshold):\n"
HE0_RIGHT = ("    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for j, b in enumerate(numbers) "
             "if i != j)\n")
HE0_WRONG = "    return True\n"  # right on half of the tests only


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def sample(p: Problem, text: str, i: int = 0) -> SampleRecord:
    return SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok", text=text)


def score_counting_runs(problems: Sequence[Problem], texts: Sequence[str], timeout_s: float = 5.0,
                        cache_dir: Path | None = None, workers: int = 2) -> tuple[list[Score], int]:
    """The scores of `texts` (one per problem), and how many programs the sandbox ran for them (a spy on the
    pool: every run goes through). Asserts no process of a program is left."""
    runs = [0]
    with ScoringContext(workers=workers, cache_dir=cache_dir) as ctx:
        scorer = create_scorer(TaskScoring("code", {"timeout_s": timeout_s}), ctx)
        pool = sandbox_pool(ctx)
        real = pool.run_many

        def counting(sources: Sequence[str], limits: Any = None, stdins: Any = None) -> Any:
            runs[0] += len(sources)
            return real(sources, limits, stdins)

        pool.run_many = counting  # type: ignore[method-assign]
        scores = scorer.score_many(list(problems), [sample(p, t, i) for i, (p, t) in enumerate(zip(problems, texts))])
    assert _sandboxed_processes() == [], "a process of a program outlived the scorer"
    return scores, runs[0]


def parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root: int) -> list[int]:
    """Live (not zombie) descendants of process `root`, as the host sees them."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(d.name)] = int(fields[1])
    out, frontier = [], {root}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier}
        out += sorted(frontier)
    return out


def drivers_of(root: int) -> list[int]:
    """The trusted drivers among `root`'s descendants: the sandboxed interpreters whose parent is not one (the
    candidate's side is forked from the driver: the same command line, one and two levels down)."""
    mine = set(descendants(root))
    sandboxed = [p for p in _sandboxed_processes() if p in mine]
    return [p for p in sandboxed if parent_of(p) not in sandboxed]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
