"""The docs' recipes against the whole test suite: a copy of the tree gets the edits docs/architecture.md's "Adding ..."
sections say (tests/recipes.py: a sampling option, a run option, a task, a scorer, an engine; all of them, or the ones
named) and nothing else, and the copy's whole suite runs there. Every test must pass unedited: a test that assumes
the set of options, tasks, scorers or engines is closed fails here. (tests/test_recipes.py makes the same edits and
runs the copy's tests of the places they touch on every CI run; this whole-suite run takes as long as the suite, so
`.ci/run` runs it only with REASONEVAL_RECIPE_CHECK=1.)

    python scripts/recipe_check.py                      # every recipe, the whole suite (-x: stops at the first failure)
    python scripts/recipe_check.py sampling_option      # one recipe
    python scripts/recipe_check.py --pytest-args "-q tests/engines"   # a part of the suite
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("recipes", nargs="*", metavar="RECIPE",
                   help=f"the recipes to make (default: all): {', '.join(RECIPES)}")
    p.add_argument("--pytest-args", default="-q -x -p no:cacheprovider",
                   help="pytest's arguments in the copy (default: %(default)s, the whole suite)")
    p.add_argument("--keep", action="store_true", help="keep the copy (its path is printed)")
    a = p.parse_args(argv)
    names = a.recipes or list(RECIPES)
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        p.error(f"no recipe {', '.join(unknown)}: choose from {', '.join(RECIPES)}")
    scratch = Path(tempfile.mkdtemp(prefix="recipe-check-"))
    tree = copy_tree(scratch / "tree")
    for name in names:
        RECIPES[name](tree)
    print(f"recipes made in {tree}: {', '.join(names)}", flush=True)
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    t = time.monotonic()
    # tests/test_recipes.py makes the recipes on a copy of its own tree: in this copy, which has them, it would make
    # them twice (registered twice); it runs in the plain suite.
    pytest_args = [*shlex.split(a.pytest_args), "--deselect",
                   "tests/test_recipes.py::test_every_recipe_of_the_docs_is_its_edits_and_nothing_else"]
    status = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=tree, env=env).returncode
    print(f"recipe check: pytest exited {status} after {time.monotonic() - t:.0f} s "
          f"({'every test passed with the recipes made' if status == 0 else 'a test fails with the recipes made'})")
    if not a.keep:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
