"""The task registry: every task by name, each imported only when used.

A shipped task is a TaskSpec constant (most in tasks/catalog.py) and one `TASKS.add_lazy(name, "module:CONSTANT")`
line here. Other packages add tasks through the `reasoneval.tasks` entry point group
(`name = "package.module:SPEC"`, a TaskSpec whose name is the entry's; reasoneval.registry).
"""

from __future__ import annotations

from typing import Any

from reasoneval.errors import UserError
from reasoneval.registry import TASK_GROUP, Registry
from reasoneval.tasks.spec import DEFAULT_PROMPTS, TaskSpec


def declaration_errors(spec: TaskSpec) -> list[str]:
    """What a task's declaration lacks or contradicts, one line each naming the piece and the fix (empty: complete).
    The rows themselves are checked when the task is loaded (their count against `size`: tasks.loading); its scorer
    and prompt style when a run resolves them (run.generation.used_plugins: a plugin's may not be found yet)."""
    where = f"task {spec.name!r}"
    out = []
    if not spec.description.strip():
        out.append(f"{where} has no description: give TaskSpec a one-line description (shown by `reasoneval tasks`)")
    if not spec.prompt:
        out.append(f"{where} names no prompt style, and its scorer {spec.scoring.scorer!r} has none by default (only "
                   f"{', '.join(sorted(DEFAULT_PROMPTS))} does): add prompt=... (a prompts.PROMPTS name) to its TaskSpec")
    sources = [n for n in ("hub", "generate", "data_file") if getattr(spec, n) is not None]
    if len(sources) > 1:
        out.append(f"{where} has {' and '.join(sources)}: a task has one source; keep one")
    if spec.size is not None and (isinstance(spec.size, bool) or not isinstance(spec.size, int) or spec.size < 1):
        out.append(f"{where} has size {spec.size!r}: give the number of problems (a positive integer) or None")
    if spec.scoring_options and spec.options is None:
        out.append(f"{where} passes options {', '.join(spec.scoring_options)} to its scorer but takes no options: "
                   "give it options=... (what --task-arg does) or drop scoring_options")
    if spec.data_file is not None and not spec.data_file.path.strip():
        out.append(f"{where} has a data_file with no path: PackageFile(__name__, \"<file>\")")
    return out


def _check_task(name: str, spec: Any) -> None:
    if not isinstance(spec, TaskSpec):
        raise UserError(f"task {name!r} is {type(spec).__name__}, not a reasoneval.tasks.TaskSpec")
    if spec.name != name:
        raise UserError(f"task {name!r} is registered with a TaskSpec named {spec.name!r}: the names must be equal")
    errors = declaration_errors(spec)
    if errors:
        raise UserError("; ".join(errors))


TASKS: Registry[TaskSpec] = Registry("task", group=TASK_GROUP, check=_check_task)
TASKS.add_lazy("aime24", "reasoneval.tasks.catalog:AIME24")
TASKS.add_lazy("aime25", "reasoneval.tasks.catalog:AIME25")
TASKS.add_lazy("amc23", "reasoneval.tasks.catalog:AMC23")
TASKS.add_lazy("amc", "reasoneval.tasks.catalog:AMC")
TASKS.add_lazy("math500", "reasoneval.tasks.catalog:MATH500")
TASKS.add_lazy("hendrycks_math", "reasoneval.tasks.catalog:HENDRYCKS_MATH")
TASKS.add_lazy("minerva_math", "reasoneval.tasks.catalog:MINERVA_MATH")
TASKS.add_lazy("olympiadbench", "reasoneval.tasks.catalog:OLYMPIADBENCH")
TASKS.add_lazy("gsm8k", "reasoneval.tasks.catalog:GSM8K")
TASKS.add_lazy("gsm8k_train", "reasoneval.tasks.catalog:GSM8K_TRAIN")
TASKS.add_lazy("hendrycks_math_train", "reasoneval.tasks.catalog:HENDRYCKS_MATH_TRAIN")
TASKS.add_lazy("gpqa_diamond", "reasoneval.tasks.catalog:GPQA_DIAMOND")
TASKS.add_lazy("limo", "reasoneval.tasks.catalog:LIMO")
TASKS.add_lazy("arith", "reasoneval.tasks.catalog:ARITH")
TASKS.add_lazy("humaneval", "reasoneval.tasks.catalog:HUMANEVAL")
TASKS.add_lazy("mbpp", "reasoneval.tasks.catalog:MBPP")
TASKS.add_lazy("mbpp_sanitized", "reasoneval.tasks.catalog:MBPP_SANITIZED")
TASKS.add_lazy("ifeval", "reasoneval.tasks.catalog:IFEVAL")
TASKS.add_lazy("livecodebench", "reasoneval.tasks.catalog:LIVECODEBENCH")
TASKS.add_lazy("code_contests", "reasoneval.tasks.catalog:CODE_CONTESTS")
TASKS.add_lazy("codeforces", "reasoneval.tasks.catalog:CODEFORCES")
TASKS.add_lazy("apps", "reasoneval.tasks.catalog:APPS")
TASKS.add_lazy("taco", "reasoneval.tasks.catalog:TACO")
TASKS.add_lazy("aime26", "reasoneval.tasks.matharena:AIME26")
TASKS.add_lazy("hmmt_feb25", "reasoneval.tasks.matharena:HMMT_FEB25")
TASKS.add_lazy("hmmt_feb26", "reasoneval.tasks.matharena:HMMT_FEB26")
TASKS.add_lazy("hmmt_nov25", "reasoneval.tasks.matharena:HMMT_NOV25")
TASKS.add_lazy("brumo25", "reasoneval.tasks.matharena:BRUMO25")
TASKS.add_lazy("cmimc25", "reasoneval.tasks.matharena:CMIMC25")
TASKS.add_lazy("smt25", "reasoneval.tasks.matharena:SMT25")
TASKS.add_lazy("hle", "reasoneval.tasks.hle:HLE")
