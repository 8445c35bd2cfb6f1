"""`reasoneval runs [DIR]`: one table of every run under a results folder."""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from reasoneval.errors import UserError
from reasoneval.report.dashboards import Checkpoint, model_checkpoint, sampling_settings
from reasoneval.report.figures import sample_range, top_k
from reasoneval.report.text import pct_se
from reasoneval.results import fingerprint
from reasoneval.results.schema import RunResult, load_run
from reasoneval.run_files import CONFIG_FILE, SUMMARY_FILE, VIEWS_DIR

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
    def fingerprint(self) -> str:
        """The short id of the run's setup (results/fingerprint.py); `~` marks a partial one (an older run)."""
        return fingerprint.fingerprint_id(fingerprint.of_config(self.result.config))

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
    head = ["model", "identity", "run id", "fingerprint", "K", *[f"{t} pass@1 ± SE (%)" for t in tasks], "complete", "date", "views",
            "dir"]
    cells, records = [], []
    for row in rows:
        r = row.result
        lo, hi = sample_range(r)
        samples = str(hi) if lo == hi else f"{lo}–{hi}"
        line = [r.model, row.identity, r.run_id, row.fingerprint, samples]
        rec: dict[str, Any] = {"model": r.model, "identity": row.identity, "run_id": r.run_id,
                               "fingerprint": row.fingerprint, "n": samples}
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


def fingerprint_groups(rows: list[RunRow]) -> list[tuple[str, str, list[RunRow]]]:
    """`runs --group-by fingerprint`: the runs by setup, as (fingerprint id, what the setup is in one line, its runs),
    largest group first."""
    groups: dict[str, list[RunRow]] = {}
    for row in rows:
        groups.setdefault(row.fingerprint, []).append(row)
    out = []
    for fid, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        fp = fingerprint.of_config(members[0].result.config)
        keys = ("engine", "engine_version", "weights_sha256", "quantisation", "dtype", "tensor_parallel", "batch",
                "concurrency", "kernels", "threads", "accelerator")
        parts = [f"{k}={fingerprint.short(fp[k], 24)}" for k in keys if k in fp and fp[k] != fingerprint.UNKNOWN]
        out.append((fid, ", ".join(parts) + (" (partial: made before fingerprints)" if fp.get("partial") else ""),
                    members))
    return out


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


def row_settings(result: RunResult) -> dict[str, str]:
    """What makes two runs of one checkpoint different evaluations besides their tasks and prompt styles (which
    name the columns, `setting_label`): sampling, seed, API, system prompt, chat template, and K (or the adaptive
    target). Runs of one checkpoint share a row of the checkpoint table only when these are equal."""
    s = result.config.settings
    out: dict[str, str] = {}
    if s.sampling is not None:  # every option the run set (a new sampling option with no edit here)
        out.update({name: f"{value:g}" if isinstance(value, float) else str(value)
                    for name, value in sampling_settings(s.sampling).items()})
    for name in ("seed", "api", "system_prompt", "prompt_template"):
        if getattr(s, name) is not None:
            out[name] = str(getattr(s, name))
    if result.adaptive:
        out["target_se"] = f"{100 * float((result.config.adaptive or {}).get('target_se') or 0):g}"
    else:
        lo, hi = sample_range(result)
        out["K"] = str(hi) if lo == hi else f"{lo}-{hi}"
    return out


def _rows_of(results: list[RunResult]) -> list[list[RunResult]]:
    """A checkpoint's runs as rows: a run joins the first row whose runs have its `row_settings` and none of its
    columns (a battery's runs of one checkpoint: one row); else it starts a row. So a row never holds figures of
    two different evaluations, and no figure is shown for a run it is not from."""
    rows: list[tuple[dict[str, str], set[str], list[RunResult]]] = []
    for r in results:
        key, columns = row_settings(r), set(checkpoint_metrics(r))
        for k, cols, members in rows:
            if k == key and not cols & columns:
                members.append(r)
                cols |= columns
                break
        else:
            rows.append((key, columns, [r]))
    return [members for _, _, members in rows]


