"""Renderers of a run's result: the terminal table (report.table) and summary.json (report.summary_json) from a
`RunResult`, and results.parquet (report.parquet: one row per problem, written while the run is scored).

Nothing is imported here: `report.text` and `report.dashboards` are read by commands that start in a blink
(`reasoneval tasks`, `report --help`), which must not load pyarrow and scipy through this package.
"""
