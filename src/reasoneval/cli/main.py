"""The command line: the top parser, built from each command group's module (run, report, score, fleet, analysis,
doctor), and the small commands `engines | tasks | data pull`."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import sys
from typing import Collection, Sequence

from reasoneval.errors import RunIncomplete, UserError
from reasoneval.version import __version__

log = logging.getLogger("reasoneval")


def _csv(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _cmd_tasks(a: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from reasoneval.report.text import console_for_tables, print_table
    from reasoneval.tasks import GROUPS, task_listing
    from reasoneval.tasks.catalog import LMEVAL_NAMES

    data_dir = a.data_dir or os.environ.get("REASONEVAL_DATA_DIR")
    rows = task_listing(Path(data_dir) if data_dir else None)
    console = console_for_tables()
    print_table(["name", "source", "scorer", "from", "local", "size"],
                [[str(r["name"]), str(r["source"]), str(r.get("scorer", "")), str(r["from"]),
                  "yes" if r.get("local") else "no", "" if r.get("size") is None else str(r["size"])] for r in rows],
                "tasks", console, left=5)
    for g, members in GROUPS.items():
        console.print(f"group [bold]{g}[/bold] = {', '.join(members)}")
    for t, lm in LMEVAL_NAMES.items():
        console.print(f"lm-eval's name for [bold]{t}[/bold]: {lm}", soft_wrap=True)
    return 0


def _cmd_engines(a: argparse.Namespace) -> int:
    from reasoneval.engines import ENGINES
    from reasoneval.report.text import console_for_tables, print_table
    from reasoneval.run.options import engine_flags

    console = console_for_tables()
    flags = engine_flags()
    for engine, module in ENGINES.available():  # a plugin engine that cannot be loaded: left out with a warning
        caps = module.CAPABILITIES
        origin = ENGINES.provenance(engine)
        console.print(f"[bold]--engine {engine}[/bold]: {(module.__doc__ or '').strip().splitlines()[0]}",
                      soft_wrap=True)
        console.print(f"  from {f'the package {origin}' if origin else 'reasoneval (built in)'}")
        fields = dataclasses.fields(module.Options)
        if fields:
            print_table(["option (--engine-arg KEY=VALUE)", "flag", "default", "help"],
                        [[f.name, flags[f.name][0] if f.name in flags else "", repr(f.default), f.metadata.get("help", "")]
                         for f in fields], console=console, left=4)
        else:
            console.print("  no options of its own (the common flags: --model, --base-url, ...)")
        extra = "any" if caps.extra_body_keys is None else ", ".join(sorted(caps.extra_body_keys)) or "none"
        renamed = "".join(f"; {k} is sent as {v}" for k, v in sorted(caps.renamed.items()) if k != v)
        note = (" (with its default options; other options change them: --server, inner=...)"
                if hasattr(module, "configured_capabilities") else "")
        console.print(f"  APIs: {', '.join(sorted(caps.apis))}; --extra-body keys{note}: {extra}{renamed}\n")
    return 0


def _cmd_data_pull(a: argparse.Namespace) -> int:
    from reasoneval.tasks import pull, resolve_task_names

    for path in pull(resolve_task_names(_csv(a.tasks))):
        print(path)
    return 0


# Every command: its one line in `reasoneval --help`, and the function that adds its flags (module:function, given
# the command's parser). Only the command on the command line is built, so `--version`, `tasks` or `report` never
# import the engines (plugins among them) or pyarrow and scipy to make flags they do not take.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("generate, grade and report", "reasoneval.cli.run:add_run_parser"),
    "report": ("rebuild the table, summary.json and results.parquet from a run directory",
               "reasoneval.cli.report:add_report_parser"),
    "engines": ("list the engines with their options and the package each comes from",
                "reasoneval.cli.main:add_engines_parser"),
    "tasks": ("list tasks with sizes and sources", "reasoneval.cli.main:add_tasks_parser"),
    "data": ("download benchmarks ahead of time", "reasoneval.cli.main:add_data_parser"),
    "score": ("grade a run directory again, or an external file of generations",
              "reasoneval.cli.score:add_score_parser"),
    "judge-check": ("the judge's agreement with labelled answer pairs, beside the rule's",
                    "reasoneval.cli.judge:add_judge_check_parser"),
    "doctor": ("what the code sandbox can do here: its mode, the memory bound in force",
               "reasoneval.cli.doctor:add_doctor_parser"),
    "sweep": ("evaluate every model/checkpoint of a jobs file on a Ray cluster, one job per GPU",
              "reasoneval.cli.fleet:add_sweep_parser"),
    "watch": ("evaluate every checkpoint that appears under a folder, once complete",
              "reasoneval.cli.fleet:add_watch_parser"),
    "compare": ("paired comparison of runs on the problems they share", "reasoneval.cli.analysis:add_compare_parser"),
    "analyze": ("SE against samples per problem, samples for a target SE, spread of reruns",
                "reasoneval.cli.analysis:add_analyze_parser"),
    "runs": ("one table of every run under a results folder", "reasoneval.cli.analysis:add_runs_parser"),
    "repro": ("generate a subset of a run again: bitwise reproducible, numerics drift, or a real change",
              "reasoneval.cli.repro:add_repro_parser"),
    "export": ("samples as chat-message training data (JSONL or Parquet)", "reasoneval.cli.analysis:add_export_parser"),
    "view": ("every run of a results folder in the browser, live while it runs", "reasoneval.cli.view:add_view_parser"),
}


def add_engines_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = "example:\n  reasoneval engines\n  reasoneval run --engine local --engine-arg replicas=2"
    p.set_defaults(func=_cmd_engines)


def add_tasks_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.run.flags import add_options
    from reasoneval.run.options import EvalConfig

    p.epilog = "example:\n  REASONEVAL_DATA_DIR=data reasoneval tasks"
    add_options(p, EvalConfig, ["data_dir"])
    p.set_defaults(func=_cmd_tasks)


def add_data_parser(p: argparse.ArgumentParser) -> None:
    dsub = p.add_subparsers(dest="data_command", metavar="pull")
    q = dsub.add_parser("pull", help="download tasks from the Hugging Face Hub into the local cache",
                        epilog="example:\n  reasoneval data pull math gsm8k", formatter_class=p.formatter_class)
    q.add_argument("tasks", nargs="+")
    q.set_defaults(func=_cmd_data_pull)


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The top parser with every command listed; the flags only of `commands` (None: of all of them)."""
    parser = argparse.ArgumentParser(prog="reasoneval", description="Evaluate reasoning models on math and "
                                     "science benchmarks: resumable K-sampling, pass@k, honest error bars.")
    parser.add_argument("--version", action="version", version=f"reasoneval {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_, where) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, formatter_class=argparse.RawDescriptionHelpFormatter)
        if commands is None or name in commands:
            module, function = where.split(":")
            getattr(importlib.import_module(module), function)(p)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command an argument list names: its first word that is not an option (the top parser's options,
    --debug and --version, take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    from reasoneval.run.progress import setup_logging

    setup_logging()  # before parsing: an old flag spelling warns in the usual log format
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser([command_of(argv) or ""])
    except UserError as e:  # `run`'s flags: a plugin engine that cannot be loaded (each engine's options make flags)
        print(f"reasoneval: error: {e}", file=sys.stderr)
        return e.exit_code
    a = parser.parse_args(argv)
    setup_logging(a.debug)
    if not getattr(a, "func", None):
        parser.print_help()
        return 2
    try:
        return int(a.func(a))
    except (UserError, RunIncomplete) as e:
        if a.debug:
            raise
        print(f"reasoneval: error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a disk that is full or read-only, outside the run's own writes (which say more)
        if a.debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"reasoneval: error: {where}{e.strerror or e}; the files it was writing are as they were: free space "
              "(or make it writable) and run the command again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("reasoneval: interrupted; finished samples are kept, re-run the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
