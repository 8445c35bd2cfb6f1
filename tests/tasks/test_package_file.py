"""TaskSpec.data_file: a data file shipped in a package, in any format --data reads, recorded as its package file;
a file or package that is not there is a one-line error naming it and what to do."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from reasoneval.errors import UserError
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import TASKS, PackageFile, TaskSpec, load_task
from tests.plugins import register_for_the_test

# The tasks, as a plugin module declares them; each test writes the package they name under its tmp_path.
CSV_ROWS = TaskSpec("csv_rows", "rows from a CSV in a package", data_file=PackageFile("csvplugin.tasks", "data/rows.csv"),
                    scoring=TaskScoring("math"))
NO_FILE = TaskSpec("no_file", "a file the package lacks", data_file=PackageFile("emptyplugin", "data/nothing.jsonl"))
NO_PACKAGE = TaskSpec("no_package", "a package not installed", data_file=PackageFile("no_such_plugin_pkg", "rows.jsonl"))
HERE = "tests.tasks.test_package_file"


def _package(root: Path, name: str) -> Path:
    pkg = root / name
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks.py").write_text("")
    return pkg


def test_a_csv_in_a_package_is_read_like_data_and_recorded_as_the_package_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, "csvplugin")
    with open(pkg / "data" / "rows.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "problem", "answer"])
        w.writeheader()
        w.writerows([{"id": f"r{i}", "problem": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(5)])
    monkeypatch.syspath_prepend(str(tmp_path))
    register_for_the_test(monkeypatch, TASKS, "csv_rows", f"{HERE}:CSV_ROWS")
    loaded, problems = load_task("csv_rows", limit=3)
    assert [p.answer for p in problems] == ["1", "2", "3"] and [p.id for p in problems] == ["r0", "r1", "r2"]
    assert loaded.source == "package:csvplugin/data/rows.csv" and loaded.origin == loaded.source


def test_a_missing_file_or_package_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _package(tmp_path, "emptyplugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, pattern in (("no_file", r"task 'no_file': its data file data/nothing.jsonl is not in package "
                                      r"emptyplugin; ship it"),
                          ("no_package", r"the data file rows.jsonl of package no_such_plugin_pkg cannot be read: .* "
                                         r"install the package that ships it")):
        register_for_the_test(monkeypatch, TASKS, name, f"{HERE}:{name.upper()}")
        with pytest.raises(UserError, match=pattern) as e:
            load_task(name)
        assert "\n" not in str(e.value)