def _differing(rows: list[list[RunResult]]) -> list[str]:
    """Each row's settings that differ between the rows of one checkpoint ("temperature=0.6, K=8"); the run ids
    where the settings are equal (runs of one checkpoint served under two names)."""
    settings = [row_settings(row[0]) for row in rows]
    names = [k for k in dict.fromkeys(k for s in settings for k in s) if len({s.get(k) for s in settings}) > 1]
    out = [", ".join(f"{k}={s[k]}" for k in names if k in s) for s in settings]
    return [text or "run " + ";".join(r.run_id for r in row) for text, row in zip(out, rows)]


def checkpoint_table(items: list[tuple[Checkpoint, RunResult]], metric: str | None = None
                     ) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """(checkpoint, result) -> rows by checkpoint of a training run, ordered by training run, step, name; one column
    per (task, metric): Markdown cells "value ± SE" as lm-eval prints them (fractions, 4 decimals); CSV records
    with the value and a `<metric>_stderr` column, full precision. A "training run" column comes first when a
    checkpoint has one (a model path's folder); two training runs' checkpoints of one name are two rows.

    A row is one evaluation (docs/reporting.md, "Keys"): the runs of a checkpoint share a row only when their
    `row_settings` are equal and their columns are disjoint (a battery's runs of one checkpoint, each task or
    prompt style its own columns). Runs of one checkpoint that differ otherwise (another temperature, seed or K)
    are rows of their own, and a "settings" column shows what differs between them. metric: only the columns
    whose metric (after `<task>/`) matches this glob."""
    groups: dict[Checkpoint, list[RunResult]] = {}
    for point, result in items:
        groups.setdefault(point, []).append(result)
    keys = sorted(groups, key=lambda k: (k.training_run, k.step is None, k.step if k.step is not None else 0, k.name))
    lines: list[tuple[Checkpoint, list[RunResult], str]] = []
    for k in keys:
        rows = _rows_of(groups[k])
        labels = _differing(rows) if len(rows) > 1 else [""]
        lines += [(k, row, label) for row, label in zip(rows, labels)]
    figures = [{c: v for r in runs for c, v in checkpoint_metrics(r).items()} for _, runs, _ in lines]
    columns = [c for c in dict.fromkeys(c for f in figures for c in f)
               if metric is None or fnmatch.fnmatch(c.split("/", 1)[1], metric)]
    with_se = {c for f in figures for c, (_, se) in f.items() if se is not None}
    runs_column = any(k.training_run for k in keys)
    settings_column = any(label for _, _, label in lines)
    head = [*(["training run"] if runs_column else []), "checkpoint", "step", *(["settings"] if settings_column else []),
            *columns]
    cells, records = [], []
    for (point, runs, label), f in zip(lines, figures):
        step = "" if point.step is None else str(point.step)
        line = [*([point.training_run] if runs_column else []), point.name, step, *([label] if settings_column else [])]
        rec: dict[str, Any] = {**({"training_run": point.training_run} if runs_column else {}), "checkpoint": point.name,
                               "step": "" if point.step is None else point.step,
                               **({"settings": label} if settings_column else {})}
        for c in columns:
            value, se = f.get(c, (None, None))
            line.append("" if value is None else f"{value:.4f}" + ("" if se is None else f" ± {se:.4f}"))
            rec[c] = "" if value is None else value
            if c in with_se:
                rec[_stderr_name(c)] = "" if se is None else se
        rec.update(run_id=";".join(r.run_id for r in runs), complete=all(r.complete for r in runs),
                   run_dir=";".join(str(r.run_dir) for r in runs))
        cells.append(line)
        records.append(rec)
    return head, cells, records


def text_columns(head: Sequence[str]) -> int:
    """How many leading columns of a checkpoint table are text (training run, checkpoint, step, settings)."""
    return head.index("settings" if "settings" in head else "step") + 1


def _stderr_name(column: str) -> str:
    """lm-eval's name of a figure's SE: `gsm8k/exact_match_stderr,strict-match`, `gsm8k/pass@1_stderr`."""
    metric, comma, filt = column.partition(",")
    return f"{metric}_stderr{comma}{filt}"


def checkpoint_items(rows: list[RunRow]) -> list[tuple[Checkpoint, RunResult]]:
    """Each run as the checkpoint it evaluated (dashboards.model_checkpoint): its training run, name and step."""
    return [(model_checkpoint(row.result.config), row.result) for row in rows]
