"""The command line: `reasoneval run | report | score | tasks | data pull`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from typing import Any, Sequence

from reasoneval.engines import ENGINES, capabilities, engine_module, options_class, parse_engine_args
from reasoneval.errors import RunIncomplete, UserError
from reasoneval.version import __version__

log = logging.getLogger("reasoneval")

RUN_EXAMPLES = """examples:
  # the embedded CPU model on the generated arithmetic task (no GPU, no download)
  reasoneval run --tasks arith --limit 40 --n 8 --max-tokens 256

  # a vLLM / SGLang server you started, 16 samples per problem on the math group
  reasoneval run --model Qwen/QwQ-32B --base-url http://localhost:8000/v1 --tasks math --n 16

  # your own data
  reasoneval run --model m --data my.jsonl --question-key question --answer-key answer

Re-running the same command generates only what is missing; raising --n adds samples.
Exit status: 0 done, 2 bad input, 3 some samples missing or failed (summary has "complete": false),
4 the engine or server cannot serve (it died, or stopped answering); finished samples are kept.
"""


def _csv(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _json_obj(text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError("must be a JSON object, e.g. '{\"repetition_penalty\": 1.05}'")
    return obj


def _add_run_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to evaluate")
    g.add_argument("--tasks", action="append", metavar="A,B", help="tasks or groups, comma-separated or repeated "
                   "(e.g. math, aime24,math500); `reasoneval tasks` lists them")
    g.add_argument("--limit", type=int, help="first N problems of each task")
    g.add_argument("--data-dir", help="folder of <task>.jsonl files (default $REASONEVAL_DATA_DIR; before the Hub)")
    g.add_argument("--data", help="your own data: a JSONL/JSON/Parquet/CSV file or a Hub dataset id")
    g.add_argument("--question-key", default="problem")
    g.add_argument("--answer-key", default="answer")
    g.add_argument("--id-key")
    g.add_argument("--split", help="split of a Hub dataset given with --data")
    g = p.add_argument_group("model and engine")
    g.add_argument("--model", help="model name as served (default: the server's only model)")
    g.add_argument("--engine", choices=ENGINES.names(),
                   help="default: openai with --model/--base-url, else the embedded CPU model (local)")
    g.add_argument("--base-url", help="OpenAI-compatible API incl. /v1 (default $OPENAI_BASE_URL, else "
                   "http://localhost:8000/v1)")
    g.add_argument("--api", choices=["chat", "completions"], default="chat",
                   help="completions for base models (raw prompt)")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                   help="environment variable holding the API key (never written anywhere)")
    g.add_argument("--engine-arg", action="append", default=[], metavar="KEY=VALUE", dest="engine_arg",
                   help="an option of the chosen engine (repeatable); `reasoneval engines` lists them")
    _add_engine_flags(p.add_argument_group("engine options (also --engine-arg KEY=VALUE; `reasoneval engines`)"))
    g = p.add_argument_group("sampling")
    g.add_argument("--n", type=int, default=16, help="samples per problem, K (default 16)")
    g.add_argument("--seed", type=int, default=42, help="run seed; sample j of a problem gets its own seed")
    g.add_argument("--temperature", type=float, default=0.6)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--top-k", type=int)
    g.add_argument("--min-p", type=float)
    g.add_argument("--max-tokens", type=int, default=32768)
    g.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    g.add_argument("--extra-body", type=_json_obj, default={}, metavar="JSON",
                   help="extra request fields, e.g. '{\"repetition_penalty\": 1.05}'")
    g.add_argument("--system-prompt")
    g.add_argument("--prompt-template", metavar="FILE", help="prompt with a {problem} placeholder")
    from reasoneval.cli.prompts import add_prompt_args

    add_prompt_args(g)
    g = p.add_argument_group("adaptive sampling (instead of a fixed --n; docs/statistics.md)")
    g.add_argument("--target-se", type=float, metavar="POINTS", help="sample each problem until the re-run SE of "
                   "each task's mean accuracy is at most this many points (e.g. 0.5), more where it is uncertain")
    g.add_argument("--max-n", type=int, default=256, help="with --target-se: most samples per problem (default 256)")
    g.add_argument("--budget-samples", type=int, metavar="B", help="with --target-se: stop when the run holds B samples, whatever the SE")
    g = p.add_argument_group("execution")
    g.add_argument("--concurrency", type=int, default=64, help="requests in flight (default 64)")
    g.add_argument("--schedule", choices=["longest-first", "sample-major"], default="longest-first",
                   help="order samples start in: one pilot per problem then the longest expected first "
                   "(default), or every problem's sample j before any sample j+1")
    g.add_argument("--timeout", type=float, default=3600.0, help="seconds per request (default 3600)")
    g.add_argument("--max-retries", type=int, default=6)
    g.add_argument("--retry-backoff", type=float, default=1.0, help="base seconds of the exponential backoff")
    g.add_argument("--output-dir", default="results")
    _add_grading_args(g)
    g.add_argument("--no-progress", action="store_true", help="log lines instead of a live bar")
    g.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the table")
    from reasoneval.report.dashboards import add_dashboard_args

    add_dashboard_args(p)


def _add_grading_args(g: Any) -> None:
    g.add_argument("--grading-workers", type=int, help="grading processes (default: CPU count)")
    g.add_argument("--grading-timeout", type=float, default=5.0, help="seconds per grading item")


def _engine_flags() -> dict[str, tuple[str, dataclasses.Field[Any], list[str]]]:
    """Engine options that are also top-level flags: dest -> (flag, field, engines that have it)."""
    out: dict[str, tuple[str, dataclasses.Field[Any], list[str]]] = {}
    for kind in ENGINES:
        for f in dataclasses.fields(options_class(kind)):
            flag = f.metadata.get("flag")
            if not flag:
                continue
            name = flag if isinstance(flag, str) else "--" + f.name.replace("_", "-")
            out.setdefault(f.name, (name, f, []))[2].append(kind)
    return out


def _add_engine_flags(g: Any) -> None:
    for dest, (flag, f, kinds) in _engine_flags().items():
        help_ = f"{f.metadata.get('help', '')} [{', '.join(kinds)}]"
        if f.default is False:
            g.add_argument(flag, dest=dest, action="store_const", const=True, default=None, help=help_)
        elif isinstance(f.default, tuple):
            g.add_argument(flag, dest=dest, action="append", default=None, metavar="ARG", help=help_ + " (repeatable)")
        else:
            g.add_argument(flag, dest=dest, default=None, metavar="VALUE", help=help_)


def _engine_args(a: argparse.Namespace, kind: str) -> dict[str, Any]:
    """--engine-arg pairs plus the engine flags that were given, checked against the chosen engine."""
    args: dict[str, Any] = dict(parse_engine_args(a.engine_arg))
    own = {f.name for f in dataclasses.fields(options_class(kind))}
    for dest, (flag, _, kinds) in _engine_flags().items():
        value = getattr(a, dest, None)
        if value is None:
            continue
        if dest not in own:
            raise UserError(f"{flag} is an option of the {', '.join(kinds)} engine(s), not of --engine {kind}")
        args[dest] = value
    return args


def _cmd_run(a: argparse.Namespace) -> int:
    from reasoneval.run.pipeline import EvalConfig, evaluate

    cfg = EvalConfig(
        tasks=_csv(a.tasks), model=a.model, engine=a.engine, base_url=a.base_url,
        api=a.api, api_key_env=a.api_key_env, n=a.n, seed=a.seed, temperature=a.temperature, top_p=a.top_p,
        top_k=a.top_k, min_p=a.min_p, max_tokens=a.max_tokens, stop=a.stop, extra_body=a.extra_body,
        system_prompt=a.system_prompt, prompt_template=a.prompt_template, concurrency=a.concurrency,
        schedule=a.schedule,
        timeout=a.timeout, max_retries=a.max_retries, retry_backoff=a.retry_backoff, limit=a.limit,
        data_dir=a.data_dir, data=a.data, question_key=a.question_key, answer_key=a.answer_key, id_key=a.id_key,
        split=a.split, output_dir=a.output_dir, grading_workers=a.grading_workers,
        grading_timeout=a.grading_timeout, progress=False if a.no_progress else None, print_table=not a.json,
        prompt_style=a.prompt_style, num_fewshot=a.num_fewshot, style_stop=not a.no_style_stop, greedy=a.greedy,
        target_se=a.target_se, max_n=a.max_n, budget_samples=a.budget_samples, lmeval_metrics=a.lmeval_metrics)
    from reasoneval.report.dashboards import dashboard_options

    cfg.log_to, cfg.log_args = dashboard_options(a)
    cfg.engine_args = _engine_args(a, cfg.engine_kind())
    try:
        summary = evaluate(cfg)
    except RunIncomplete as e:
        if a.json:
            print(json.dumps(e.summary.to_json_dict(), indent=2))
        raise
    if a.json:
        print(json.dumps(summary.to_json_dict(), indent=2))
    print(f"results: {summary.run_dir}", file=sys.stderr)
    return 0


def _cmd_report(a: argparse.Namespace) -> int:
    from reasoneval.run.pipeline import score_run

    tasks = _csv(a.tasks) or None
    from reasoneval.report.dashboards import check_backends, checkpoint_step, dashboard_options, log_once

    log_to, log_args = dashboard_options(a)
    check_backends(log_to, log_args)
    summary = score_run(a.run_dir, n=a.n, tasks=tasks, workers=a.grading_workers, grading_timeout=a.grading_timeout,
                        print_table=not a.json)
    if a.json:
        print(json.dumps(summary.to_json_dict(), indent=2))
    if a.html is not None:
        from pathlib import Path

        from reasoneval.report.html import REPORT_FILE, write_run_html

        page = write_run_html(summary, Path(a.html)) if a.html else summary.run_dir / REPORT_FILE
        print(f"HTML report: {page}", file=sys.stderr)
    if log_to:
        from pathlib import Path

        from reasoneval.run.pipeline import EvalConfig

        step = a.step if a.step is not None else checkpoint_step(summary.model)
        log_once(EvalConfig(log_to=log_to, log_args=log_args, output_dir=str(Path(a.run_dir).resolve().parents[1])),
                 summary, step)
    if not summary.complete:
        raise RunIncomplete(summary)
    return 0


def _cmd_tasks(a: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from rich.console import Console
    from rich.table import Table

    from reasoneval.tasks import GROUPS, task_listing
    from reasoneval.tasks.catalog import LMEVAL_NAMES

    data_dir = a.data_dir or os.environ.get("REASONEVAL_DATA_DIR")
    rows = task_listing(Path(data_dir) if data_dir else None)
    table = Table(title="tasks")
    for col in ("name", "size", "source", "scorer", "local"):
        table.add_column(col, justify="right" if col == "size" else "left")
    for r in rows:
        table.add_row(str(r["name"]), "" if r.get("size") is None else str(r["size"]), str(r["source"]),
                      str(r.get("scorer", "")), "yes" if r.get("local") else "no")
    console = Console()
    console.print(table)
    for g, members in GROUPS.items():
        console.print(f"group [bold]{g}[/bold] = {', '.join(members)}")
    for t, lm in LMEVAL_NAMES.items():
        console.print(f"lm-eval's name for [bold]{t}[/bold]: {lm}", soft_wrap=True)
    return 0


def _cmd_engines(a: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a pipe or a file: no wrapping at 80 columns
        console = Console(width=160)
    flags = _engine_flags()
    for kind in ENGINES:
        module = engine_module(kind)
        caps = capabilities(kind)
        console.print(f"[bold]--engine {kind}[/bold]: {(module.__doc__ or '').strip().splitlines()[0]}")
        table = Table()
        for col in ("option (--engine-arg KEY=VALUE)", "flag", "default", "help"):
            table.add_column(col)
        fields = dataclasses.fields(options_class(kind))
        for f in fields:
            table.add_row(f.name, flags[f.name][0] if f.name in flags else "", repr(f.default), f.metadata.get("help", ""))
        console.print(table if fields else "  no options of its own (the common flags: --model, --base-url, ...)")
        extra = "any" if caps.extra_body_keys is None else ", ".join(sorted(caps.extra_body_keys)) or "none"
        console.print(f"  APIs: {', '.join(sorted(caps.apis))}; --extra-body keys: {extra}\n")
    return 0


def _cmd_data_pull(a: argparse.Namespace) -> int:
    from reasoneval.tasks import pull, resolve_task_names

    for path in pull(resolve_task_names(_csv(a.tasks))):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reasoneval", description="Evaluate reasoning models on math and "
                                     "science benchmarks: resumable K-sampling, pass@k, honest error bars.")
    parser.add_argument("--version", action="version", version=f"reasoneval {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("run", help="generate, grade and report", epilog=RUN_EXAMPLES, formatter_class=fmt)
    _add_run_args(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("report", help="rebuild the table, summary.json and results.parquet from a run directory",
                       epilog="example:\n  reasoneval report results/my-model/0123abcd4567 --n 8", formatter_class=fmt)
    p.add_argument("run_dir")
    p.add_argument("--n", type=int, help="use sample indices < N (default: the run's --n)")
    p.add_argument("--tasks", action="append", help="only these tasks")
    _add_grading_args(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--html", nargs="?", const="", metavar="FILE",
                   help="say where report.html is (written into the run directory), or write it to FILE too")
    p.add_argument("--step", type=int, help="training step to log at with --log-to (default: from the model's "
                   "name, e.g. checkpoint-1200)")
    from reasoneval.report.dashboards import add_dashboard_args

    add_dashboard_args(p)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("engines", help="list the engines with their options",
                       epilog="example:\n  reasoneval engines\n  reasoneval run --engine local --engine-arg replicas=2",
                       formatter_class=fmt)
    p.set_defaults(func=_cmd_engines)

    p = sub.add_parser("tasks", help="list tasks with sizes and sources",
                       epilog="example:\n  REASONEVAL_DATA_DIR=data reasoneval tasks", formatter_class=fmt)
    p.add_argument("--data-dir")
    p.set_defaults(func=_cmd_tasks)

    p = sub.add_parser("data", help="download benchmarks ahead of time")
    dsub = p.add_subparsers(dest="data_command", metavar="pull")
    q = dsub.add_parser("pull", help="download tasks from the Hugging Face Hub into the local cache",
                        epilog="example:\n  reasoneval data pull math gsm8k", formatter_class=fmt)
    q.add_argument("tasks", nargs="+")
    q.set_defaults(func=_cmd_data_pull)

    from reasoneval.fleet.sweep import add_sweep_parser
    from reasoneval.fleet.watch import add_watch_parser
    from reasoneval.run.imported import add_score_parser

    add_score_parser(sub, fmt)
    add_sweep_parser(sub, fmt)
    add_watch_parser(sub, fmt)

    from reasoneval.cli.analysis import add_parsers

    add_parsers(sub, fmt)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from reasoneval.run.progress import setup_logging

    try:
        parser = build_parser()
    except UserError as e:  # a plugin engine that cannot be loaded (every engine's options make flags)
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
    except KeyboardInterrupt:
        print("reasoneval: interrupted; finished samples are kept, re-run the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
