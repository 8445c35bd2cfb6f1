"""`reasoneval repro RUN_DIR`: a fixed subset of a run generated again, with its setup or one thing varied
(run/repro.py; docs/reproducibility.md)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from reasoneval.analysis.repro import DEFAULT_PROBLEMS, DEFAULT_SAMPLES
from reasoneval.run.flags import add_options, run_option


def _cmd_repro(a: argparse.Namespace) -> int:
    from reasoneval.analysis.repro import report_lines
    from reasoneval.run.repro import ReproOptions, Variation, parse_vary, repro

    concurrency, engine_args = parse_vary(a.vary or [])
    vary = Variation(concurrency=concurrency, engine_args=engine_args, base_url=a.base_url, model=a.model)
    report = repro(a.run_dir, ReproOptions(problems=a.problems, samples=a.samples, vary=vary, name=a.name,
                                           data_dir=a.data_dir, timeout_s=a.timeout))
    if a.json:
        print(json.dumps(report.to_json_dict(), indent=2))
    else:
        print("\n".join(report_lines(report)))
    return 0


@dataclass(frozen=True)
class ReproFlags:
    """repro's flags, declared once each (run.flags.run_option); --vary (one or two words a time) is the parser's."""

    problems: int = run_option(DEFAULT_PROBLEMS, group="", parse=int, metavar="N",
                               help="each task's first N problems with finished samples (default %(default)s)")
    samples: int = run_option(DEFAULT_SAMPLES, group="", parse=int, metavar="K",
                              help="their samples 0..K-1, with the same seeds (default %(default)s)")
    base_url: str | None = run_option(None, group="", metavar="URL",
                                      help="generate with this OpenAI-compatible server instead of the run's setup")
    model: str | None = run_option(None, group="", help="with --base-url: the model name that server serves "
                                   "(default: the run's)")
    name: str | None = run_option(None, group="", help="the subfolder under RUN_DIR/repro/ (default: what is varied)")
    data_dir: str | None = run_option(None, group="", metavar="DIR",
                                      help="where few-shot pools are read from (default $REASONEVAL_DATA_DIR)")
    timeout: float = run_option(3600.0, group="", parse=float, help="seconds per request (default %(default)s)")
    json: bool = run_option(False, group="", action="true", help="print the report as JSON")


REPRO_EXAMPLES = """examples:
  reasoneval repro results/m/RUN                          # the run's own setup
  reasoneval repro results/m/RUN --vary concurrency=1     # one request at a time
  reasoneval repro results/m/RUN --vary engine-arg threads=1
  reasoneval repro results/m/RUN --base-url http://other:8000/v1
The samples go to RUN/repro/<name>/ (never the run's headline); the verdict: bitwise reproducible / \
texts drift but scores agree within noise / scores differ beyond noise (docs/reproducibility.md)."""


def add_repro_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = REPRO_EXAMPLES
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--vary", action="append", nargs="+", metavar="SETTING",
                   help="one thing to change: concurrency=N, or engine-arg KEY=VALUE (repeatable)")
    add_options(p, ReproFlags)
    p.set_defaults(func=_cmd_repro)
