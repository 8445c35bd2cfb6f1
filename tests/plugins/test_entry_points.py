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
from reasoneval.results.schema import RunConfig
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
    # What the run used from outside reasoneval, each with the package and version that supplied it; the run id
    # is the settings' hash as for any run (the plugins are recorded beside it, not hashed).
    assert config["plugins"] == {"engine/demo_calc": "reasoneval-demo-plugin==0.1.0",
                                 "prompt/demo_terse": "reasoneval-demo-plugin==0.1.0",
                                 "scorer/demo_exact": "reasoneval-demo-plugin==0.1.0",
                                 "task/demo_squares": "reasoneval-demo-plugin==0.1.0"}
    loaded = RunConfig.from_json_dict(config)
    assert loaded.plugins == config["plugins"] and loaded.settings.run_id == config["run_id"] == run_dir.name
    assert summary["config"]["plugins"] == config["plugins"]


def test_listings_show_the_plugins_only_when_the_package_is_there(tmp_path: Path) -> None:
    with_plugin = reasoneval("engines", path=(SITE,), cwd=tmp_path)
    assert with_plugin.returncode == 0, with_plugin.stderr[-2000:]
    assert "--engine demo_calc: `demo_calc`: squares the number" in with_plugin.stdout
    assert "wrong_from" in with_plugin.stdout
    # Where each engine comes from: the line after its name.
    lines = with_plugin.stdout.splitlines()
    assert lines[lines.index(next(x for x in lines if x.startswith("--engine demo_calc"))) + 1] == \
        "  from the package reasoneval-demo-plugin==0.1.0"
    assert lines[lines.index(next(x for x in lines if x.startswith("--engine echo"))) + 1] == "  from reasoneval (built in)"
    tasks = reasoneval("tasks", path=(SITE,), cwd=tmp_path)
    assert tasks.returncode == 0
    row = next(x for x in tasks.stdout.splitlines() if "demo_squares" in x)
    assert [c.strip() for c in row.strip("│ ").split("│")][2:4] == ["demo_exact", "reasoneval-demo-plugin==0.1.0"]
    arith = next(x for x in tasks.stdout.splitlines() if "│ arith " in x)
    assert [c.strip() for c in arith.strip("│ ").split("│")][3] == "built in"

    without = reasoneval("engines", cwd=tmp_path)
    assert without.returncode == 0 and "--engine echo" in without.stdout and "demo_calc" not in without.stdout
    tasks = reasoneval("tasks", cwd=tmp_path)
    assert tasks.returncode == 0 and "arith" in tasks.stdout and "demo_squares" not in tasks.stdout
    run = reasoneval("run", "--engine", "demo_calc", "--tasks", "demo_squares", cwd=tmp_path)
    assert run.returncode == 2 and "invalid choice: 'demo_calc'" in run.stderr


def warnings_and_last(stderr: str) -> tuple[list[str], str]:
    """The log's warnings (without their time) and the last line."""
    lines = stderr.strip().splitlines()
    return [w.split(" WARNING ", 1)[1] for w in lines if " WARNING " in w], lines[-1] if lines else ""


