"""`reasoneval run`: its flags are generated from EvalConfig's fields (reasoneval.run.options)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reasoneval.errors import RunIncomplete

RUN_EXAMPLES = """examples:
  # the embedded CPU model on the generated arithmetic task (no GPU, no download)
  reasoneval run --tasks arith --limit 40 --n 8 --max-tokens 256

  # a vLLM / SGLang server you started, 16 samples per problem on the math group
  reasoneval run --model Qwen/QwQ-32B --base-url http://localhost:8000/v1 --tasks math --n 16

  # lm-eval's base-model table (gsm8k, gsm8k_cot, hendrycks_math, minerva_math, ifeval, mbpp, humaneval), greedy
  reasoneval run --battery lmeval-base --model my-base --base-url http://localhost:8000/v1

  # your own data, scored by the multiple-choice scorer
  reasoneval run --model m --data my.jsonl --problem-field question --answer-field answer --scorer choice

Re-running the same command generates only what is missing; raising --n adds samples.
Exit status: 0 done, 2 bad input, 3 some samples missing or failed (summary has "complete": false),
4 the engine or server cannot serve (it died, or stopped answering); finished samples are kept.
"""


def add_run_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.run.options import add_run_options

    p.epilog = RUN_EXAMPLES
    add_run_options(p)
    p.set_defaults(func=_cmd_run)


def _cmd_run(a: argparse.Namespace) -> int:
    from reasoneval.run.options import config_from_args
    from reasoneval.run.pipeline import evaluate

    cfg = config_from_args(a)
    if cfg.battery:
        return _run_battery(cfg)
    try:
        summary = evaluate(cfg)
    except RunIncomplete as e:
        if not cfg.print_table:
            print(json.dumps(e.summary.to_json_dict(), indent=2))
        raise
    if not cfg.print_table:
        print(json.dumps(summary.to_json_dict(), indent=2))
    print(f"results: {summary.run_dir}", file=sys.stderr)
    return 0


def _run_battery(cfg: Any) -> int:
    from reasoneval.report.battery import table_cells
    from reasoneval.report.text import console_for_tables, print_table
    from reasoneval.run.battery import run_battery

    done = run_battery(cfg)
    head, cells = table_cells(done.figures)
    if cfg.print_table:
        print_table(head, cells, f"{cfg.model or 'model'}: {done.battery.name} ({done.battery.description})",
                    console_for_tables(), left=3)
    else:
        print(done.paths[0].read_text(), end="")
    print(f"battery table: {', '.join(str(p) for p in done.paths)}", file=sys.stderr)
    if done.incomplete:
        raise done.incomplete[0]
    return 0
