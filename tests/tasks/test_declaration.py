"""A task declares what it needs (a prompt style its scorer reads, a registered scorer, one source, a size), and an
incomplete or inconsistent declaration is a one-line error when the task is registered (first resolved), naming the
missing piece and the fix. Each omission a contributor made is tried here, on a task registered for the test; every
shipped task passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasoneval.cli.main import main
from reasoneval.errors import UserError
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import TASKS, PackageFile, TaskSpec, load_task
from reasoneval.tasks.registry import declaration_errors
from tests.plugins import register_for_the_test

HERE = "tests.tasks.test_declaration"


def _rows() -> list[dict[str, str]]:
    return [{"problem": f"What is {n} + {n}?", "answer": str(2 * n)} for n in range(3)]


# A competition task that left out its prompt style (it would have been asked for a \boxed{} answer).
USACO = TaskSpec("usaco", "USACO problems", generate=_rows, size=3, scoring=TaskScoring("contest"))
USACO_COMPLETE = TaskSpec("usaco", "USACO problems", generate=_rows, size=3, scoring=TaskScoring("contest"),
                          prompt="livecodebench")
TWO_SOURCES = TaskSpec("two_sources", "a generated task that also names a file", generate=_rows, size=3,
                       data_file=PackageFile(__name__, "rows.jsonl"))
BAD_SIZE = TaskSpec("bad_size", "a size that is no count", generate=_rows, size=0)
SCORING_OPTIONS = TaskSpec("scoring_options", "scorer options but no options", generate=_rows, size=3,
                           scoring_options=("all_tests",))
# A packaged or generated task whose rows are fewer than its declared size (size 30 with 3 rows).
WRONG_SIZE = TaskSpec("wrong_size", "size 30, 3 rows", generate=_rows, size=30)
# A scorer name the registry lacks (misspelt): checked when a run resolves what it uses (a plugin's scorer may be
# registered after the task), before anything is generated.
MISSPELT_SCORER = TaskSpec("misspelt_scorer", "a scorer name that is not registered", generate=_rows, size=3,
                           scoring=TaskScoring("contests"), prompt="plain")
WRONG_SIZE_FILE = TaskSpec("wrong_size_file", "size 30, a file of 3 rows", size=30,
                           data_file=PackageFile("sizeplugin", "rows.jsonl"))


@pytest.mark.parametrize("name, message", [
    ("usaco", "task 'usaco' names no prompt style, and its scorer 'contest' has none by default (only math does): add "
              "prompt=... (a prompts.PROMPTS name) to its TaskSpec"),
    ("two_sources", "task 'two_sources' has generate and data_file: a task has one source; keep one"),
    ("bad_size", "task 'bad_size' has size 0: give the number of problems (a positive integer) or None"),
    ("scoring_options", "task 'scoring_options' passes options all_tests to its scorer but takes no options: give it "
                        "options=... (what --task-arg does) or drop scoring_options"),
])
def test_an_incomplete_declaration_is_one_line_at_registration(
        name: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_the_test(monkeypatch, TASKS, name, f"{HERE}:{name.upper()}")
    with pytest.raises(UserError) as e:
        TASKS.get(name)
    assert str(e.value) == message


def test_the_completed_declaration_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_the_test(monkeypatch, TASKS, "usaco", f"{HERE}:USACO_COMPLETE")
    assert TASKS.get("usaco").prompt == "livecodebench"


def test_a_task_naming_an_unknown_scorer_stops_the_run_before_generation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    register_for_the_test(monkeypatch, TASKS, "misspelt_scorer", f"{HERE}:MISSPELT_SCORER")
    rc = main(["run", "--engine", "echo", "--tasks", "misspelt_scorer", "--n", "1", "--output-dir", str(tmp_path / "out"),
               "--no-progress"])
    assert rc == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "reasoneval: error: unknown scorer 'contests'; known scorers: ")
    assert not list((tmp_path / "out").rglob("*.jsonl"))  # nothing generated


def test_a_math_task_gets_the_boxed_prompt_and_no_other_does() -> None:
    """The default prompt comes from the scorer: math's answers are asked for in \\boxed{}; a task of another scorer
    keeps no prompt until it names one."""
    assert TaskSpec("m", "math", scoring=TaskScoring("math")).prompt == "boxed"
    assert TaskSpec("m", "math").prompt == "boxed"
    assert TaskSpec("c", "contest", scoring=TaskScoring("contest")).prompt == ""
    assert TaskSpec("c", "contest", scoring=TaskScoring("contest"), prompt="plain").prompt == "plain"


def test_every_shipped_task_is_declared_completely() -> None:
    bad = {name: declaration_errors(spec) for name, spec in TASKS.available() if declaration_errors(spec)}
    assert bad == {}


def test_a_generated_task_with_fewer_rows_than_its_size_fails_when_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_the_test(monkeypatch, TASKS, "wrong_size", f"{HERE}:WRONG_SIZE")
    with pytest.raises(UserError) as e:
        load_task("wrong_size")
    assert str(e.value) == ("task 'wrong_size' declares size 30 but generated has 3 rows: fix TaskSpec.size or the "
                            "data")


def test_a_packaged_file_with_fewer_rows_than_its_size_fails_when_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "sizeplugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    monkeypatch.syspath_prepend(str(tmp_path))
    register_for_the_test(monkeypatch, TASKS, "wrong_size_file", f"{HERE}:WRONG_SIZE_FILE")
    with pytest.raises(UserError) as e:
        load_task("wrong_size_file")
    assert str(e.value) == ("task 'wrong_size_file' declares size 30 but package:sizeplugin/rows.jsonl has 3 rows: "
                            "fix TaskSpec.size or the data")
