"""The terminal table: per task and aggregate."""

from __future__ import annotations

from typing import Any, Mapping

from rich.console import Console
from rich.table import Table


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _row(name: str, m: Mapping[str, Any], ks: list[str], K: int) -> list[str]:
    se = m.get("stderr")
    mean = m.get("mean")
    pass1 = "-" if mean is None else f"{100 * mean:.1f}" + ("" if se is None else f" ± {100 * se:.1f}")
    tokens = (m.get("tokens") or {}).get("mean")
    return ([name, str(m.get("num_problems", "")), pass1]
            + [_pct((m.get("pass_at_k") or {}).get(k)) for k in ks]
            + [_pct((m.get("maj_at_k") or {}).get(str(K))),
               "-" if tokens is None else f"{tokens:.0f}",
               _pct(m.get("truncation_rate"))])


def render_table(summary: Mapping[str, Any], K: int, console: Console | None = None) -> Table:
    ks = [str(k) for k in _powers_of_two(K) if k > 1]
    table = Table(title=f"{summary.get('model', '')}  (run {summary.get('run_id', '')}, K={K})",
                  title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("#problems", justify="right")
    table.add_column("pass@1 ± SE (%)", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    table.add_column(f"maj@{K}", justify="right")
    table.add_column("mean tokens", justify="right")
    table.add_column("trunc %", justify="right")
    tasks = summary.get("tasks") or {}
    for name, m in tasks.items():
        table.add_row(*_row(name, m, ks, K))
    if len(tasks) > 1 and summary.get("aggregate"):
        agg = summary["aggregate"]
        table.add_section()
        table.add_row(*_row("all (micro)", agg, ks, K))
        if agg.get("macro_mean") is not None:
            table.add_row("all (macro)", "", _pct(agg["macro_mean"]), *([""] * (len(ks) + 3)))
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: no 80-column wrapping of the figures
            console = Console(width=200)
    console.print(table)
    return table


def _powers_of_two(K: int) -> list[int]:
    out, k = [], 1
    while k < K:
        out.append(k)
        k *= 2
    return out + [K]
