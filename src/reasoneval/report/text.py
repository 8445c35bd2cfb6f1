"""Plain tables for the terminal, Markdown and CSV: one header and rows of cells."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table


def console_for_tables() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=200)  # a pipe: no 80-column wrapping


def print_table(head: Sequence[str], rows: Sequence[Sequence[str]], title: str = "", console: Console | None = None,
                left: int = 1, fold: bool = False) -> None:
    """`left`: how many leading columns are text (left-aligned); the rest are figures. `fold`: a header or cell
    wider than the terminal allows wraps onto more lines instead of ending in "…" (headers like
    `aime24 (8-shot)/exact_match,strict-match` that have no space to wrap at)."""
    table = Table(title=title or None, title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i < left else "right", overflow="fold" if fold else "ellipsis")
    for r in rows:
        table.add_row(*r)
    (console or console_for_tables()).print(table)


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    def cell(s: str) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in head) + " |",
             "|" + "|".join("---" if i < left else "---:" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def csv_text(records: Sequence[dict[str, Any]]) -> str:
    fields = list(dict.fromkeys(k for r in records for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(records)
    return buf.getvalue()


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as percent for tables: 0.4567 -> "45.7"; "-" for no value."""
    return "-" if x is None else f"{100 * x:.{digits}f}"


def pct_se(mean: float | None, se: float | None) -> str:
    """A figure and its standard error in percent: "45.7 ± 3.2" ("45.7" without an SE, "-" without a figure)."""
    return "-" if mean is None else pct(mean) + ("" if se is None else f" ± {pct(se)}")
