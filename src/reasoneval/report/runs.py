"""`reasoneval runs [DIR]`: one table of every run under a results folder."""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.errors import UserError
from reasoneval.report.dashboards import Checkpoint, model_checkpoint
from reasoneval.report.figures import sample_range, top_k
from reasoneval.report.text import pct_se
from reasoneval.results.schema import CONFIG_FILE, SUMMARY_FILE, RunResult, load_run
from reasoneval.results.scope import VIEWS_DIR

log = logging.getLogger("reasoneval")


@dataclass(frozen=True)
class RunRow:
    result: RunResult

    @property
    def identity(self) -> str:
        ident: object = self.result.config.settings.model_identity
        if isinstance(ident, dict):  # (as some runs wrote it)
            return ",".join(f"{k}={v}" for k, v in sorted(ident.items()) if v)
        return str(ident or "")

    @property
    def date(self) -> str:
        return str(self.result.config.updated or self.result.config.created or "")


def find_runs(root: Path) -> list[Path]:
    """Run directories (config.json and summary.json) under root, root itself included."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root} is not a directory; pass the results folder (default: results)")
    found = []
    for d, dirs, files in os.walk(root):
        if CONFIG_FILE in files and SUMMARY_FILE in files:
            found.append(Path(d))
            dirs[:] = []  # a run directory holds no runs
        dirs.sort()
    return sorted(found)


def list_runs(root: Path, model: str | None = None, task: str | None = None) -> list[RunRow]:
    rows = []
    for d in find_runs(root):
        try:
            r = load_run(d)
        except UserError as e:
            log.warning("skipping %s: %s", d, e)
            continue
        if model and not (fnmatch.fnmatch(r.model, model) or fnmatch.fnmatch(d.parent.name, model)):
            continue
        if task:
            tasks = {t: m for t, m in r.tasks.items() if fnmatch.fnmatch(t, task)}
            if not tasks:
                continue
            r = dataclasses.replace(r, tasks=tasks)
        rows.append(RunRow(r))
    return sorted(rows, key=lambda x: (x.result.model, x.date, x.result.run_id))


def views_of(run_dir: Path) -> list[str]:
    """The names of a run's views (narrower commands' results, results/scope.py), oldest first."""
    d = Path(run_dir) / VIEWS_DIR
    found = [v for v in d.iterdir() if (v / SUMMARY_FILE).exists()] if d.is_dir() else []
    return [v.name for v in sorted(found, key=lambda v: ((v / SUMMARY_FILE).stat().st_mtime, v.name))]


def table_rows(rows: list[RunRow]) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Header and cells for the table / Markdown, plus flat records for CSV (one column per figure). Each row is
    a run's headline (summary.json: its widest complete evaluation); `views` names its narrower commands' tables."""
    tasks = list(dict.fromkeys(t for r in rows for t in r.result.tasks))
    head = ["model", "identity", "run id", "K", *[f"{t} pass@1 ± SE (%)" for t in tasks], "complete", "date", "views",
            "dir"]
    cells, records = [], []
    for row in rows:
        r = row.result
        lo, hi = sample_range(r)
        samples = str(hi) if lo == hi else f"{lo}–{hi}"
        line = [r.model, row.identity, r.run_id, samples]
        rec: dict[str, Any] = {"model": r.model, "identity": row.identity, "run_id": r.run_id, "n": samples}
        for t in tasks:
            m = r.tasks.get(t)
            if m is None or m.mean is None:
                line.append("")
                rec[f"{t}_pass1"] = rec[f"{t}_stderr"] = ""
                continue
            line.append(pct_se(m.mean, m.stderr))
            rec[f"{t}_pass1"], rec[f"{t}_stderr"] = m.mean, "" if m.stderr is None else m.stderr
        views = ", ".join(views_of(r.run_dir))
        line += ["yes" if r.complete else "no", row.date, views, str(r.run_dir)]
        rec.update(complete=r.complete, date=row.date, views=views, run_dir=str(r.run_dir))
        cells.append(line)
        records.append(rec)
    return head, cells, records


# ---- checkpoints x (task, metric): the table of a sweep teams paste into reports -----------------------

def setting_label(result: RunResult) -> str:
    """What tells apart runs of one checkpoint on the same task (the battery's gsm8k at 4 and 8 shots):
    the prompt style and shots asked for, e.g. "gsm8k_cot, 8-shot"; "" when none was asked."""
    style = result.config.settings.prompt_style
    if style is None:
        return ""
    parts = [str(style["style"])] if style.get("style") else []
    if style.get("num_fewshot") is not None:
        parts.append(f"{style['num_fewshot']}-shot")
    return ", ".join(parts)


