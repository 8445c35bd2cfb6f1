"""What every view of a result says about how it was sampled: the samples per problem ("K = 4", "4–34 per
problem"), the k each row's pass@k and maj@k go up to, and the lines under a table that say why (the terminal
table, report.html, `runs`, the checkpoint table read these, so they say the same thing).

pass@k and maj@k are defined for k up to the fewest samples a problem of the row has (metrics.defined_k): an
aggregate over tasks has the k every task has.
"""

from __future__ import annotations

from reasoneval.metrics import TaskMetrics, maj_ks
from reasoneval.results.schema import RunResult


def top_k(m: TaskMetrics) -> int:
    """The largest k with a pass@k figure in this row (0: none)."""
    return max((k for k, v in m.pass_at_k.items() if v is not None), default=0)


def samples_label(lo: int, hi: int) -> str:
    """"K = 4" when every problem has 4 samples, "4–34 per problem" when they differ."""
    return f"K = {hi}" if lo == hi else f"{lo}–{hi} per problem"


def sample_range(result: RunResult) -> tuple[int, int]:
    """The fewest and most samples a problem of the result has (every task's)."""
    ranges = [m.sample_range() for m in result.tasks.values()] or [(result.n, result.n)]
    return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)


def rows(result: RunResult) -> list[tuple[str, TaskMetrics]]:
    """The rows a metrics table shows: each task, then "all (micro)" when there are several."""
    out = list(result.tasks.items())
    if len(result.tasks) > 1:
        out.append(("all (micro)", result.aggregate))
    return out


def pass_ks(result: RunResult) -> list[int]:
    """The pass@k columns (powers of two and the largest k) up to the largest k any row has."""
    top = max((top_k(m) for _, m in rows(result)), default=0)
    return maj_ks(top) if top else []


def maj_columns(result: RunResult) -> list[int]:
    """The maj@k columns: each row's largest k (one column when the rows agree)."""
    return sorted({top_k(m) for _, m in rows(result) if top_k(m) > 1})


def k_note(result: RunResult) -> str | None:
    """The line under a table whose rows go to different k, or whose problems have different sample counts."""
    tops = {name: top_k(m) for name, m in rows(result)}
    lo, hi = sample_range(result)
    if len(set(tops.values())) <= 1 and lo == hi:
        return None
    per_row = ", ".join(f"{name} {k}" for name, k in tops.items())
    return (f"{samples_label(lo, hi)}: pass@k and maj@k are shown for k up to the fewest samples a problem of the "
            f"row has ({per_row}); above it they would cover only the problems that have more")


def adaptive_lines(result: RunResult) -> list[str]:
    """One line per task of a --target-se run: the target, whether it was met by the re-run SE (the figure the
    target is about, not the table's ± over problems), what was spent against uniform K."""
    out = []
    for t, a in (result.adaptive or {}).items():
        se = "?" if a.get("se") is None else f"{a['se']:.2f}"
        if a.get("met"):
            met = "met"
        elif a.get("stopped") == "target":  # the plan is carried out; the measured SE came out above it
            met = (f"planned for (predicted re-run SE {a['planned_se']:.2f}), measured above it"
                   if a.get("planned_se") is not None else "planned for, measured above it")
        else:
            met = f"NOT met ({a.get('stopped') or 'run stopped early'})"
        uniform = (f"; uniform K = {a['uniform_k']} for the same SE: {a['uniform_samples']} samples "
                   f"({a['samples'] / a['uniform_samples']:.2f}x)" if a.get("uniform_samples") else "")
        m = result.tasks.get(t)
        over = f" (the table's ± {100 * m.stderr:.1f} also counts which problems were drawn)" \
            if m is not None and m.stderr is not None else ""
        out.append(f"{t}: target re-run SE {a['target_se']:g} points {met}: re-run SE {se}{over}; {a['samples']} "
                   f"samples, {a['n_min']}-{a['n_max']} per problem{uniform}; pass@k, maj@k for k <= {a['pass_at_k_max']}")
    return out


def view_line(result: RunResult) -> str | None:
    """For a narrower command's result: that it is a view, where it is, and whether the headline changed with it
    ("unchanged" only when the command left the headline's files as they were: RunResult.headline_changed)."""
    if not result.view:
        return None
    if result.evaluation_note:  # a fixed K beside an adaptive headline (or the reverse): not "less", another kind
        now = f": it now covers {result.headline_scope}" if result.headline_changed and result.headline_scope else ""
        state = f"this command updated too{now}" if result.headline_changed else "is unchanged"
        return (f"{result.evaluation_note}; the run's headline is what summary.json, report.html and `runs` show, "
                f"which {state}; it is also in {result.files_dir}")
    if result.headline_changed:
        now = f": it now covers {result.headline_scope}" if result.headline_scope else ""
        return (f"this table covers less than the run's headline (summary.json, report.html, `runs`), which this "
                f"command updated too{now}; it is also in {result.files_dir}")
    return (f"this table covers less than the run's headline (summary.json, report.html, `runs`), which is "
            f"unchanged; it is also in {result.files_dir}")
