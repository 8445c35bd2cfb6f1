"""Readers of finished runs: per-problem outcomes from results.parquet, paired comparison of runs,
SE against samples per problem (computation; the tables of runs are report.runs, export is run.export: it
rebuilds the run's prompts with the plan).

Each works on a run directory (`result.load_run` plus results.parquet / the sample store); the
renderers in `reasoneval.report` print or write what these compute.
"""

from reasoneval.analysis.compare import Comparison, PairedDifference, compare_runs, paired_difference
from reasoneval.analysis.outcomes import ProblemRow, read_problem_rows

__all__ = ["Comparison", "PairedDifference", "ProblemRow", "compare_runs", "paired_difference", "read_problem_rows"]
