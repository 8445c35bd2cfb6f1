"""Batteries: a fixed table of (task, setting, metric) rows, run as a few runs and printed in one layout.

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
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.atomic import atomic_write_text
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


# Options a battery run sets itself: the user's value for these would change which rows the table holds.
_BATTERY_OWNS = ("tasks", "num_fewshot", "prompt_style", "data", "prompt_template", "target_se")


def battery_configs(cfg: Any, battery: Battery) -> list[tuple[BatteryRun, Any]]:
    """(run, its EvalConfig) for each run of the battery: the user's options, the battery's mandatory settings
    where the user left the option at its default, then the run's own options (tasks, shots, style, lm-eval's
    max_gen_toks and stops; a --max-tokens the user gave applies to every run instead)."""
    given = [k for k in _BATTERY_OWNS if getattr(cfg, k) != _default(k)]
    if given:
        raise UserError(f"--battery {battery.name} sets {', '.join('--' + k.replace('_', '-') for k in given)} "
                        "itself (each row is lm-eval's setting); drop them, or run the task on its own")
    defaults = {k: v for k, v in battery.mandatory.items() if getattr(cfg, k) == _default(k)}
    out = []
    for run in battery.runs:
        own = {k: v for k, v in run.options.items() if k != "max_tokens" or "max_tokens" in defaults}
        one = dataclasses.replace(cfg, battery=None, **{**defaults, **own})
        one.validate()
        out.append((run, one))
    return out


def deviations(cfg: Any, battery: Battery) -> dict[str, Any]:
    """The mandatory settings the user set otherwise (recorded beside the table), and a tensor-parallel hint."""
    out = {k: getattr(cfg, k) for k in battery.mandatory if getattr(cfg, k) != _default(k)
           and getattr(cfg, k) != battery.mandatory[k]}
    tp = (cfg.engine_args or {}).get("tensor_parallel_size")
    if tp not in (None, 1):
        out["tensor_parallel_size"] = tp
    return out


def _default(name: str) -> Any:
    from reasoneval.run.options import EvalConfig, field_default

    return field_default(next(f for f in dataclasses.fields(EvalConfig) if f.name == name))


@dataclass(frozen=True)
class RowFigure:
    row: BatteryRow
    value: float | None
    stderr: float | None
    num_problems: int | None


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
        out.append(RowFigure(row, None if g is None else g.mean, None if g is None else g.stderr,
                             None if g is None else g.num_problems))
    return out


def table_cells(figures: Sequence[RowFigure]) -> tuple[list[str], list[list[str]]]:
    """The baseline layout: task, setting, metric, value ± SE (fractions, 4 decimals, as lm-eval prints them), n."""
    head = ["task", "setting", "metric", "value", "± stderr", "n"]
    cells = []
    for f in figures:
        r = f.row
        cells.append([r.task if r.subject is None else f" - {r.task}", r.setting, r.metric,
                      "" if f.value is None else f"{f.value:.4f}", "" if f.stderr is None else f"{f.stderr:.4f}",
                      "" if f.num_problems is None else str(f.num_problems)])
    return head, cells


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


def battery_record(battery: Battery, figures: Sequence[RowFigure], results: Mapping[str, Any],
                   cfg: Any) -> dict[str, Any]:
    """battery.json: the rows with their figures, each run's directory and settings, and the deviations."""
    runs = {}
    for run in battery.runs:
        r = results.get(run.name)
        if r is None:
            continue
        s = r.config.settings
        runs[run.name] = {"run_dir": str(r.run_dir), "run_id": r.run_id, "complete": r.complete,
                          "tasks": list(r.tasks), "seed": s.seed, "api": s.api,
                          "sampling": None if s.sampling is None else dataclasses.asdict(s.sampling),
                          "prompt_style": s.prompt_style, "n": r.n}
    return {"battery": battery.name, "description": battery.description, "model": cfg.model,
            "mandatory": dict(battery.mandatory), "deviations": deviations(cfg, battery),
            "rows": [{"task": f.row.task, "setting": f.row.setting, "metric": f.row.metric, "value": f.value,
                      "stderr": f.stderr, "num_problems": f.num_problems, "run": f.row.run} for f in figures],
            "runs": runs}


