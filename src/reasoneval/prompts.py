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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import UserError
from .registry import Registry
from .tasks.choice import LETTERS, format_choices
from .types import Problem

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
_PLACEHOLDER = re.compile(r"\{(problem|choices)\}")


def choice_instruction(n: int) -> str:
    return (f"Think step by step, then give your final answer as the last line of your response, "
            f"in the form `Answer: LETTER` where LETTER is one of {', '.join(LETTERS[:n])}.")


@dataclass(frozen=True)
class PromptConfig:
    system_prompt: str | None = None
    template: str | None = None
    # The task's prompt style (a PROMPTS entry), used when no template is given.
    style: str = "boxed"

    def __post_init__(self) -> None:
        if self.template is not None and "{problem}" not in self.template:
            raise UserError("the prompt template has no {problem} placeholder; add {problem} where the "
                            "problem text goes (and {choices} for multiple choice)")


def read_template(path: Path | str) -> str:
    """Text of a --prompt-template file (validated when put into a PromptConfig)."""
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read --prompt-template {p}: {getattr(e, 'strerror', None) or e}") from None


def _choices_block(problem: Problem) -> str:
    return format_choices(problem.choices) if problem.choices else ""


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


PROMPTS: Registry[PromptStyle] = Registry("prompt style")
PROMPTS.add("boxed", PromptStyle(_boxed_chat, _boxed_completion))
PROMPTS.add("choice", PromptStyle(_choice_chat, _choice_completion))


def _plain_chat(problem: Problem) -> str:
    return problem.problem


def _plain_completion(problem: Problem) -> str:
    return problem.problem


# Instruction following (IFEval): the prompt verbatim, in both modes.
PROMPTS.add("plain", PromptStyle(_plain_chat, _plain_completion))

from . import code_prompts as _code_prompts  # noqa: E402  (registers humaneval, mbpp; needs PromptStyle)

_ = _code_prompts


def build_messages(problem: Problem, cfg: PromptConfig) -> tuple[dict[str, str], ...]:
    user = fill_template(cfg.template, problem) if cfg.template is not None else PROMPTS.get(cfg.style).chat(problem)
    msgs: list[dict[str, str]] = []
    if cfg.system_prompt:
        msgs.append({"role": "system", "content": cfg.system_prompt})
    msgs.append({"role": "user", "content": user})
    return tuple(msgs)


def build_prompt(problem: Problem, cfg: PromptConfig) -> str:
    if cfg.template is not None:
        body = fill_template(cfg.template, problem)
    else:
        body = PROMPTS.get(cfg.style).completion(problem)
    if cfg.system_prompt:
        return f"{cfg.system_prompt}\n\n{body}"
    return body
