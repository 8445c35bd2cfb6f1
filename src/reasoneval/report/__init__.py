"""Reports: summary.json, results.parquet and the terminal table, all rebuilt from the store."""

from .summary import Summary, build_summary, load_config, select_problems, write_json_atomic
from .table import render_table

__all__ = ["Summary", "build_summary", "load_config", "select_problems", "write_json_atomic", "render_table"]
