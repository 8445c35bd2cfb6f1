"""docs/architecture.md's examples run as written: a new scorer and a new engine are one module plus one
registry entry each, and a run works end to end through them."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Iterator

import pytest

import reasoneval
from reasoneval.engines import ENGINES, make_options
from reasoneval.errors import UserError
from reasoneval.scoring import SCORERS, TaskScoring
from reasoneval.tasks import TASKS, TaskSpec

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def example(name: str) -> str:
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```\n<!-- /example -->", DOC.read_text(), re.S)
    assert m, f"no example {name!r} in {DOC}"
    return m.group(1)


def load_module(name: str, code: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(code, f"{DOC}:{name}", "exec"), module.__dict__)  # our own documentation's code
    return module


@pytest.fixture
def registered() -> Iterator[None]:
    """The two examples registered as a user would, removed again after the test."""
    load_module("example_last_line", example("scorer"))
    load_module("example_constant_engine", example("engine"))
    ENGINES.add("constant", "example_constant_engine")
    TASKS.add("arith_exact", TaskSpec("arith_exact", "arith scored by exact match", scoring=TaskScoring(
        "last_line", {"ignore_case": True}), generate=TASKS.get("arith").generate, size=TASKS.get("arith").size))
    try:
        yield
    finally:
        for registry, name in ((SCORERS, "last_line"), (ENGINES, "constant"), (TASKS, "arith_exact")):
            registry._items.pop(name, None)
        sys.modules.pop("example_last_line", None)
        sys.modules.pop("example_constant_engine", None)


def test_example_scorer_and_engine_run_end_to_end(registered: None, tmp_path: Path) -> None:
    first = reasoneval.evaluate(tasks=["arith"], engine="constant", engine_args={"answer": "7"}, n=2, limit=40,
                                output_dir=str(tmp_path), print_table=False, progress=False)
    arith = first.tasks["arith"]
    assert arith.num_problems == 40 and arith.num_samples == 2
    # The constant answer 7 is right exactly where the reference is 7.
    sevens = [p for p in TASKS.get("arith").generate()[:40] if str(p["answer"]) == "7"]
    assert arith.mean == pytest.approx(len(sevens) / 40)
    assert first.config.engine_config == {"text": "The answer is \\boxed{7}."}
    # A task that names the example scorer: the last line "The answer is \boxed{7}." never equals "7".
    second = reasoneval.evaluate(tasks=["arith_exact"], engine="constant", n=1, limit=5,
                                 output_dir=str(tmp_path), print_table=False, progress=False)
    assert second.tasks["arith_exact"].mean == 0.0 and second.scorers == {"last_line": "1"}
    loaded = reasoneval.load_run(second.run_dir)
    assert loaded.config.scoring["arith_exact"] == TaskScoring("last_line", {"ignore_case": True})


def test_engine_options_are_typed_and_checked(registered: None) -> None:
    assert make_options("constant", {"answer": "12"}).answer == "12"
    with pytest.raises(UserError, match="the constant engine has no option 'replicas'"):
        make_options("constant", {"replicas": "2"})


def test_unsupported_extra_body_stops_at_start(registered: None, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--extra-body key\(s\) top_a are not supported by the constant engine"):
        reasoneval.evaluate(tasks=["arith"], engine="constant", extra_body={"top_a": 1}, n=1, limit=1,
                            output_dir=str(tmp_path), print_table=False, progress=False)
