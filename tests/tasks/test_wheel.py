"""What the built wheel ships: every file of the source package (a task's data file, the few-shot exemplars) is package
data in pyproject.toml, so it is in the wheel; and every shipped task whose rows ship with it loads from the wheel
alone. A data file left out of `[tool.setuptools.package-data]` passes every test run from the source tree and is
missing from the wheel: `unshipped_files` names it (tried here on a tree made with that omission), and one wheel is
built (offline, no dependencies: about 5 s) to check the prediction against setuptools and load the tasks from it."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
SKIP_PARTS = {"__pycache__"}


def package_files(root: Path, package: str = "reasoneval") -> list[str]:
    """The files of src/<package> that are not Python modules, relative to the package (posix)."""
    base = root / "src" / package
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc") and not SKIP_PARTS & set(p.parts))


def unshipped_files(root: Path, package: str = "reasoneval") -> list[str]:
    """One line per file of the source package that pyproject.toml's package-data globs leave out of the wheel."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config.get("tool", {}).get("setuptools", {}).get("package-data", {}).get(package, [])
    return [f"src/{package}/{f} is not package data, so the wheel lacks it: add a glob matching it (e.g. "
            f"\"{Path(f).parent.as_posix()}/*{Path(f).suffix}\") to [tool.setuptools.package-data] {package} in "
            "pyproject.toml" for f in package_files(root, package) if not any(fnmatch.fnmatch(f, g) for g in globs)]


def test_every_file_of_the_package_is_package_data() -> None:
    assert unshipped_files(ROOT) == []


def test_a_data_file_left_out_of_package_data_is_named(tmp_path: Path) -> None:
    """The contributor's omission: a packaged task's JSONL added beside its module, pyproject.toml not edited."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    data = tmp_path / "src" / "reasoneval" / "tasks" / "data"
    data.mkdir(parents=True)
    (data / "hmmt_feb25.jsonl").write_text('{"problem": "1+1?", "answer": "2"}\n')
    (tmp_path / "src" / "reasoneval" / "py.typed").write_text("")
    assert unshipped_files(tmp_path) == [
        "src/reasoneval/tasks/data/hmmt_feb25.jsonl is not package data, so the wheel lacks it: add a glob matching "
        "it (e.g. \"tasks/data/*.jsonl\") to [tool.setuptools.package-data] reasoneval in pyproject.toml"]
    text = (tmp_path / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text.replace('reasoneval = ["py.typed", ',
                                                          'reasoneval = ["py.typed", "tasks/data/*.jsonl", '))
    assert unshipped_files(tmp_path) == []


LOAD_FROM_WHEEL = textwrap.dedent('''
    import json, sys
    import reasoneval
    from reasoneval.prompts import FEWSHOT_STYLES
    from reasoneval.tasks import TASKS, load_task

    assert reasoneval.__file__.startswith(sys.argv[1]), reasoneval.__file__  # the wheel's package, not the tree's
    loaded = {}
    for name, spec in TASKS.available():
        if spec.data_file is not None:
            loaded[name] = len(load_task(name)[1])
    print(json.dumps({"tasks": loaded, "fewshot": sorted(FEWSHOT_STYLES)}))
''')


@pytest.mark.slow
def test_the_wheel_ships_every_package_file_and_loads_every_packaged_task(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp_path / "dist"), str(tree)],
                           capture_output=True, text=True, timeout=180)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("reasoneval-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
        shipped = {n[len("reasoneval/"):] for n in z.namelist()
                   if n.startswith("reasoneval/") and not n.endswith((".py", "/"))}
    assert shipped == set(package_files(ROOT))  # what unshipped_files predicts is what setuptools ships
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "-c", LOAD_FROM_WHEEL, str(site)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    from reasoneval.prompts import FEWSHOT_STYLES
    from reasoneval.tasks import TASKS

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    packaged = {name for name, spec in TASKS.available() if spec.data_file is not None}
    assert set(got["tasks"]) == packaged and all(n > 0 for n in got["tasks"].values())
    assert got["fewshot"] == sorted(FEWSHOT_STYLES)  # the exemplars (package data) read from the wheel
