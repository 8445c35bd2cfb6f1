"""A package outside reasoneval adds an engine, a task, a prompt style and a scorer through entry points.

`site/` holds demo_plugin and its installed metadata (`reasoneval_demo_plugin-0.1.0.dist-info`, what pip
writes): with the folder on the path, importlib.metadata finds the entry points, as it finds those of an
installed package. `broken_site/` is a package whose entries go wrong. Nothing here edits a registry: the
commands run in their own interpreters with or without the folders on PYTHONPATH, and the in-process tests
build fresh registries of the real groups.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from reasoneval.errors import UserError
from reasoneval.registry import ENGINE_GROUP, TASK_GROUP, Registry
from reasoneval.tasks.registry import _check_task

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(__file__).resolve().parent / "site"
BROKEN_SITE = Path(__file__).resolve().parent / "broken_site"


def reasoneval(*args: str, path: tuple[Path, ...] = (), cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (ROOT / "src", *path))
    return subprocess.run([sys.executable, "-m", "reasoneval", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=240)


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Both sites on sys.path (as if both packages were installed); their modules forgotten afterwards."""
    monkeypatch.syspath_prepend(str(BROKEN_SITE))
    monkeypatch.syspath_prepend(str(SITE))
    yield
    for name in [m for m in sys.modules if m == "demo_plugin" or m.startswith("demo_plugin.")]:
        del sys.modules[name]


def test_a_plugin_engine_task_prompt_and_scorer_run_end_to_end_from_the_cli(tmp_path: Path) -> None:
    r = reasoneval("run", "--engine", "demo_calc", "--tasks", "demo_squares", "--n", "1", "--output-dir",
                   str(tmp_path / "out"), path=(SITE,), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = (tmp_path / "out").glob("*/*")
    summary = json.loads((run_dir / "summary.json").read_text())
    # The plugin engine squares N right for N < 8: 7 of 10; the plugin scorer scored it and reports its figure.
    squares = summary["tasks"]["demo_squares"]
    assert squares["num_problems"] == 10 and squares["mean"] == pytest.approx(0.7)
    assert squares["extra"]["off_by"]["mean"] == pytest.approx(0.3)
    assert summary["scorers"] == {"demo_exact": "1"}
    # The plugin's prompt style made the prompts.
    first = json.loads((run_dir / "samples.jsonl").read_text().splitlines()[0])
    assert first["text"] in {str(n * n) for n in range(1, 8)} | {str(n * n + 1) for n in range(8, 11)}
    config = json.loads((run_dir / "config.json").read_text())
    assert config["engine_config"] == {"wrong_from": 8}


def test_listings_show_the_plugins_only_when_the_package_is_there(tmp_path: Path) -> None:
    with_plugin = reasoneval("engines", path=(SITE,), cwd=tmp_path)
    assert with_plugin.returncode == 0, with_plugin.stderr[-2000:]
    assert "--engine demo_calc: `demo_calc`: squares the number" in with_plugin.stdout
    assert "wrong_from" in with_plugin.stdout
    tasks = reasoneval("tasks", path=(SITE,), cwd=tmp_path)
    assert tasks.returncode == 0 and "demo_squares" in tasks.stdout and "demo_exact" in tasks.stdout

    without = reasoneval("engines", cwd=tmp_path)
    assert without.returncode == 0 and "--engine echo" in without.stdout and "demo_calc" not in without.stdout
    tasks = reasoneval("tasks", cwd=tmp_path)
    assert tasks.returncode == 0 and "arith" in tasks.stdout and "demo_squares" not in tasks.stdout
    run = reasoneval("run", "--engine", "demo_calc", "--tasks", "demo_squares", cwd=tmp_path)
    assert run.returncode == 2 and "invalid choice: 'demo_calc'" in run.stderr


def test_a_plugin_that_cannot_be_imported_is_a_one_line_error_naming_its_package(tmp_path: Path) -> None:
    r = reasoneval("run", "--engine", "echo", "--tasks", "arith", "--limit", "1", path=(BROKEN_SITE,), cwd=tmp_path)
    assert r.returncode == 2
    *warnings, line = r.stderr.strip().splitlines()
    # The package's `echo` entry is left out (the built-in wins) with one warning; its broken engine stops the command.
    assert len(warnings) == 1 and warnings[0].endswith(
        " WARNING engine 'echo' of package reasoneval-broken-plugin (entry point reasoneval.engines) is left out: "
        "'echo' is a built-in engine"), warnings
    assert line.startswith("reasoneval: error: engine 'broken_engine' of package reasoneval-broken-plugin cannot "
                           "be loaded (entry point reasoneval.engines: broken_engine = 'reasoneval_no_such_module'): "
                           "ModuleNotFoundError"), line


def test_names_come_from_the_entry_points_and_targets_load_on_first_use(on_path: None) -> None:
    engines: Registry[object] = Registry("engine", group=ENGINE_GROUP)
    assert {"broken_engine", "demo_calc"} <= set(engines.names())
    assert "demo_plugin.engine" not in sys.modules  # listing imports nothing
    assert engines.origin("broken_engine") == "reasoneval-broken-plugin"


def test_a_built_in_name_wins_over_a_plugin_entry(on_path: None, caplog: pytest.LogCaptureFixture) -> None:
    engines: Registry[object] = Registry("engine", group=ENGINE_GROUP)
    engines.add_lazy("echo", "reasoneval.engines.echo")
    with caplog.at_level(logging.WARNING, logger="reasoneval"):
        assert engines.names().count("echo") == 1
    assert engines.get("echo").__name__ == "reasoneval.engines.echo"  # type: ignore[attr-defined]
    assert engines.origin("echo") is None
    assert "'echo' of package reasoneval-broken-plugin (entry point reasoneval.engines) is left out" in caplog.text


def test_two_packages_with_one_name_make_that_name_an_error(on_path: None) -> None:
    engines: Registry[object] = Registry("engine", group=ENGINE_GROUP)
    assert engines.names().count("demo_calc") == 1
    with pytest.raises(UserError, match=r"engine 'demo_calc' is declared by several installed packages: "
                                        r"reasoneval-demo-plugin \(demo_plugin.engine\), reasoneval-broken-plugin "
                                        r"\(reasoneval_no_such_module\); uninstall all but one"):
        engines.get("demo_calc")


def test_a_plugin_task_must_be_a_task_spec_of_its_own_name(on_path: None) -> None:
    tasks: Registry[object] = Registry("task", group=TASK_GROUP, check=_check_task)
    assert tasks.get("demo_squares").name == "demo_squares"  # type: ignore[attr-defined]
    with pytest.raises(UserError, match=r"^task 'misnamed' is registered with a TaskSpec named 'demo_squares': the "
                                        r"names must be equal \(package reasoneval-broken-plugin, entry point "
                                        r"reasoneval.tasks: misnamed = 'demo_plugin.squares:DEMO_SQUARES'\)$"):
        tasks.get("misnamed")


def test_lazy_entries_are_listed_without_importing_and_resolved_once() -> None:
    things: Registry[object] = Registry("thing")
    things.add_lazy("dumps", "json:dumps")
    things.add("len", len)
    assert things.names() == ["dumps", "len"] and "dumps" in things
    assert things.get("dumps") is json.dumps and things.reference("dumps") == "json:dumps"
    assert things.names() == ["dumps", "len"]  # resolving keeps the order
    with pytest.raises(ValueError, match="thing 'len' is registered twice"):
        things.add_lazy("len", "builtins:len")
    with pytest.raises(UserError, match="unknown thing 'size'; known things: dumps, len"):
        things.get("size")
