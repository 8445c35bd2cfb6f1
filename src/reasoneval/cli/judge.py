"""`reasoneval judge-check FILE`: the configured judge's agreement with labelled answer pairs, beside the rule's
(scoring/judge/check.py)."""

from __future__ import annotations

import argparse
import json


def add_judge_check_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.run.flags import add_options
    from reasoneval.run.options import GRADING_OPTIONS, JUDGE_OPTIONS, EvalConfig

    p.epilog = ("example:\n  reasoneval judge-check ../shared/grader_cases/dev.jsonl --judge-model judge "
                "--judge-base-url http://localhost:8001/v1")
    p.add_argument("path", help="JSONL of labelled pairs: pred, gold, equal (kind, category, dup_of, label_conflict)")
    add_options(p, EvalConfig, JUDGE_OPTIONS)
    add_options(p, EvalConfig, GRADING_OPTIONS)
    p.add_argument("--every-row", action="store_true",
                   help="keep every row (default: category math or mcq, no duplicates, no label conflicts)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=_cmd_judge_check)


def _cmd_judge_check(a: argparse.Namespace) -> int:
    from pathlib import Path

    from reasoneval.errors import UserError
    from reasoneval.scoring.judge.check import check_pairs, read_pairs
    from reasoneval.scoring.judge.client import JudgeSettings, check_judge

    if not a.judge_model or not a.judge_base_url:
        raise UserError("judge-check needs the judge: --judge-model NAME --judge-base-url URL (an OpenAI-compatible "
                        "endpoint)")
    pairs = read_pairs(Path(a.path), every_row=a.every_row)
    judge = JudgeSettings.make(a.judge_model, a.judge_base_url)
    check_judge(judge)  # one line now, not after the rule's pass
    report = check_pairs(pairs, judge, workers=a.grading_workers, grading_timeout=a.grading_timeout)
    if a.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['pairs']} labelled pairs ({report['labelled_equal']} equal) from {a.path}; judge "
          f"{a.judge_model} ({report['judge']['prompt']} prompt), {report['judge_requests']} judge requests")
    for name in ("rule", "judge_alone", "cascade"):
        r = report[name]
        rate = "-" if r["rate"] is None else f"{100 * r['rate']:.1f}%"
        se = "" if r["stderr"] is None else f" ± {100 * r['stderr']:.1f}"
        extra = f", {r['ungraded']} ungraded" if r["ungraded"] else ""
        print(f"  {name:12s} agrees with the labels on {r['agree']}/{r['graded']} = {rate}{se}{extra}")
    return 0
