"""Prompts: chat messages (default) and raw completion prompts for base models.

Chat default (the field's standard wording, problem verbatim):
    {problem}
    Please reason step by step, and put your final answer within \\boxed{}.
Multiple choice: the problem, lettered choices "A) ...", and a request to end with `Answer: LETTER`.

A template (`--prompt-template FILE`) replaces the user message (chat) or the whole prompt
(completions). Placeholders: `{problem}` (required) and `{choices}` (the lettered choices; empty
for non-MC problems). Substitution is one pass of plain replacement, never str.format: problem
text is full of LaTeX braces, and a problem containing "{choices}" must stay verbatim. For an MC
problem and a template without `{choices}`, the lettered choices follow the problem in `{problem}`.

Completions default (base models): "Problem: {problem}\\n<instruction mentioning \\boxed{}>\\n\\nSolution:";
a system prompt, if given, is put first, followed by a blank line.

Few-shot styles (`gsm8k`: drawn from the train split as lm-eval does; `gsm8k_wei`, `gsm8k_cot`, `minerva`,
`qwen`; prompts/fewshot.py, exemplars in prompts/exemplars/*.json): k exemplars then the problem, as one
completion prompt or as a multi-turn chat. Which style a task is asked with: `--prompt-style` if given, else the task's few-shot style when
`--num-fewshot` is given, else the task's own style (`PromptConfig.for_task`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from reasoneval.errors import UserError
from reasoneval.prompts.fewshot import Exemplar, FewShotStyle, lmeval_draws, load_styles
from reasoneval.prompts.hle import hle_chat, hle_completion
from reasoneval.records import CHOICE_LETTERS, Problem
from reasoneval.registry import PROMPT_GROUP, Registry

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
_PLACEHOLDER = re.compile(r"\{(problem|choices)\}")


def choice_instruction(n: int) -> str:
    return (f"Think step by step, then give your final answer as the last line of your response, "
            f"in the form `Answer: LETTER` where LETTER is one of {', '.join(CHOICE_LETTERS[:n])}.")


@dataclass(frozen=True)
class PromptConfig:
    system_prompt: str | None = None
    template: str | None = None
    # The task's prompt style (a PROMPTS entry), used when no template is given.
    style: str = "boxed"
    # --num-fewshot: exemplars of a few-shot style (None: the style's default count).
    num_fewshot: int | None = None
    # --prompt-style: one style for every task of the run (None: each task's own, see for_task).
    style_override: str | None = None
    # Whether a few-shot style's stop sequences ("Question:", "Problem:") are sent (--no-style-stop: not).
    style_stop: bool = True
    # --fewshot-seed: the draw's generator seed for styles that draw their exemplars (None: the style's own).
    fewshot_seed: int | None = None

    def __post_init__(self) -> None:
        if self.template is not None and "{problem}" not in self.template:
            raise UserError("the prompt template has no {problem} placeholder; add {problem} where the "
                            "problem text goes (and {choices} for multiple choice)")
        if self.style_override is not None and self.style_override not in PROMPTS:
            raise UserError(f"unknown --prompt-style {self.style_override!r}; known: {', '.join(PROMPTS.names())}")
        if self.num_fewshot is not None and self.num_fewshot < 0:
            raise UserError(f"--num-fewshot must be 0 or more (got {self.num_fewshot})")
        if self.template is not None and (self.style_override is not None or self.num_fewshot is not None):
            raise UserError("--prompt-template replaces the prompt style: drop --prompt-style / --num-fewshot, "
                            "or drop --prompt-template")

    def for_task(self, task: str, prompt: str, fewshot: str | None) -> PromptConfig:
        """This config with the style a task is asked with (its `prompt`, or its `fewshot` style when
        --num-fewshot is given and no --prompt-style)."""
        if self.style_override is not None:
            style = self.style_override
        elif self.num_fewshot is not None:
            if fewshot is None:
                raise UserError(f"task {task} has no few-shot prompt style: pass --prompt-style NAME "
                                f"(few-shot styles: {', '.join(FEWSHOT_STYLES)})")
            style = fewshot
        else:
            style = prompt
        return dataclasses.replace(self, style=style)

    def fewshot_style(self) -> FewShotStyle | None:
        """The few-shot style the prompt is built with, None for a zero-shot style or a template."""
        return None if self.template is not None else PROMPTS.get(self.style).fewshot

    def answer_pattern(self) -> str | None:
        """How the style writes its final answer, for scorers that extract "the answer in the prompt's
        format" (lm-eval's strict-match): a few-shot style's regex, "boxed" for the boxed style, else None."""
        if self.template is not None:
            return None
        style = self.fewshot_style()
        if style is not None:
            return style.strict_pattern
        return "boxed" if self.style == "boxed" else None

    def stop(self) -> tuple[str, ...]:
        """Stop sequences the prompt style asks for (where the next exemplar would start)."""
        style = self.fewshot_style()
        return style.stop if style is not None and self.style_stop else ()

    def identity(self) -> dict[str, object] | None:
        """What of the style choice goes into the run id (None when nothing was asked: old run ids stay)."""
        if self.style_override is None and self.num_fewshot is None and self.style_stop and self.fewshot_seed is None:
            return None
        out: dict[str, object] = {"style": self.style_override, "num_fewshot": self.num_fewshot,
                                  "style_stop": self.style_stop, "exemplars": EXEMPLARS_HASH}
        if self.fewshot_seed is not None:  # (absent otherwise: run ids from before the option stay)
            out["fewshot_seed"] = self.fewshot_seed
        return out


