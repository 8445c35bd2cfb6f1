"""Batteries: a fixed table of (task, setting, metric) rows, run as a few runs and printed in one layout. This
module holds the table itself and reads each row's figure from the runs' results; run/battery.py runs it,
report/battery.py writes its files.

`lmeval-base` is the baseline table training teams keep with lm-eval + vLLM for a base model and each checkpoint:

    | task           | setting        | metrics                                                        |
    | gsm8k          | 4-shot, 8-shot | exact_match,flexible-extract  exact_match,strict-match         |
    | gsm8k_cot      | 4-shot, 8-shot | exact_match,flexible-extract  exact_match,strict-match         |
    | hendrycks_math | 4-shot         | exact_match                                                    |
    | minerva_math   | 4-shot         | exact_match, math_verify, and both per subject (7 subtasks)    |
    | ifeval         | 0-shot         | prompt_level_strict_acc, inst_level_strict_acc                 |
    | mbpp           | 3-shot         | pass_at_1                                                      |
    | humaneval      | 0-shot         | pass@1,create_test                                             |

Each row is produced by one reasoneval run whose settings are lm-eval 0.4.13's for that task (its prompt and
exemplar draw, its stop sequences, its `max_gen_toks`: 256 unless the task's YAML says 1,280 for ifeval or 1,024
for humaneval); rows whose settings are the same share a run (gsm8k 4-shot and minerva_math 4-shot). The
settings the team treats as mandatory are the battery's defaults: greedy (temperature 0, one sample), seed 42 (as
`lm_eval --seed 42`, which seeds the few-shot draw too: `fewshot_seed` 42), the completions API, and no
tensor-parallel hint for vLLM; an option the user sets otherwise is kept and
recorded as a deviation (`battery.json`). Runs are ordinary runs: re-running the command resumes each one.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.scoring.lmeval import MATH_SUBJECT_SUFFIXES, lmeval_subtask

# lm-eval's `until` for humaneval (lm_eval/tasks/humaneval/humaneval.yaml); reasoneval's own humaneval style
# stops at the same blocks written more narrowly ("\ndef ", "\nif __name__", ...).
HUMANEVAL_UNTIL = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
LMEVAL_MAX_GEN_TOKS = 256  # lm-eval's default max_gen_toks (lm_eval/models/api_models.py)


@dataclass(frozen=True)
class BatteryRun:
    """One reasoneval run of a battery: its name and the run options that make it lm-eval's setting."""

    name: str
    options: Mapping[str, Any]


@dataclass(frozen=True)
class BatteryRow:
    """One row of the table: lm-eval's task and metric names, where reasoneval's figure comes from."""

    task: str  # lm-eval's task or group name (gsm8k_cot, minerva_math, ...)
    setting: str  # "4-shot"
    metric: str  # lm-eval's metric name (with its filter): exact_match,strict-match
    run: str  # the BatteryRun that produces it
    source: str  # reasoneval's task in that run
    figure: str  # reasoneval's figure: "mean" (the task's own score) or an extra metric's name
    subject: str | None = None  # a MATH subject: the row is the subject's breakdown (lm-eval's subtask)


@dataclass(frozen=True)
class Battery:
    name: str
    description: str
    runs: tuple[BatteryRun, ...]
    rows: tuple[BatteryRow, ...]
    # The settings the battery needs; an EvalConfig field at its own default takes these.
    mandatory: Mapping[str, Any] = field(default_factory=dict)


# The MATH subjects in the order of lm-eval's subtasks (EleutherAI/hendrycks_math's configs).
MATH_SUBJECTS = tuple(MATH_SUBJECT_SUFFIXES)


def _lmeval_base() -> Battery:
    runs = (
        BatteryRun("4-shot", {"tasks": ["gsm8k", "hendrycks_math"], "num_fewshot": 4}),
        BatteryRun("gsm8k 8-shot", {"tasks": ["gsm8k"], "num_fewshot": 8}),
        BatteryRun("gsm8k_cot 4-shot", {"tasks": ["gsm8k"], "prompt_style": "gsm8k_cot", "num_fewshot": 4}),
        BatteryRun("gsm8k_cot 8-shot", {"tasks": ["gsm8k"], "prompt_style": "gsm8k_cot", "num_fewshot": 8}),
        BatteryRun("hendrycks_math 4-shot", {"tasks": ["hendrycks_math"], "prompt_style": "hendrycks_math",
                                             "num_fewshot": 4}),
        BatteryRun("ifeval 0-shot", {"tasks": ["ifeval"], "max_tokens": 1280}),
        BatteryRun("mbpp 3-shot", {"tasks": ["mbpp"]}),
        BatteryRun("humaneval 0-shot", {"tasks": ["humaneval"], "max_tokens": 1024, "stop": list(HUMANEVAL_UNTIL),
                                        "style_stop": False}),
    )
    rows: list[BatteryRow] = []
    for task, style_run in (("gsm8k", ("4-shot", "gsm8k 8-shot")), ("gsm8k_cot", ("gsm8k_cot 4-shot", "gsm8k_cot 8-shot"))):
        for shots, run in zip(("4-shot", "8-shot"), style_run):
            rows += [BatteryRow(task, shots, "exact_match,flexible-extract", run, "gsm8k", "flexible-extract"),
                     BatteryRow(task, shots, "exact_match,strict-match", run, "gsm8k", "strict-match")]
    rows.append(BatteryRow("hendrycks_math", "4-shot", "exact_match", "hendrycks_math 4-shot", "hendrycks_math",
                           "exact_match"))
    for metric in ("exact_match", "math_verify"):
        rows.append(BatteryRow("minerva_math", "4-shot", metric, "4-shot", "hendrycks_math", metric))
    for subject in MATH_SUBJECTS:
        for metric in ("exact_match", "math_verify"):
            rows.append(BatteryRow(lmeval_subtask("minerva_math", subject), "4-shot", metric, "4-shot", "hendrycks_math",
                                   metric, subject))
    rows += [BatteryRow("ifeval", "0-shot", "prompt_level_strict_acc", "ifeval 0-shot", "ifeval", "prompt_strict"),
             BatteryRow("ifeval", "0-shot", "inst_level_strict_acc", "ifeval 0-shot", "ifeval", "inst_strict"),
             BatteryRow("mbpp", "3-shot", "pass_at_1", "mbpp 3-shot", "mbpp", "mean"),
             BatteryRow("humaneval", "0-shot", "pass@1,create_test", "humaneval 0-shot", "humaneval", "mean")]
    return Battery("lmeval-base", "lm-eval 0.4.13's base-model table (gsm8k, gsm8k_cot, hendrycks_math, minerva_math, "
                   "ifeval, mbpp, humaneval), greedy, seed 42", runs, tuple(rows),
                   mandatory={"greedy": True, "seed": 42, "fewshot_seed": 42, "api": "completions",
                              "max_tokens": LMEVAL_MAX_GEN_TOKS})


