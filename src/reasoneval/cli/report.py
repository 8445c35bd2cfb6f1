"""`reasoneval report RUN_DIR`: the flags and the command; the scoring is reasoneval.run.score.score_run."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Sequence

from reasoneval.errors import RunIncomplete, UserError
from reasoneval.run.flags import add_options, run_option
from reasoneval.run.options import GRADING_OPTIONS, JUDGE_OPTIONS, EvalConfig


@dataclass(frozen=True)
class ReportFlags:
    """`report`'s own flags, declared once (run.flags.run_option); the grading flags are run's."""

    n: int | None = run_option(None, group="", parse=int, help="use sample indices < N (default: the run's --n)")
    tasks: Sequence[str] = run_option((), group="", action="append", split=True, metavar="A,B",
                                      help="only these tasks (repeatable or comma-separated)")
    json: bool = run_option(False, group="", action="true", help="print summary.json to stdout instead of the table")
    step: int | None = run_option(None, group="", parse=int, help="training step to log at with --log-to (default: "
                                  "from the model's name, e.g. checkpoint-1200)")


def add_report_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.report.dashboards import add_dashboard_args

    p.epilog = "example:\n  reasoneval report results/my-model/0123abcd4567 --n 8"
    p.add_argument("run_dir")
    groups = add_options(p, ReportFlags, ["n", "tasks"])
    add_options(p, EvalConfig, GRADING_OPTIONS)
    add_options(p, EvalConfig, JUDGE_OPTIONS)
    add_options(p, EvalConfig, ("judge_server", "judge_model_path"))
    add_options(p, ReportFlags, ["json"], groups)
    p.add_argument("--html", nargs="?", const="", metavar="FILE",
                   help="say where report.html is (written into the run directory), or write it to FILE too")
    add_options(p, ReportFlags, ["step"], groups)
    add_dashboard_args(p)
    p.set_defaults(func=_cmd_report)


def _cmd_report(a: argparse.Namespace) -> int:
    from reasoneval.report.dashboards import LOG_ARGS, check_backends, dashboard_options, log_once, model_checkpoint

    log_to, log_args = dashboard_options(a)
    check_backends(log_to, log_args)
    if a.step is not None and not log_to:
        raise UserError("--step is the training step results are logged at with --log-to; without --log-to it does "
                        "nothing: add --log-to NAME or drop --step")
    if log_args and not log_to:
        raise UserError(f"{', '.join(LOG_ARGS[k][0] for k in log_args)} are settings of --log-to, which is not "
                        "asked for: add --log-to NAME or drop them")
    if a.judge_server is not None:  # the judge launched for this report, stopped when it ends
        from pathlib import Path

        from reasoneval.scoring.judge.launched import launched_judge

        if a.judge_base_url is not None:
            raise UserError("--judge-server launches the judge at a URL of its own: drop --judge-base-url")
        with launched_judge(a.judge_server, a.judge_model_path, a.judge_model, Path(a.run_dir) / "judge-server") as j:
            a.judge_server, a.judge_model, a.judge_base_url = None, j.model, j.base_url
            return _cmd_report(a)
    if a.judge_model_path is not None:
        raise UserError("--judge-model-path is the launched judge's weights: add --judge-server vllm|sglang|llamacpp")
    if a.judge_model is not None and a.judge_base_url is None:
        raise UserError("--judge-model needs --judge-base-url (the judge's OpenAI-compatible endpoint); "
                        "--judge-base-url alone moves the run's own judge")
    from reasoneval.run.score import score_run

    summary = score_run(a.run_dir, n=a.n, tasks=list(a.tasks) or None, workers=a.grading_workers, grading_timeout=a.grading_timeout,
                        print_table=not a.json, judge_model=a.judge_model, judge_base_url=a.judge_base_url)
    if a.json:
        print(json.dumps(summary.to_json_dict(), indent=2))
    if a.html is not None:
        from pathlib import Path

        from reasoneval.report.html_page import write_run_html
        from reasoneval.run_files import REPORT_FILE

        page = write_run_html(summary, Path(a.html)) if a.html else summary.run_dir / REPORT_FILE
        print(f"HTML report: {page}", file=sys.stderr)
    if log_to and summary.view and not summary.headline_changed:
        print("--log-to: nothing logged; this command's result is a view and the run's headline is unchanged",
              file=sys.stderr)
    elif log_to:
        from pathlib import Path

        from reasoneval.results.schema import load_run

        headline = load_run(summary.run_dir) if summary.view else summary  # the dashboards show the run's headline
        step = a.step if a.step is not None else model_checkpoint(headline.config).step
        log_once(EvalConfig(log_to=log_to, log_args=log_args, output_dir=str(Path(a.run_dir).resolve().parents[1])),
                 headline, step)
    if not summary.complete:
        from reasoneval.run.rerun import missing_advice

        raise RunIncomplete(summary, missing_advice(summary))
    return 0