def read_template(path: Path | str) -> str:
    """Text of a --prompt-template file (validated when put into a PromptConfig)."""
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read --prompt-template {p}: {getattr(e, 'strerror', None) or e}") from None


def _choices_block(problem: Problem) -> str:
    return format_choices(problem.choices) if problem.choices else ""


def format_choices(choices: Sequence[str]) -> str:
    """The lettered choices of a multiple-choice prompt, one a line: `A) ...`."""
    return "\n".join(f"{CHOICE_LETTERS[i]}) {c}" for i, c in enumerate(choices))


def fill_template(template: str, problem: Problem) -> str:
    choices = _choices_block(problem)
    text = problem.problem
    if choices and "{choices}" not in template:
        text = f"{text}\n\n{choices}"
    values = {"problem": text, "choices": choices}
    # One pass over the template only: substituted text is never scanned again.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


@dataclass(frozen=True)
class PromptStyle:
    """How a task asks its problems: the chat user message, and the raw prompt for base models."""

    chat: Callable[[Problem], str]
    completion: Callable[[Problem], str]
    # A few-shot style: exemplars then the problem (build_messages / build_prompt use it, with k shots).
    fewshot: FewShotStyle | None = None
    # Stop sequences the completion prompt needs (MBPP's `[DONE]`), added to the run's own in completions mode.
    completion_stop: tuple[str, ...] = ()


def _boxed_chat(problem: Problem) -> str:
    return f"{problem.problem}\n{BOXED_INSTRUCTION}"


def _boxed_completion(problem: Problem) -> str:
    return (f"Problem: {problem.problem}\n"
            "Solve the problem step by step, and put your final answer within \\boxed{}.\n\nSolution:")


def _choice_chat(problem: Problem) -> str:
    n = len(problem.choices or ())
    return f"{problem.problem}\n\n{_choices_block(problem)}\n\n{choice_instruction(n)}"


def _choice_completion(problem: Problem) -> str:
    n = len(problem.choices or ())
    return f"Problem: {problem.problem}\n\n{_choices_block(problem)}\n\n{choice_instruction(n)}\n\nSolution:"


def _check_style(name: str, style: object) -> None:
    if not isinstance(style, PromptStyle):
        raise UserError(f"prompt style {name!r} is {type(style).__name__}, not a reasoneval.prompts.PromptStyle")


# Other packages add prompt styles through the `reasoneval.prompts` entry point group
# (`name = "package.module:STYLE"`, a PromptStyle; reasoneval.registry).
PROMPTS: Registry[PromptStyle] = Registry("prompt style", group=PROMPT_GROUP, check=_check_style)
PROMPTS.add("boxed", PromptStyle(_boxed_chat, _boxed_completion))
PROMPTS.add("choice", PromptStyle(_choice_chat, _choice_completion))
FEWSHOT_STYLES = load_styles()
for _name, _style in FEWSHOT_STYLES.items():
    PROMPTS.add(_name, PromptStyle(_style.render_problem, _style.render_problem, fewshot=_style))
# Changes when any shipped exemplar file changes: part of a few-shot run's identity.
EXEMPLARS_HASH = hashlib.sha256(json.dumps({n: dataclasses.asdict(s) for n, s in FEWSHOT_STYLES.items()},
                                           sort_keys=True).encode()).hexdigest()[:12]


