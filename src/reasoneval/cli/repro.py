"""`reasoneval repro RUN_DIR`: a fixed subset of a run generated again, with its setup or one thing varied
(run/repro.py; docs/reproducibility.md)."""

from __future__ import annotations

import argparse
import json


def _cmd_repro(a: argparse.Namespace) -> int:
    from reasoneval.analysis.repro import report_lines
    from reasoneval.run.repro import ReproOptions, parse_vary, repro

    concurrency, engine_args = parse_vary(a.vary or [])
    report = repro(a.run_dir, ReproOptions(problems=a.problems, samples=a.samples, concurrency=concurrency,
                                           engine_args=engine_args, base_url=a.base_url, model=a.model, name=a.name,
                                           data_dir=a.data_dir, timeout_s=a.timeout))
    if a.json:
        print(json.dumps(report.to_json_dict(), indent=2))
    else:
        print("\n".join(report_lines(report)))
    return 0


def add_repro_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.analysis.repro import DEFAULT_PROBLEMS, DEFAULT_SAMPLES

    p.epilog = ("examples:\n  reasoneval repro results/m/RUN                          # the run's own setup\n"
                "  reasoneval repro results/m/RUN --vary concurrency=1     # one request at a time\n"
                "  reasoneval repro results/m/RUN --vary engine-arg threads=1\n"
                "  reasoneval repro results/m/RUN --base-url http://other:8000/v1\n"
                "The samples go to RUN/repro/<name>/ (never the run's headline); the verdict: bitwise reproducible / "
                "texts drift but scores agree within noise / scores differ beyond noise (docs/reproducibility.md).")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--problems", type=int, default=DEFAULT_PROBLEMS, metavar="N",
                   help="each task's first N problems with finished samples (default %(default)s)")
    p.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, metavar="K",
                   help="their samples 0..K-1, same seeds (default %(default)s)")
    p.add_argument("--vary", action="append", nargs="+", metavar="SETTING",
                   help="one thing to change: concurrency=N, or engine-arg KEY=VALUE (repeatable)")
    p.add_argument("--base-url", help="generate with another OpenAI-compatible server instead")
    p.add_argument("--model", help="with --base-url: the model name that server serves (default: the run's)")
    p.add_argument("--name", help="the subfolder under RUN_DIR/repro/ (default: from what is varied)")
    p.add_argument("--data-dir", help="where few-shot pools are read from (default $REASONEVAL_DATA_DIR)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per request (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_repro)


