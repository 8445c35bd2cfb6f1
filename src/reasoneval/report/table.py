"""The terminal table: per task and aggregate."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..metrics import TaskMetrics, maj_ks
from ..result import RunResult


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _row(name: str, m: TaskMetrics, ks: list[int], K: int) -> list[str]:
    se, mean = m.stderr, m.mean
    pass1 = "-" if mean is None else f"{100 * mean:.1f}" + ("" if se is None else f" ± {100 * se:.1f}")
    tokens = m.tokens.mean
    return ([name, str(m.num_problems), pass1]
            + [_pct(m.pass_at_k.get(k)) for k in ks]
            + [_pct(m.maj_at_k.get(K)), "-" if tokens is None else f"{tokens:.0f}", _pct(m.truncation_rate)])


def render_table(result: RunResult, console: Console | None = None) -> Table:
    K = result.n
    ks = [k for k in maj_ks(K) if k > 1]
    table = Table(title=f"{result.model}  (run {result.run_id}, K={K})", title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("#problems", justify="right")
    table.add_column("pass@1 ± SE (%)", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    table.add_column(f"maj@{K}", justify="right")
    table.add_column("mean tokens", justify="right")
    table.add_column("trunc %", justify="right")
    for name, m in result.tasks.items():
        table.add_row(*_row(name, m, ks, K))
    if len(result.tasks) > 1:
        agg = result.aggregate
        table.add_section()
        table.add_row(*_row("all (micro)", agg, ks, K))
        if agg.macro_mean is not None:
            table.add_row("all (macro)", "", _pct(agg.macro_mean), *([""] * (len(ks) + 3)))
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: no 80-column wrapping of the figures
            console = Console(width=200)
    console.print(table)
    # the scorers' own figures (IFEval's prompt/instruction-level strict and loose accuracy), one line per task
    for name, m in result.tasks.items():
        if m.extra:
            figures = ", ".join(f"{k} {_pct(e.value)}" + ("" if e.stderr is None else f" ± {100 * e.stderr:.1f}")
                                for k, e in m.extra.items())
            console.print(f"{name}: {figures} (%)")
    return table