def _plain_chat(problem: Problem) -> str:
    return problem.problem


def _plain_completion(problem: Problem) -> str:
    return problem.problem


# Instruction following (IFEval): the prompt verbatim, in both modes.
PROMPTS.add("plain", PromptStyle(_plain_chat, _plain_completion))
PROMPTS.add_lazy("humaneval", "reasoneval.prompts.programs:HUMANEVAL")
PROMPTS.add_lazy("mbpp", "reasoneval.prompts.programs:MBPP")
PROMPTS.add_lazy("livecodebench", "reasoneval.prompts.contests:LIVECODEBENCH")
PROMPTS.add("hle", PromptStyle(hle_chat, hle_completion))  # Humanity's Last Exam's answer format
PROMPTS.add_lazy("codeforces", "reasoneval.prompts.codeforces:CODEFORCES")


def build_messages(problem: Problem, cfg: PromptConfig,
                   drawn: Sequence[Exemplar] | None = None) -> tuple[dict[str, str], ...]:
    """The chat messages; `drawn`: the problem's exemplars for a style that draws them (lm-eval's gsm8k)."""
    msgs: list[dict[str, str]] = []
    if cfg.system_prompt:
        msgs.append({"role": "system", "content": cfg.system_prompt})
    fewshot = cfg.fewshot_style()
    if fewshot is not None:
        return tuple(msgs + fewshot.chat(problem, cfg.num_fewshot, drawn))
    user = fill_template(cfg.template, problem) if cfg.template is not None else PROMPTS.get(cfg.style).chat(problem)
    msgs.append({"role": "user", "content": user})
    return tuple(msgs)


def build_prompt(problem: Problem, cfg: PromptConfig, drawn: Sequence[Exemplar] | None = None) -> str:
    """The completion prompt; `drawn` as in build_messages."""
    fewshot = cfg.fewshot_style()
    if cfg.template is not None:
        body = fill_template(cfg.template, problem)
    elif fewshot is not None:
        body = fewshot.completion(problem, cfg.num_fewshot, drawn)
    else:
        body = PROMPTS.get(cfg.style).completion(problem)
    if cfg.system_prompt:
        return f"{cfg.system_prompt}\n\n{body}"
    return body


def drawn_shots(cfg: PromptConfig, pool: Sequence[Exemplar],
                problems: Sequence[Problem]) -> list[tuple[Exemplar, ...]] | None:
    """For a style that draws its exemplars (lm-eval's gsm8k, hendrycks_math): the shots of each of the task's
    `problems`, in the task's order (lmeval_draws; for a pool split `by` a field, each value's problems draw
    from that value's rows with a generator of their own, as lm-eval's per-subject tasks do); None for a style
    with fixed exemplars."""
    style = cfg.fewshot_style()
    if style is None or style.pool is None:
        return None
    k = style.count(cfg.num_fewshot)
    seed = style.pool_seed if cfg.fewshot_seed is None else cfg.fewshot_seed
    if k and not pool:
        raise UserError(f"prompt style {style.name!r} draws its exemplars from task {style.pool!r}, which is not "
                        "loaded; run through the pipeline (it loads that split from the data dir, cache or Hub)")
    if style.pool_by is None:
        return [tuple(pool[j] for j in draw) for draw in lmeval_draws(len(pool), k, len(problems), seed)]
    rows: dict[str | None, list[Exemplar]] = {}
    for e in pool:
        rows.setdefault(e.group, []).append(e)
    positions: dict[str | None, list[int]] = {}
    for i, p in enumerate(problems):
        value = p.metadata.get(style.pool_by)
        positions.setdefault(None if value is None else str(value), []).append(i)
    out: list[tuple[Exemplar, ...]] = [()] * len(problems)
    for value, where in positions.items():
        own = rows.get(value, [])
        if k and not own:
            raise UserError(f"prompt style {style.name!r} draws each problem's exemplars from the rows of task "
                            f"{style.pool!r} with the same {style.pool_by}, and it has none with {style.pool_by} "
                            f"{value!r}; use that task's full split (known: {', '.join(sorted(map(str, rows)))})")
        for i, draw in zip(where, lmeval_draws(len(own), k, len(where), seed)):
            out[i] = tuple(own[j] for j in draw)
    return out