BATTERIES: dict[str, Any] = {"lmeval-base": _lmeval_base}


def get_battery(name: str) -> Battery:
    if name not in BATTERIES:
        raise UserError(f"unknown --battery {name!r}; known: {', '.join(BATTERIES)}")
    battery: Battery = BATTERIES[name]()
    return battery


@dataclass(frozen=True)
class RowFigure:
    row: BatteryRow
    value: float | None
    stderr: float | None  # as lm-eval prints it: a group's pooled within-subject stderr (`pooled_stderr`)
    num_problems: int | None
    # A group row (minerva_math, hendrycks_math: the task's problems have subjects, lm-eval's subtasks): reasoneval's
    # own SE of the mean over all its problems, beside lm-eval's pooled one. None for other rows.
    stderr_all: float | None = None


def pooled_stderr(groups: Sequence[Any]) -> float | None:
    """lm-eval 0.4.13's stderr of a group weighted by size (lm_eval.api.metrics.pooled_sample_stderr) from its
    subtasks' (num_problems, stderr): √(Σ (n_i - 1)·n_i·se_i² / (N - k) / N). None when a subtask has no stderr."""
    items = [(int(g.num_problems), g.stderr) for g in groups]
    total, k = sum(n for n, _ in items), len(items)
    if not items or any(se is None for _, se in items) or total - k <= 0:
        return None
    var = sum((n - 1) * n * float(se) ** 2 for n, se in items if se is not None) / (total - k)
    return math.sqrt(var / total)


def row_figures(battery: Battery, results: Mapping[str, Any]) -> list[RowFigure]:
    """Each row's figure from the runs' results (run name -> RunResult); None where the run has no result."""
    out = []
    for row in battery.rows:
        result = results.get(row.run)
        m = result.tasks.get(row.source) if result is not None else None
        g: Any = None
        if m is not None:
            if row.subject is not None:
                key = "subject" if row.figure == "mean" else f"subject [{row.figure}]"
                g = (m.breakdown.get(key) or {}).get(row.subject)
            else:
                g = m if row.figure == "mean" else m.extra.get(row.figure)
        figure = RowFigure(row, None if g is None else g.mean, None if g is None else g.stderr,
                           None if g is None else g.num_problems)
        subjects = (m.breakdown.get("subject" if row.figure == "mean" else f"subject [{row.figure}]") or {}) \
            if m is not None and row.subject is None else {}
        if g is not None and len(subjects) > 1:  # a group: lm-eval prints its pooled stderr, ours goes beside it
            figure = dataclasses.replace(figure, stderr=pooled_stderr(list(subjects.values())), stderr_all=g.stderr)
        out.append(figure)
    return out


def metric_name(row: BatteryRow) -> str:
    """The row's figure as one name (dashboards, CSV columns): `gsm8k/4-shot/exact_match,strict-match`."""
    return f"{row.task}/{row.setting}/{row.metric}"


def battery_metrics(battery: Battery, figures: Sequence[RowFigure]) -> dict[str, float]:
    """The rows as dashboard figures, `<battery>/<task>/<setting>/<metric>` (and `..._stderr`), fractions."""
    out: dict[str, float] = {}
    for f in figures:
        name = f"{battery.name}/{metric_name(f.row)}"
        if f.value is not None:
            out[name] = float(f.value)
        if f.stderr is not None:
            out[name + "_stderr"] = float(f.stderr)
    return out


__all__ = ["BATTERIES", "HUMANEVAL_UNTIL", "LMEVAL_MAX_GEN_TOKS", "MATH_SUBJECTS", "Battery", "BatteryRow", "BatteryRun",
           "RowFigure", "battery_metrics", "get_battery", "metric_name", "row_figures"]
