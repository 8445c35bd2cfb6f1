"""Renderers of a `Comparison`: the terminal table and Markdown (the HTML page is in html.py)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from reasoneval.analysis.compare import Comparison, PairedDifference
from reasoneval.report.text import console_for_tables, markdown_table, pct, pct_se

MAX_FLIPS_SHOWN = 10


def _signed(d: PairedDifference) -> str:
    if d.diff is None:
        return "-"
    return f"{100 * d.diff:+.1f}" + ("" if d.stderr is None else f" ± {100 * d.stderr:.1f}")


def _ci(d: PairedDifference) -> str:
    return "-" if d.ci95 is None else f"[{100 * d.ci95[0]:+.1f}, {100 * d.ci95[1]:+.1f}]"


def _p(d: PairedDifference) -> str:
    return "-" if d.p_value is None else (f"{d.p_value:.3g}" if d.p_value >= 1e-4 else "<1e-4")


def run_letters(c: Comparison) -> list[str]:
    """What the tables call each run: A (the baseline), B, ... (numbers past Z)."""
    return [chr(65 + i) if i < 26 else str(i) for i in range(len(c.runs))]


def run_labels(c: Comparison) -> list[str]:
    return [f"{letter}: {r.model} ({r.run_id})" for letter, r in zip(run_letters(c), c.runs)]


def rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """Header and rows shared by the table and Markdown: one row per task and run."""
    letters = run_letters(c)
    ks = sorted({k for t in c.tasks for k in t.ks if k > 1})
    mk = max((max(t.maj_ks) for t in c.tasks if t.maj_ks), default=None)
    head = ["task", "run", "pass@1 ± SE (%)", "Δ vs A ± SE", "95% CI", "p", "common", "flips"]
    head += [f"pass@{k}" for k in ks] + ([f"maj@{mk}"] if mk else [])
    out = []
    for t in c.tasks:
        for i, letter in enumerate(letters):
            m, se = t.pass1[i]
            row = [t.task, letter, pct_se(m, se)]
            if i == 0:
                row += ["", "", "", "", ""]
            else:
                d = t.versus[i - 1]
                row += [_signed(d), _ci(d), _p(d), str(d.num_common), str(len(t.flips[i - 1]))]
            row += [pct(t.pass_at_k[i].get(k)) for k in ks]
            if mk:
                row.append(pct(t.maj_at_k[i].get(mk)))
            out.append(row)
    return head, out


def render_compare_table(c: Comparison, console: Console | None = None) -> None:
    console = console if console is not None else console_for_tables()
    for label in run_labels(c):
        console.print(label)
    head, body = rows(c)
    table = Table(title="paired comparison (B - A on the problems both ran)", title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i < 2 else "right", no_wrap=i == 0)
    for r in body:
        table.add_row(*r)
    console.print(table)
    if c.skipped:
        console.print(f"not in every run, not compared: {', '.join(c.skipped)}")
    for t in c.tasks:
        for i, fl in enumerate(t.flips):
            if fl:
                shown = ", ".join(f"{f.id} ({pct(f.accuracy_a)}→{pct(f.accuracy_b)})" for f in fl[:MAX_FLIPS_SHOWN])
                more = f" and {len(fl) - MAX_FLIPS_SHOWN} more" if len(fl) > MAX_FLIPS_SHOWN else ""
                console.print(f"{t.task}, A→{run_letters(c)[i + 1]} flipped: {shown}{more}")


def compare_markdown(c: Comparison) -> str:
    head, body = rows(c)
    lines = [f"- {label}" for label in run_labels(c)] + [""]
    lines += markdown_table(head, body, left=2).splitlines()
    if c.skipped:
        lines += ["", f"not in every run, not compared: {', '.join(c.skipped)}"]
    for t in c.tasks:
        for i, fl in enumerate(t.flips):
            if fl:
                lines.append("")
                lines.append(f"{t.task}, A→{run_letters(c)[i + 1]} flipped ({len(fl)}): "
                             + ", ".join(f"`{f.id}` {pct(f.accuracy_a)}→{pct(f.accuracy_b)}" for f in fl))
    return "\n".join(lines) + "\n"

