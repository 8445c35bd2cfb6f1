"""The drivers' texts as they run in the sandbox (sandbox/texts.py): each driver file with the shared prelude's text
in place of its prelude import, importing nothing of the package, and defining none of the prelude's names again."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from reasoneval.scoring.programs.sandbox import prelude
from reasoneval.scoring.programs.sandbox.texts import DRIVER_SOURCE, HERE, STDIO_DRIVER_SOURCE, with_prelude

PRELUDE_NAMES = {n.name for n in ast.parse(Path(prelude.__file__).read_text()).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _top_level_names(text: str) -> list[str]:
    return [n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


@pytest.mark.parametrize("filename,source", [("driver.py", DRIVER_SOURCE), ("stdio_driver.py", STDIO_DRIVER_SOURCE)])
def test_each_driver_runs_with_the_prelude_and_without_the_package(filename: str, source: str) -> None:
    tree = ast.parse(source)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "reasoneval" not in imported and imported <= set(sys.stdlib_module_names)
    names = _top_level_names(source)
    assert all(names.count(n) == 1 for n in PRELUDE_NAMES), "a prelude function is defined twice in the text"
    own = _top_level_names((HERE / filename).read_text())
    assert not PRELUDE_NAMES & set(own), "the driver file defines a prelude function again"
    # the text starts in an isolated interpreter as the sandbox starts it (no package on the path), up to main()
    probe = source.replace('if __name__ == "__main__":\n    main()', "print('loaded')")
    r = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0 and r.stdout.strip() == "loaded", r.stderr


def test_a_driver_that_imports_the_package_is_refused() -> None:
    text = (HERE / "driver.py").read_text()
    assert with_prelude(text) == DRIVER_SOURCE
    bad = text.replace("# </prelude>\n", "# </prelude>\nfrom reasoneval.errors import UserError\n")
    with pytest.raises(RuntimeError, match="imports the reasoneval package"):
        with_prelude(bad, "driver.py")
    assert with_prelude("print(1)\n") == "print(1)\n"  # an earlier driver without a prelude block runs as it is
