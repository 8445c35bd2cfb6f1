"""The top parser: only the command given is built, so the small commands start without the engines, pyarrow,
scipy or the dashboards (their time is bench/cli_startup.py's figure; here, what each command imports)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoneval.cli.main import COMMANDS, build_parser, command_of

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pyarrow", "scipy", "numpy", "reasoneval.report.dashboards", "reasoneval.engines.openai",
         "reasoneval.engines.local", "reasoneval.metrics", "reasoneval.run.runner",
         # the math grading modules (tasks.hub's mappers import them when they map a Hub row), the progress bar
         "reasoneval.scoring.maths", "reasoneval.scoring.lmeval", "rich.progress", "rich.live")


def modules_after(*argv: str, tmp_path: Path) -> set[str]:
    """The modules a fresh interpreter holds after `reasoneval ARGV` ran (its output thrown away)."""
    code = ("import contextlib, io, json, sys\nfrom reasoneval.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({list(argv)!r})\n    except SystemExit:\n        pass\n"
            "sys.stderr.write(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "REASONEVAL_DATA_DIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


# `report` takes the dashboards' flags (report.dashboards, itself light: each backend's library is imported when used).
# `tasks` prints a rich table; `--version` and `--help` print plain text, without rich at all.
@pytest.mark.parametrize("argv, needed, also_not", [
    (("--version",), (), ("rich",)), (("tasks",), ("reasoneval.tasks.hub", "rich.table"), ()),
    (("--help",), (), ("rich",)), (("report", "--help"), ("reasoneval.report.dashboards",), ()),
    (("view", "--help"), (), ("aiohttp", "reasoneval.view"))])
def test_the_small_commands_import_no_engine_and_no_heavy_library(argv: tuple[str, ...], needed: tuple[str, ...],
                                                                  also_not: tuple[str, ...], tmp_path: Path) -> None:
    loaded = modules_after(*argv, tmp_path=tmp_path)
    assert "reasoneval.cli.main" in loaded and set(needed) <= loaded
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *also_not)
                                            if h not in needed))
    assert heavy == [], heavy


def test_run_help_builds_the_engines_flags_without_an_engine_or_the_task_catalog(tmp_path: Path) -> None:
    loaded = modules_after("run", "--help", tmp_path=tmp_path)
    assert "reasoneval.engines.options" in loaded  # the built-in engines' options make --replicas, --model-path, ...
    # An engine module (asyncio, the local engine's workers, the servers' process code), the task catalog and what
    # generating or grading needs are imported when a run starts, not to build its flags: bench/cli_startup.py's
    # `run --help` figure.
    engines = ("openai", "local", "launch", "vllm", "ray", "echo", "checkpoint")
    libraries = ("asyncio", "aiohttp", "llama_cpp", "vllm", "ray", "torch", "pyarrow", "scipy", "numpy",
                 "rich.progress", "reasoneval.tasks", "reasoneval.run.runner", "reasoneval.run.pipeline",
                 "reasoneval.scoring.maths", "reasoneval.metrics", *(f"reasoneval.engines.{e}" for e in engines))
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in libraries))
    assert heavy == [], heavy


def test_the_light_options_are_the_engines_own() -> None:
    """`run --help` reads engines.options.BUILT_IN instead of those engine modules: each entry is a built-in engine
    whose module takes that class as its Options (an engine added without an entry is imported for its flags)."""
    from reasoneval.engines import ENGINES, engine_module
    from reasoneval.engines.options import BUILT_IN

    assert {"openai", "local", "launch", "vllm", "ray", "echo"} <= set(BUILT_IN)
    assert all(ENGINES.provenance(name) is None and engine_module(name).Options is options
               for name, options in BUILT_IN.items())


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_is_listed_but_only_the_one_given_gets_its_flags() -> None:
    listed = subparsers(build_parser(["report"]))
    assert list(listed) == list(COMMANDS)
    flags = {name: {s for a in p._actions for s in a.option_strings} for name, p in listed.items()}
    assert {"--html", "--log-to", "--grading-timeout"} <= flags["report"]
    assert all(f == {"-h", "--help"} for name, f in flags.items() if name != "report")
    full = subparsers(build_parser())
    assert "--temperature" in {s for a in full["run"]._actions for s in a.option_strings}
    assert "--by-checkpoint" in {s for a in full["runs"]._actions for s in a.option_strings}


@pytest.mark.parametrize("argv, command", [(["--version"], None), (["--debug", "run", "--n", "4"], "run"),
                                           (["tasks", "--data-dir", "d"], "tasks"), ([], None)])
def test_the_command_is_the_first_word_that_is_not_an_option(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


# run's own flags that `score` shares (EvalConfig's fields: tests/run/test_options.py holds them to their fields).
SHARED = {"--data-dir", "--grading-workers", "--grading-timeout", "--judge-model", "--judge-base-url", "--judge-server",
          "--judge-model-path"}


@pytest.mark.parametrize("command, flags_class", [("compare", "analysis:CompareFlags"), ("analyze", "analysis:AnalyzeFlags"),
                                                  ("runs", "analysis:RunsFlags"), ("export", "analysis:ExportFlags"),
                                                  ("score", "score:ScoreFlags"), ("report", "report:ReportFlags")])
def test_the_commands_flags_are_their_declared_fields(command: str, flags_class: str) -> None:
    """Each flag of compare/analyze/runs/export/score (but export's `-o` and run's flags score shares) is generated
    from one field: its spelling, old spellings and default are the field's."""
    import dataclasses
    import importlib

    from reasoneval.run.flags import cli_of, field_default, flag_of

    module, name = flags_class.split(":")
    cls = getattr(importlib.import_module(f"reasoneval.cli.{module}"), name)
    parser = subparsers(build_parser([command]))[command]
    from reasoneval.report.dashboards import LOG_ARGS

    # report's dashboard flags are report.dashboards' own, and its --html (an optional value) is hand-written.
    own = {"--html", "--log-to", *(flag for flag, _ in LOG_ARGS.values())} if command == "report" else set()
    flags = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help", "-o", "--output", *SHARED, *own}
    fields = dataclasses.fields(cls)
    assert flags == {s for f in fields for s in (flag_of(f), *(cli_of(f).aliases))}  # type: ignore[union-attr]
    given = {"compare": ["a"], "analyze": ["a"], "runs": [], "export": ["a"], "score": ["a"], "report": ["a"]}[command]
    parsed = parser.parse_args(given)
    assert {f.name: getattr(parsed, f.name) for f in fields} == {f.name: field_default(f) for f in fields}
