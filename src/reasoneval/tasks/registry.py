"""The task registry: every task by name, each imported only when used.

A shipped task is a TaskSpec constant (most in tasks/catalog.py) and one `TASKS.add_lazy(name, "module:CONSTANT")`
line here. Other packages add tasks through the `reasoneval.tasks` entry point group
(`name = "package.module:SPEC"`, a TaskSpec whose name is the entry's; reasoneval.registry).
"""

from __future__ import annotations

from typing import Any

from reasoneval.errors import UserError
from reasoneval.registry import TASK_GROUP, Registry
from reasoneval.tasks.spec import TaskSpec


def _check_task(name: str, spec: Any) -> None:
    if not isinstance(spec, TaskSpec):
        raise UserError(f"task {name!r} is {type(spec).__name__}, not a reasoneval.tasks.TaskSpec")
    if spec.name != name:
        raise UserError(f"task {name!r} is registered with a TaskSpec named {spec.name!r}: the names must be equal")


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
