"""docs/architecture.md's recipes ("Adding a sampling option / a run option / a task / a scorer / an engine"), each as
exactly the edits the docs say, made to a copy of the tree. tests/test_recipes.py makes them all on one copy and checks
each works there (with the copy's own tests of the places they touch); scripts/recipe_check.py makes them and runs the
copy's whole test suite (a step of every CI run, `.ci/run`)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "tests" / "plugins"

# Adding a sampling option: one line in SamplingParams (a made-up option; extra_body's is the class's last field).
SAMPLING_OPTION = '    dummy_penalty: float | None = sampling_option(None, parse=float, help="a made-up sampling option")\n'
# Adding a run option: one field of EvalConfig (in the execution group, at the class's end).
RUN_OPTION = ('    dummy_note: str | None = run_option(None, group=EXECUTION, help="a made-up run option: a note '
              'kept with the run")\n')


def copy_tree(dest: Path) -> Path:
    """The parts of the checkout a contributor edits and tests: src, tests, bench, scripts, docs, .ci, pyproject.toml."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
    for part in ("src", "tests", "bench", "scripts", "docs", ".ci"):
        shutil.copytree(ROOT / part, dest / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def _insert(path: Path, anchor: str, text: str, *, before: bool = True) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path}: the recipe's anchor {anchor!r} is not there once"
    path.write_text(source.replace(anchor, text + anchor if before else anchor + text), encoding="utf-8")


def add_sampling_option(tree: Path, name: str = "dummy_penalty") -> None:
    _insert(tree / "src" / "reasoneval" / "records.py", "\n\n\ndef sampling_options_set(",
            "\n" + SAMPLING_OPTION.replace("dummy_penalty", name).rstrip("\n"))


def add_run_option(tree: Path) -> None:
    """The field, and its place in the option-combinations table (it combines with every other option)."""
    _insert(tree / "tests" / "run" / "test_option_combinations.py", "ALWAYS = {", '"dummy_note", ', before=False)
    options = tree / "src" / "reasoneval" / "run" / "options.py"
    source = options.read_text(encoding="utf-8")
    body = source.split("class EvalConfig(SamplingParams):", 1)[1]
    last_field = body.split("\n    def ", 1)[0].rstrip("\n") + "\n"  # the fields end where the first method starts
    _insert(options, last_field, RUN_OPTION, before=False)


def _example(module: str, old: str, new: str) -> str:
    """A docs example module, its name `old` made `new` (the suite's own tests register the examples under their
    names: a built-in of the same name would clash with them)."""
    return (PLUGINS / module).read_text(encoding="utf-8").replace(old, new)


def add_task(tree: Path) -> None:
    """The task recipe: its TaskSpec in a module of its own, one registry line in tasks/registry.py."""
    (tree / "src" / "reasoneval" / "tasks" / "recipe_doubles.py").write_text(
        _example("doubles_task.py", "doubles", "recipe_doubles"), encoding="utf-8")
    _append_line(tree / "src" / "reasoneval" / "tasks" / "registry.py",
                 'TASKS.add_lazy("recipe_doubles", "reasoneval.tasks.recipe_doubles:DOUBLES")')


def add_scorer(tree: Path) -> None:
    (tree / "src" / "reasoneval" / "scoring" / "recipe_line.py").write_text(
        _example("last_line.py", "last_line", "recipe_line"), encoding="utf-8")
    _after_last(tree / "src" / "reasoneval" / "scoring" / "base.py", "SCORERS.add_lazy(",
                'SCORERS.add_lazy("recipe_line", "reasoneval.scoring.recipe_line:LastLineScorer")')


def add_engine(tree: Path) -> None:
    (tree / "src" / "reasoneval" / "engines" / "recipe_constant.py").write_text(
        _example("constant_engine.py", '"constant"', '"recipe_constant"'), encoding="utf-8")
    _after_last(tree / "src" / "reasoneval" / "engines" / "__init__.py", "ENGINES.add_lazy(",
                'ENGINES.add_lazy("recipe_constant", "reasoneval.engines.recipe_constant")')


def _append_line(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + line + "\n", encoding="utf-8")


def _after_last(path: Path, prefix: str, line: str) -> None:
    """`line` after the last line starting with `prefix` (the registry's shipped entries)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    last = max(i for i, text in enumerate(lines) if text.startswith(prefix))
    lines.insert(last + 1, line + "\n")
    path.write_text("".join(lines), encoding="utf-8")


# Each under a name of its own (the suite's tests make the sampling option's edit, and register the examples, under
# the docs' names).
RECIPES: dict[str, Callable[[Path], None]] = {
    "sampling_option": lambda tree: add_sampling_option(tree, "recipe_penalty"), "run_option": add_run_option,
    "task": add_task, "scorer": add_scorer,
    "engine": add_engine}
