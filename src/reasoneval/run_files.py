"""The names of the files in a run directory (`<output>/<model>/<run id>/`): every module that reads or writes one
imports its name from here, so a file is renamed in one place (tests/test_layers.py checks no other module spells
one of these names as a string)."""

# What a run is and what it found (results/schema.py reads and writes both).
CONFIG_FILE = "config.json"  # RunConfig: the run's settings, tasks, datasets, the headline's scope
SUMMARY_FILE = "summary.json"  # RunResult: the metrics of the headline (or of a view, in views/<name>/)

# The journal (results/store/).
SAMPLES_FILE = "samples.jsonl"  # one finished sample per line, resumable
PROBLEMS_FILE = "problems.jsonl"  # the problems the samples answer, one per line
LOCK_FILE = ".lock"  # held by the one process generating into the run

# The renderers of a scored result (report/), beside summary.json.
RESULTS_FILE = "results.parquet"  # one row per sample: the outcomes
REPORT_FILE = "report.html"
REPORT_SIDECAR_DIR = "report_files"  # report.html's per-problem pages

# A narrower command's result, kept beside the headline: views/<name>/summary.json, ...
VIEWS_DIR = "views"

# Logs.
RUN_LOG = "run.log"  # the run's own log (run/progress.py)
SERVER_LOG = "server.log"  # a server reasoneval started for the run (engines/launch)

# The scorers' caches: a re-scored run reads its verdicts instead of grading again.
GRADES_FILE = "grades.jsonl"  # the math grader's verdicts
CODE_RUNS_FILE = "code_runs.jsonl"  # the code scorer's program runs
CONTEST_RUNS_FILE = "contest_runs.jsonl"  # the contest scorer's program runs
CALIBRATION_FILE = "calibration.json"  # the machine's CPU-time calibration for the contest scorer's limits
CODEFORCES_RUNS_FILE = "codeforces_runs.jsonl"  # the codeforces judge's verdicts
JUDGEMENTS_FILE = "judgements.jsonl"  # the rule-then-judge cascade's judge verdicts (scoring/judge)

# What `reasoneval score` (an imported run) copies with the samples: the caches that are still valid.
SCORER_CACHES = (GRADES_FILE, CODE_RUNS_FILE, JUDGEMENTS_FILE)
