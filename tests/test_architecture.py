"""docs/architecture.md's examples are real modules of the test suite (tests/plugins/last_line.py and
constant_engine.py), byte for byte, registered the way the doc says (one registry entry each, a lazy
"module:attr" reference) and imported by the registry as the shipped ones are; a run works end to end
through them."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.engines import ENGINES, make_options
from reasoneval.errors import UserError
from reasoneval.scoring import SCORERS, TaskScoring
from reasoneval.tasks import TASKS, TaskSpec
from reasoneval.tasks.schema import INT_META, STR_META
from tests.plugins import register_for_the_test

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PLUGINS = ROOT / "tests" / "plugins"


def example(name: str) -> str:
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```\n<!-- /example -->", DOC.read_text(), re.S)
    assert m, f"no example {name!r} in {DOC}"
    return m.group(1)


@pytest.mark.parametrize(("name", "module"), [("scorer", "last_line.py"), ("engine", "constant_engine.py"),
                                             ("task", "doubles_task.py")])
def test_the_docs_examples_are_the_test_suites_modules(name: str, module: str) -> None:
    assert example(name) == (PLUGINS / module).read_text()


ARITH_EXACT = TaskSpec("arith_exact", "arith scored by exact match", scoring=TaskScoring("last_line", {"ignore_case": True}),
                       generate=TASKS.get("arith").generate, size=TASKS.get("arith").size)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two examples registered as the doc says (one entry each), for the test only."""
    register_for_the_test(monkeypatch, SCORERS, "last_line", "tests.plugins.last_line:LastLineScorer")
    register_for_the_test(monkeypatch, ENGINES, "constant", "tests.plugins.constant_engine")
    register_for_the_test(monkeypatch, TASKS, "arith_exact", "tests.test_architecture:ARITH_EXACT")


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
    # The registry imported the contributor's modules: the same objects a plain import gives.
    from tests.plugins import constant_engine, last_line

    assert SCORERS.get("last_line") is last_line.LastLineScorer and ENGINES.get("constant") is constant_engine


def test_example_task_runs_end_to_end(registered: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    register_for_the_test(monkeypatch, TASKS, "doubles", "tests.plugins.doubles_task:DOUBLES")
    result = reasoneval.evaluate(tasks=["doubles"], engine="constant", engine_args={"answer": "10"}, n=1,
                                 output_dir=str(tmp_path), print_table=False, progress=False)
    doubles = result.tasks["doubles"]
    assert doubles.num_problems == 20 and doubles.mean == pytest.approx(1 / 20)  # 5 + 5 is the one right answer
    assert result.config.task_version("doubles") == "1" and result.config.datasets["doubles"].source == "generated"
    from tests.plugins.doubles_task import DOUBLES

    assert TASKS.get("doubles") is DOUBLES and DOUBLES.fewshot is None  # the default: no exemplars of another kind


def _doc_block(marker: str) -> str:
    m = re.search(rf"<!-- {marker} -->\n?(.*?)<!-- /{marker} -->", DOC.read_text(), re.S)
    assert m, f"no {marker} block in {DOC}"
    return m.group(1)


def _shown(f: dataclasses.Field[Any]) -> str:
    if f.default_factory is not dataclasses.MISSING:
        return f"`{getattr(f.default_factory, '__name__', '?')}()`"
    if f.default is dataclasses.MISSING:
        return "required"
    return f"`{json.dumps(f.default) if isinstance(f.default, str) else repr(f.default)}`"


def test_the_docs_show_every_taskspec_field_with_its_default_and_every_row_key() -> None:
    rows = [line.split("|")[1:3] for line in _doc_block("taskspec-fields").splitlines()[2:] if line.startswith("|")]
    assert [(name.strip(), default.strip()) for name, default in rows] == \
        [(f"`{f.name}`", _shown(f)) for f in dataclasses.fields(TaskSpec)]
    keys = re.findall(r"`(\w+)`", _doc_block("row-keys"))
    assert sorted(keys) == sorted({"id", "problem", "answer", "choices", *STR_META, *INT_META})


def test_engine_options_are_typed_and_checked(registered: None) -> None:
    assert make_options("constant", {"answer": "12"}).answer == "12"
    with pytest.raises(UserError, match="the constant engine has no option 'replicas'"):
        make_options("constant", {"replicas": "2"})


def test_unsupported_extra_body_stops_at_start(registered: None, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--extra-body key\(s\) top_a are not supported by the constant engine"):
        reasoneval.evaluate(tasks=["arith"], engine="constant", extra_body={"top_a": 1}, n=1, limit=1,
                            output_dir=str(tmp_path), print_table=False, progress=False)


def test_scorer_modules_import_the_scoring_package_without_a_cycle() -> None:
    """In a fresh interpreter: `import reasoneval.scoring` imports no scorer; the example scorer imports after it
    (and first of all); every shipped scorer, which imports from reasoneval.scoring as the example does,
    resolves through the registry."""
    code = """
import sys
import tests.plugins.last_line
assert "reasoneval.scoring" in sys.modules
import reasoneval.scoring
from reasoneval.scoring import SCORERS
assert not [m for m in sys.modules if m.endswith(".scorer") or m == "reasoneval.scoring.lmeval"], sorted(sys.modules)
SCORERS.add_lazy("last_line", "tests.plugins.last_line:LastLineScorer")
# The built-ins, in the order added (any installed package's scorers come after them: not this test's).
names = [n for n in SCORERS.names() if SCORERS.origin(n) is None]
assert names[-1] == "last_line" and {"math", "choice", "code", "ifeval", "strict_match"} <= set(names), names
for name in names:
    SCORERS.get(name)
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    for first in ("import tests.plugins.last_line", "import reasoneval.scoring"):
        r = subprocess.run([sys.executable, "-c", f"{first}\n{code}"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_no_module_or_folder_of_the_package_has_a_standard_library_name() -> None:
    # A script or `python -c` run from inside a folder of the package puts that folder first on sys.path;
    # a module there named like a standard one (types.py did) then replaces it for the whole interpreter.
    package = Path(reasoneval.__file__).parent
    clashes = []
    for path in package.rglob("*"):
        if "__pycache__" in path.parts:
            continue
        name = path.stem if path.suffix == ".py" else path.name if path.is_dir() else None
        if name in sys.stdlib_module_names and name != "__main__":
            clashes.append(str(path.relative_to(package)))
    assert clashes == []
