"""The docs' recipes against the whole test suite: a copy of the tree gets the edits docs/architecture.md's "Adding ..."
sections say (tests/recipes.py: a sampling option, a run option, a task, a scorer, an engine; all of them, or the ones
named) and nothing else, and the copy's whole suite runs there. Every test must pass unedited: a test that assumes
the set of options, tasks, scorers or engines is closed fails here. `.ci/run` runs it on every CI run, after the
suite itself; the copy's suite runs on two pytest-xdist workers (`--workers`, default 2; pytest-xdist comes with the
test extra), each test module on one worker (`--dist loadscope`: a module's fixtures are made once). (tests/test_recipes.py
makes the same edits and runs the copy's tests of the places they touch, as a test.)

    python scripts/recipe_check.py                      # every recipe, the whole suite (-x: stops at the first failure)
    python scripts/recipe_check.py sampling_option      # one recipe
    python scripts/recipe_check.py --workers 1 --pytest-args "-q tests/engines"   # a part of the suite, in one process
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.recipes import RECIPES, copy_tree  # noqa: E402

# The suite in two parts, together all of it (pyproject's default leaves out only `vllm`, scripts/ci_vllm.sh's): the
# tests of the embedded llama.cpp model in one process (llama.cpp's threads spin while they wait for each other, so two
# such tests at once on a 2-core machine slow each other many times over), the rest spread over the workers.
PARTS = (("the rest", "not vllm and not local_model", 1 << 10), ("the local_model tests", "local_model and not vllm", 1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("recipes", nargs="*", metavar="RECIPE",
                   help=f"the recipes to make (default: all): {', '.join(RECIPES)}")
    p.add_argument("--pytest-args", default="-q -x -p no:cacheprovider",
                   help="pytest's arguments in the copy (default: %(default)s, the whole suite)")
    p.add_argument("--workers", type=int, default=2,
                   help="pytest-xdist workers running the copy's suite (default: %(default)s; 1: one pytest process)")
    p.add_argument("--keep", action="store_true", help="keep the copy (its path is printed)")
    a = p.parse_args(argv)
    names = a.recipes or list(RECIPES)
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        p.error(f"no recipe {', '.join(unknown)}: choose from {', '.join(RECIPES)}")
    if a.workers < 1:
        p.error(f"--workers must be 1 or more, got {a.workers}")
    if a.workers > 1 and importlib.util.find_spec("xdist") is None:
        p.error(f"--workers {a.workers} needs pytest-xdist, which is not installed: pip install -e '.[test]' "
                "(it is in the test extra), or give --workers 1")
    scratch = Path(tempfile.mkdtemp(prefix="recipe-check-"))
    tree = copy_tree(scratch / "tree")
    shared = ROOT.parent / "shared"
    if shared.is_dir():  # beside the copy as beside the checkout (the grader-cases test reads ../shared)
        (scratch / "shared").symlink_to(shared)
    for name in names:
        RECIPES[name](tree)
    print(f"recipes made in {tree}: {', '.join(names)}", flush=True)
    # The copy's package and tests first (what PYTHONPATH held stays after them).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree / "src"), str(tree),
                                                                     os.environ.get("PYTHONPATH")]))}
    # tests/test_recipes.py makes the recipes on a copy of its own tree: in this copy, which has them, it would make
    # them twice (registered twice); it runs in the plain suite.
    pytest_args = [*shlex.split(a.pytest_args), "--deselect",
                   "tests/test_recipes.py::test_every_recipe_of_the_docs_is_its_edits_and_nothing_else"]
    status = 0
    for what, marks, workers in PARTS:
        workers = min(workers, a.workers)
        spread = ["-n", str(workers), "--dist", "loadscope"] if workers > 1 else []
        print(f"+ (in the copy) pytest {shlex.join([*pytest_args, '-m', marks, *spread])}", flush=True)
        t = time.monotonic()
        code = subprocess.run([sys.executable, "-m", "pytest", *pytest_args, "-m", marks, *spread], cwd=tree,
                              env=env).returncode
        print(f"recipe check, {what}: pytest exited {code} after {time.monotonic() - t:.0f} s on {workers} "
              f"process(es)", flush=True)
        if code == 5:  # no test of this part selected (--pytest-args chose others)
            continue
        status = status or code
        if code != 0:
            break
    print("recipe check: " + ("every test passed with the recipes made" if status == 0 else
                              "a test fails with the recipes made"))
    if not a.keep:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