def test_a_broken_plugin_not_asked_for_is_left_out_with_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    r = reasoneval("run", "--engine", "echo", "--tasks", "arith", "--limit", "2", "--n", "1", "--output-dir",
                   str(tmp_path / "out"), path=(BROKEN_SITE,), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    warnings = [w for w in warnings_and_last(r.stderr)[0] if "reasoneval-broken-plugin" in w]
    # Its `echo` entry is left out (the built-in wins); its engines that cannot be loaded, one warning each.
    assert warnings[0] == ("engine 'echo' of package reasoneval-broken-plugin (entry point reasoneval.engines) is left "
                           "out: 'echo' is a built-in engine")
    assert warnings[1].startswith("engine 'broken_engine' of package reasoneval-broken-plugin cannot be loaded "
                                  "(entry point reasoneval.engines: broken_engine = 'reasoneval_no_such_module'): "
                                  "ModuleNotFoundError") and warnings[1].endswith("; it is left out")
    assert any(w.startswith("engine 'half_engine'") and "it lacks create(common, options)" in w for w in warnings)
    (run_dir,) = (tmp_path / "out").glob("*/*")
    assert "plugins" not in json.loads((run_dir / "config.json").read_text())  # built-ins only: nothing recorded


@pytest.mark.parametrize("args, error", [
    (("--engine", "broken_engine", "--tasks", "arith"),
     "engine 'broken_engine' of package reasoneval-broken-plugin cannot be loaded (entry point reasoneval.engines: "
     "broken_engine = 'reasoneval_no_such_module'): ModuleNotFoundError: No module named 'reasoneval_no_such_module'"),
    (("--engine", "half_engine", "--tasks", "arith"),
     "engine 'half_engine' ('reasoneval_broken_plugin.half_engine') is not an engine module: it lacks "
     "create(common, options) (package reasoneval-broken-plugin, entry point reasoneval.engines: half_engine = "
     "'reasoneval_broken_plugin.half_engine')"),
    (("--engine", "echo", "--tasks", "unversioned_doubles"),
     "scorer 'no_version' (reasoneval_broken_plugin.parts:NoVersionScorer) is not a Scorer: it lacks version "
     "(reasoneval.scoring.Scorer: name and version strings, score_many) (package reasoneval-broken-plugin, entry "
     "point reasoneval.scorers: no_version = 'reasoneval_broken_plugin.parts:NoVersionScorer')"),
    (("--engine", "echo", "--tasks", "arith", "--prompt-style", "not_a_style"),
     "prompt style 'not_a_style' is str, not a reasoneval.prompts.PromptStyle (package reasoneval-broken-plugin, "
     "entry point reasoneval.prompts: not_a_style = 'reasoneval_broken_plugin.parts:NOT_A_STYLE')"),
])
def test_a_broken_plugin_the_run_uses_is_one_line_naming_its_package_before_any_generation(
        args: tuple[str, ...], error: str, tmp_path: Path) -> None:
    r = reasoneval("run", *args, "--limit", "2", "--n", "1", "--output-dir", str(tmp_path / "out"),
                   path=(BROKEN_SITE,), cwd=tmp_path)
    assert r.returncode == 2
    assert warnings_and_last(r.stderr)[1] == f"reasoneval: error: {error}"
    assert "Traceback" not in r.stderr
    assert not list((tmp_path / "out").glob("*/*/samples.jsonl"))  # nothing was generated


def test_tasks_engines_and_report_work_with_a_broken_plugin_installed(tmp_path: Path) -> None:
    made = reasoneval("run", "--engine", "echo", "--tasks", "arith", "--limit", "3", "--n", "2", "--output-dir",
                      str(tmp_path / "out"), "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    (run_dir,) = (tmp_path / "out").glob("*/*")
    clean = reasoneval("report", str(run_dir), "--json", cwd=tmp_path)
    broken = reasoneval("report", str(run_dir), "--json", path=(BROKEN_SITE,), cwd=tmp_path)
    assert clean.returncode == broken.returncode == 0, broken.stderr[-2000:]
    assert broken.stdout == clean.stdout and "reasoneval-broken-plugin" not in broken.stderr  # report loads no plugin

    tasks = reasoneval("tasks", path=(BROKEN_SITE,), cwd=tmp_path)
    assert tasks.returncode == 0, tasks.stderr[-2000:]
    assert "arith" in tasks.stdout and "unversioned_doubles" in tasks.stdout and "misnamed" not in tasks.stdout
    warnings, _ = warnings_and_last(tasks.stderr)
    assert len(warnings) == 1 and warnings[0].startswith(  # its target's package (demo_plugin) is not installed
        "task 'misnamed' of package reasoneval-broken-plugin cannot be loaded (entry point reasoneval.tasks: misnamed = "
        "'demo_plugin.squares:DEMO_SQUARES'): ModuleNotFoundError") and warnings[0].endswith("; it is left out")
    engines = reasoneval("engines", path=(BROKEN_SITE,), cwd=tmp_path)
    assert engines.returncode == 0 and "--engine echo" in engines.stdout and "half_engine" not in engines.stdout


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


def test_a_file_scored_by_a_plugin_scorer_records_it(tmp_path: Path) -> None:
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"problem": f"What is {n} squared?", "answer": str(n * n),
                                        "response": str(n * n if n < 3 else n)}) + "\n" for n in range(1, 5)))
    r = reasoneval("score", str(gens), "--scorer", "demo_exact", "--json", path=(SITE,), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["tasks"]["gens"]["mean"] == pytest.approx(0.5)  # 1 and 4 right; 3 and 4 not squared
    config = json.loads((tmp_path / "gens.jsonl.reasoneval" / "config.json").read_text())
    assert config["plugins"] == {"scorer/demo_exact": "reasoneval-demo-plugin==0.1.0"}
