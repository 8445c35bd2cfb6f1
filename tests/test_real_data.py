"""The README's test command passes with or without the data folder (tests/real_data.py): a test that reads the real
benchmark files is marked `real_data`, skips without them, and no other test can see them."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests import real_data

TESTS = Path(__file__).resolve().parent
# Where the variable may be read: the mechanism itself; the metamorphic case generator, which bench/ shares and which
# the tests call only with the folder the `real_data_dir` fixture gives; a maintainer's script (not a test module).
MAY_READ = {"real_data.py", "scoring/maths/metamorphic.py", "tasks/fewshot_expected/lmeval_gsm8k/make_expected.py"}


def _reads_of_the_data_folder(tree: ast.AST) -> list[int]:
    """Lines that read $REASONEVAL_DATA_DIR from the environment or name the shared datasets folder."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("get", "getenv", "pop") and node.args[0].value == real_data.ENV:
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == real_data.ENV:
            if isinstance(node.ctx, ast.Load):
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "shared/datasets" in node.value:
            lines.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
            if node.right.value == "datasets":  # ROOT.parent / "shared" / "datasets"
                lines.append(node.lineno)
    return lines


def test_no_test_reads_the_data_folder_but_through_the_real_data_fixture() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel in MAY_READ or rel == "test_real_data.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        # Docstrings may mention the folder: only code counts.
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    first.value.value = None
        offenders += [f"{rel}:{line}" for line in _reads_of_the_data_folder(tree)]
    assert not offenders, ("read the benchmark files through the `real_data_dir` fixture of a test marked "
                           f"@pytest.mark.real_data(...): {offenders}")


def test_the_check_finds_each_way_of_reading_the_folder() -> None:
    src = ("import os\nA = os.environ.get('REASONEVAL_DATA_DIR')\nB = os.environ['REASONEVAL_DATA_DIR']\n"
           "C = os.getenv('REASONEVAL_DATA_DIR')\nD = '/work/shared/datasets'\nE = ROOT / 'shared' / 'datasets'\n"
           "os.environ['REASONEVAL_DATA_DIR'] = 'mine'\n")
    assert _reads_of_the_data_folder(ast.parse(src)) == [2, 3, 4, 5, 6]


def test_an_unmarked_test_runs_without_the_data_folder() -> None:
    assert real_data.ENV not in os.environ


def test_the_fixture_refuses_an_unmarked_test(request: pytest.FixtureRequest) -> None:
    with pytest.raises(pytest.fail.Exception, match="must be marked"):
        request.getfixturevalue("real_data_dir")


@pytest.mark.real_data()
def test_a_marked_test_gets_the_folder(real_data_dir: Path) -> None:
    # Runs only where the folder is (CI's first run); skipped, with the reason, elsewhere.
    assert real_data_dir.is_dir() and os.environ[real_data.ENV] == str(real_data_dir)


def test_without_the_folder_or_a_file_a_marked_test_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.setattr(real_data, "DATA_DIR", None)
    assert real_data.missing(("mbpp.jsonl",)) == (
        "needs real benchmark data (mbpp.jsonl): set REASONEVAL_DATA_DIR to a folder of <task>.jsonl files")
    (tmp_path / "aime24.jsonl").write_text("{}\n")
    monkeypatch.setattr(real_data, "DATA_DIR", tmp_path)
    assert real_data.missing(("aime24.jsonl",)) is None
    assert real_data.missing(("aime24.jsonl", "mbpp.jsonl")) == f"REASONEVAL_DATA_DIR={tmp_path} has no mbpp.jsonl"