def write_battery(out_dir: Path, battery: Battery, figures: Sequence[RowFigure], results: Mapping[str, Any],
                  cfg: Any) -> list[Path]:
    """`<battery>.json`, `.csv` (full precision) and `.md` (the printed layout) in out_dir (the model's folder of
    the results)."""
    from reasoneval.report.text import csv_text, markdown_table

    out_dir.mkdir(parents=True, exist_ok=True)
    head, cells = table_cells(figures)
    base = out_dir / battery.name
    paths = [base.with_suffix(".json"), base.with_suffix(".csv"), base.with_suffix(".md")]
    atomic_write_text(paths[0], json.dumps(battery_record(battery, figures, results, cfg), indent=2) + "\n")
    atomic_write_text(paths[1], csv_text([{"task": f.row.task, "setting": f.row.setting, "metric": f.row.metric,
                                           "value": "" if f.value is None else f.value,
                                           "stderr": "" if f.stderr is None else f.stderr,
                                           "n": "" if f.num_problems is None else f.num_problems} for f in figures]))
    atomic_write_text(paths[2], markdown_table(head, cells, left=3))
    return paths


def merged_runs(configs: Sequence[tuple[BatteryRun, Any]]) -> list[tuple[list[str], Any]]:
    """Runs whose settings are the same but for their tasks (ifeval and mbpp once --max-tokens is given) as one
    run of all their tasks: they share a run directory, whose summary.json then covers both."""
    groups: dict[str, tuple[list[str], Any]] = {}
    for run, one in configs:
        key = json.dumps({k: v for k, v in dataclasses.asdict(one).items() if k != "tasks"}, sort_keys=True, default=str)
        names, first = groups.setdefault(key, ([], one))
        names.append(run.name)
        if first is not one:
            groups[key] = (names, dataclasses.replace(first, tasks=[*first.tasks, *one.tasks]))
    return list(groups.values())


@dataclass
class BatteryResult:
    battery: Battery
    figures: list[RowFigure]
    results: dict[str, Any]  # run name -> RunResult
    paths: list[Path]  # battery.json, .csv, .md
    incomplete: list[Any]  # the RunIncomplete of each run that ended with samples missing


def run_battery(cfg: Any) -> BatteryResult:
    """`reasoneval run --battery NAME`: every run of the battery in turn (each resumes like any run), then the
    table written beside the runs (and logged to cfg.log_to at the checkpoint's step). A run that ends
    incomplete does not stop the others; the caller reports `incomplete`."""
    from reasoneval.errors import RunIncomplete
    from reasoneval.run.pipeline import evaluate

    battery = get_battery(cfg.battery)
    results: dict[str, Any] = {}
    incomplete: list[RunIncomplete] = []
    model_dir: Path | None = None
    for names, one in merged_runs(battery_configs(cfg, battery)):
        try:
            result = evaluate(dataclasses.replace(one, print_table=False, log_to=(), log_args={}))
        except RunIncomplete as e:
            result = e.summary
            incomplete.append(e)
        results.update({name: result for name in names})
        model_dir = Path(result.run_dir).parent
    figures = row_figures(battery, results)
    assert model_dir is not None
    paths = write_battery(model_dir, battery, figures, results, cfg)
    if cfg.log_to:
        from reasoneval.report.dashboards import checkpoint_step, log_once

        step = checkpoint_step(str(cfg.engine_args.get("model_path") or cfg.model or ""))
        log_once(cfg, next(iter(results.values())), step, battery_metrics(battery, figures))
    return BatteryResult(battery, figures, results, paths, incomplete)


__all__ = ["BATTERIES", "Battery", "BatteryResult", "BatteryRow", "BatteryRun", "RowFigure", "battery_configs",
           "battery_metrics", "get_battery", "metric_name", "row_figures", "run_battery", "table_cells", "write_battery"]
