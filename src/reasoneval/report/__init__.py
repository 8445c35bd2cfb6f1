"""Renderers of a run's result: the terminal table and summary.json (from a `RunResult`), and
results.parquet (one row per problem, written while the run is scored)."""

from reasoneval.report.parquet import ResultsWriter
from reasoneval.report.summary_json import write_summary
from reasoneval.report.table import render_table

__all__ = ["ResultsWriter", "render_table", "write_summary"]
