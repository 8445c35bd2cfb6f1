"""`reasoneval run` flags for base models: few-shot prompt styles and greedy decoding."""

from __future__ import annotations

from typing import Any


def add_prompt_args(g: Any) -> None:
    from reasoneval.prompts import FEWSHOT_STYLES, PROMPTS

    styles = ", ".join(f"{n} ({FEWSHOT_STYLES[n].default_shots}-shot)" if n in FEWSHOT_STYLES else n
                       for n in PROMPTS.names())
    g.add_argument("--prompt-style", metavar="NAME",
                   help=f"prompt style for every task (default: each task's own); styles: {styles}")
    g.add_argument("--num-fewshot", type=int, metavar="N",
                   help="exemplars before the problem (default: the style's); with no --prompt-style, each "
                   "task's few-shot style (gsm8k: gsm8k, lm-eval's draw from the train split; math tasks: minerva)")
    g.add_argument("--no-style-stop", action="store_true",
                   help="do not send the few-shot style's stop sequences (e.g. 'Question:'); --stop adds more")
    g.add_argument("--greedy", action="store_true",
                   help="greedy decoding, one sample per problem: --temperature 0 --top-p 1 --n 1")
    g.add_argument("--lmeval-metrics", action="store_true",
                   help="report lm-eval's columns (strict-match, flexible-extract, exact_match, math_verify) for "
                   "every task that has them; by default only where lm-eval defines the task with the prompt "
                   "style used (gsm8k with its few-shot styles, MATH with minerva)")
