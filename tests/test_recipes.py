"""docs/architecture.md's recipes, executed: a copy of the tree gets exactly the edits each "Adding ..." section says
(tests/recipes.py: a sampling option's line in records.py, a run option's field in run/options.py, a task's module and
registry line, a scorer's module and registry line, an engine's module and registry line) and nothing else; in the
copy, `reasoneval run` takes the new run option, runs the new task on the new engine and scores a file with the new
scorer, and the copy's own tests of the places a recipe touches (the layers, the option tables and flags, every engine
x every sampling option, the docs' claims) pass unedited. scripts/recipe_check.py runs the copy's whole suite (a
step of every CI run: as long as the suite, too slow for a test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.recipes import RECIPES, copy_tree

CHECK = textwrap.dedent('''
    import json, sys
    from pathlib import Path

    import reasoneval

    assert reasoneval.__file__.startswith(sys.argv[1]), reasoneval.__file__  # the copy's package, edited
    out = Path(sys.argv[2])
    from reasoneval.cli.main import main
    from reasoneval.fleet.jobs import make_job
    from reasoneval.results.schema import load_run
    from reasoneval.run.options import EvalConfig

    got = {}
    # the task on the engine, with the run option and the sampling option given on the command line
    rc = main(["run", "--engine", "recipe_constant", "--engine-arg", "answer=10", "--tasks", "recipe_doubles", "--n", "1",
               "--dummy-note", "hello", "--output-dir", str(out / "task"), "--no-progress", "--json"])
    run = load_run(next((out / "task").glob("*/*")))
    got["task"] = [rc, run.tasks["recipe_doubles"].num_problems, run.tasks["recipe_doubles"].mean, run.config.engine]
    # the scorer, on a user's file (run --scorer)
    data = out / "rows.jsonl"
    data.write_text(json.dumps({"problem": "Say it", "answer": "The answer is \\\\boxed{7}."}) + "\\n")
    rc = main(["run", "--engine", "recipe_constant", "--engine-arg", "answer=7", "--data", str(data), "--scorer",
               "recipe_line",
               "--n", "1", "--output-dir", str(out / "scorer"), "--no-progress", "--json"])
    run = load_run(next((out / "scorer").glob("*/*")))
    got["scorer"] = [rc, run.scorers, [m.mean for m in run.tasks.values()]]
    # the run option: a field of EvalConfig, a jobs-file key
    got["run_option"] = [EvalConfig(dummy_note="x").dummy_note,
                         make_job({"model": "m", "dummy-note": "y"}, {}, out, where="jobs").config.dummy_note]
    print(json.dumps(got))
''')

# The copy's own tests of what the recipes touch (a few seconds; the whole suite: scripts/recipe_check.py).
COPY_TESTS = (
    "tests/test_layers.py::test_every_import_goes_down_the_layers",
    "tests/test_layers.py::test_no_module_import_cycle",
    "tests/test_layers.py::test_no_import_through_a_re_export",
    "tests/run/test_options.py::test_every_field_has_a_flag_a_help_and_the_parsers_default",
    "tests/run/test_options.py::test_jobs_file_values_are_checked_like_flags",
    "tests/run/test_option_combinations.py::test_every_run_option_is_placed",
    "tests/engines/test_every_option.py::test_echo_never_samples_so_it_refuses_every_option_beyond_the_first",
    "tests/tasks/test_declaration.py::test_every_shipped_task_is_declared_completely",
    "tests/test_architecture.py::test_the_docs_show_every_taskspec_field_with_its_default_and_every_row_key",
)


def test_every_recipe_of_the_docs_is_its_edits_and_nothing_else(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    for recipe in RECIPES.values():
        recipe(tree)
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    proc = subprocess.run([sys.executable, "-c", CHECK, str(tree / "src"), str(tmp_path)], capture_output=True,
                          text=True, timeout=300, cwd=tree, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["task"] == [0, 20, 1 / 20, "recipe_constant"]  # 5 + 5 is the one double the constant 10 answers
    assert got["scorer"] == [0, {"recipe_line": "1"}, [1.0]]  # the whole response is its one line
    assert got["run_option"] == ["x", "y"]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *COPY_TESTS],
                           capture_output=True, text=True, timeout=300, cwd=tree, env=env)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