def checkpoint_metrics(result: RunResult) -> dict[str, tuple[float | None, float | None]]:
    """`<task>/<metric>` -> (value, SE) of the figures a checkpoint table shows, as fractions: pass@1 (the
    accuracy of a greedy run), lm-eval's columns under lm-eval's names (`exact_match,strict-match`, ...),
    pass@K and maj@K for K > 1, and the per-subject accuracy where the data has subjects. The task is
    `<task> (<setting>)` for a run that asked for a prompt style or shots (`gsm8k (8-shot)`)."""
    from reasoneval.report.dashboards import lmeval_name

    label = setting_label(result)
    out: dict[str, tuple[float | None, float | None]] = {}
    for task, m in result.tasks.items():
        t = f"{task} ({label})" if label else task
        out[f"{t}/pass@1"] = (m.mean, m.stderr)
        for name, g in m.extra.items():
            out[f"{t}/{lmeval_name(name)}"] = (g.mean, g.stderr)
        K = top_k(m)  # the largest k every problem of the task has (report.figures)
        if K > 1:
            out[f"{t}/pass@{K}"] = (m.pass_at_k.get(K), None)
            out[f"{t}/maj@{K}"] = (m.maj_at_k.get(K), None)
        for subject, g in sorted((m.breakdown.get("subject") or {}).items()):
            out[f"{t}/subject/{subject}"] = (g.mean, g.stderr)
    return out


def checkpoint_table(items: list[tuple[Checkpoint, RunResult]], metric: str | None = None
                     ) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """(checkpoint, result) -> one row per checkpoint of a training run (its runs merged: a battery's runs of one
    checkpoint with different settings; two training runs' checkpoints of one name are two rows), ordered by
    training run, step, name; one column per (task, metric): Markdown cells "value ± SE" as lm-eval prints them
    (fractions, 4 decimals); CSV records with the value and a `<metric>_stderr` column, full precision. A
    "training run" column comes first when a checkpoint has one (a model path's folder). A figure two runs of a
    checkpoint both have comes from the later run given. metric: only the columns whose metric (after `<task>/`)
    matches this glob."""
    groups: dict[Checkpoint, list[RunResult]] = {}
    for point, result in items:
        groups.setdefault(point, []).append(result)
    keys = sorted(groups, key=lambda k: (k.training_run, k.step is None, k.step if k.step is not None else 0, k.name))
    figures = [{c: v for r in groups[k] for c, v in checkpoint_metrics(r).items()} for k in keys]
    columns = [c for c in dict.fromkeys(c for f in figures for c in f)
               if metric is None or fnmatch.fnmatch(c.split("/", 1)[1], metric)]
    with_se = {c for f in figures for c, (_, se) in f.items() if se is not None}
    runs_column = any(k.training_run for k in keys)
    head = [*(["training run"] if runs_column else []), "checkpoint", "step", *columns]
    cells, records = [], []
    for point, f in zip(keys, figures):
        step = "" if point.step is None else str(point.step)
        line = [*([point.training_run] if runs_column else []), point.name, step]
        rec: dict[str, Any] = {**({"training_run": point.training_run} if runs_column else {}), "checkpoint": point.name,
                               "step": "" if point.step is None else point.step}
        for c in columns:
            value, se = f.get(c, (None, None))
            line.append("" if value is None else f"{value:.4f}" + ("" if se is None else f" ± {se:.4f}"))
            rec[c] = "" if value is None else value
            if c in with_se:
                rec[_stderr_name(c)] = "" if se is None else se
        runs = groups[point]
        rec.update(run_id=";".join(r.run_id for r in runs), complete=all(r.complete for r in runs),
                   run_dir=";".join(str(r.run_dir) for r in runs))
        cells.append(line)
        records.append(rec)
    return head, cells, records


def _stderr_name(column: str) -> str:
    """lm-eval's name of a figure's SE: `gsm8k/exact_match_stderr,strict-match`, `gsm8k/pass@1_stderr`."""
    metric, comma, filt = column.partition(",")
    return f"{metric}_stderr{comma}{filt}"


def checkpoint_items(rows: list[RunRow]) -> list[tuple[Checkpoint, RunResult]]:
    """Each run as the checkpoint it evaluated (dashboards.model_checkpoint): its training run, name and step."""
    return [(model_checkpoint(row.result.config), row.result) for row in rows]
