"""`squares`: N * N for N = 1..12, read from squares.jsonl, a data file shipped beside this module in its package."""

from reasoneval.scoring import TaskScoring
from reasoneval.tasks import PackageFile, TaskSpec

# The file is package data: JSONL, JSON, Parquet or CSV (what --data reads), uniform rows (id, problem, answer, ...).
SQUARES = TaskSpec("squares", "N * N for N = 1..12 (an example task with its data file)", size=12,
                   data_file=PackageFile(__name__, "squares.jsonl"), scoring=TaskScoring("math"), prompt="boxed")
