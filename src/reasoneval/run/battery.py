"""`reasoneval run --battery NAME`: each run of a battery (analysis/battery.py: the table, the rows' figures) with
lm-eval's settings for its rows, the user's options kept and their deviations from the battery's mandatory
settings recorded, then the table written beside the runs (report/battery.py: battery.json, .csv, .md). Runs are
ordinary runs: re-running the command resumes each one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from reasoneval.analysis.battery import Battery, BatteryRun, RowFigure, battery_metrics, get_battery, row_figures
from reasoneval.errors import UserError
from reasoneval.report.battery import write_battery

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
    from reasoneval.run.flags import field_default
    from reasoneval.run.options import EvalConfig

    return field_default(next(f for f in dataclasses.fields(EvalConfig) if f.name == name))


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
    paths = write_battery(model_dir, battery, figures, results, cfg.model, deviations(cfg, battery))
    if cfg.log_to:
        from reasoneval.analysis.battery import metric_name
        from reasoneval.report.dashboards import checkpoint_step, log_once, rows_settings

        step = checkpoint_step(str(cfg.engine_args.get("model_path") or cfg.model or ""))
        # Each row's settings its own (`<battery>/<row>/<setting>`), not the first run's for every row.
        rows = {f"{battery.name}/{metric_name(f.row)}": results[f.row.run] for f in figures if f.row.run in results}
        log_once(cfg, next(iter(results.values())), step, battery_metrics(battery, figures), rows_settings(rows))
    return BatteryResult(battery, figures, results, paths, incomplete)


__all__ = ["BatteryResult", "battery_configs", "deviations", "merged_runs", "run_battery"]
