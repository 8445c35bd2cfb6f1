"""The typed, versioned result of a run: `RunConfig` (config.json) and `RunResult` (summary.json).

One shape whoever writes it (`run`, `report`, `score`), with a schema version; `load_run(dir)` reads
this version and the previous one (schema 1: no `schema_version`, no per-task scoring in config.json).
Renderers (the table, summary.json, later HTML and comparisons) take a `RunResult`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from reasoneval.atomic import atomic_write_json
from reasoneval.errors import UserError
from reasoneval.metrics import TaskMetrics
from reasoneval.results.identity import RunSettings
from reasoneval.run_files import CONFIG_FILE, SUMMARY_FILE, VIEWS_DIR
from reasoneval.scoring.base import TaskScoring
from reasoneval.serial import JsonRecord, from_json, json_field

SCHEMA_VERSION = 2
# results.parquet's format, in the Parquet schema's metadata under RESULTS_VERSION_KEY. Files written before it
# was recorded have none: version 1, the same columns (0.1.0's lack the extra_* and details columns, which
# readers treat as empty). Bump it when a column changes meaning.
RESULTS_VERSION = 1
RESULTS_VERSION_KEY = b"reasoneval.results_version"


def results_version(metadata: Mapping[bytes, bytes] | None, path: Path | str) -> int:
    """The format version of a results.parquet from its schema metadata; a newer one than this reasoneval
    reads is a UserError (its columns may mean something else)."""
    raw = (metadata or {}).get(RESULTS_VERSION_KEY)
    try:
        version = int(raw) if raw is not None else 1
    except ValueError:
        raise UserError(f"{path}: unreadable results version {raw!r}; re-create it with `reasoneval report`") from None
    if version > RESULTS_VERSION:
        raise UserError(f"{path} has results version {version}, newer than this reasoneval reads ({RESULTS_VERSION}): "
                        "upgrade reasoneval, or re-create it with `reasoneval report`")
    return version


@dataclass(frozen=True)
class GenerationTiming(JsonRecord):
    """The last generation pass of a run (empty for a run that only scored)."""

    wall_s: float = 0.0
    output_tokens_per_s: float = 0.0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    generated: int = 0
    failed: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class TaskData(JsonRecord):
    """config.json's `datasets[task]`: the problems the run asked the task with (their count and hash), where they
    came from, and the version of the task's definition (TaskSpec.version; None in runs written before tasks had
    versions, whose definition is version "1"). Fields are written in this order; an absent one is not written."""

    num_problems: int = 0
    hash: str = ""
    source: str | None = json_field(default=None, omit_none=True)
    version: str | None = json_field(default=None, omit_none=True)
    # the task's --task-arg options (LiveCodeBench's release and date window), as the task recorded them
    options: dict[str, str] = json_field(default_factory=dict, omit_empty=True)
    # what the figures cover (Codeforces): problems per judging method, and those left out before the run per reason
    judged_by: dict[str, int] = json_field(default_factory=dict, omit_empty=True)
    left_out: dict[str, int] = json_field(default_factory=dict, omit_empty=True)


@dataclass(frozen=True, kw_only=True)
class RunConfig(JsonRecord):
    """config.json: what a run is (its identity and settings) and what it covers. Fields are written in
    this order (reasoneval.serial)."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = ""
    # Everything the run id hashes (model, identity, api, prompt, sampling, seed).
    settings: RunSettings = field(default_factory=lambda: RunSettings(model=""))
    # "openai" | "local" | "launch" | "vllm" | ... | "score" (an imported file of generations)
    engine: str = ""
    # What the run's headline covers (results/scope.py): its samples per problem (K; the largest where tasks
    # differ, each task's then in task_n), its tasks, and each task's problem keys in order. For a view's
    # summary.json (views/<name>/), what the view covers.
    n: int = 1
    tasks: list[str] = field(default_factory=list)
    problem_keys: dict[str, list[str]] = field(default_factory=dict)
    # task -> how its responses are scored
    scoring: dict[str, TaskScoring] = field(default_factory=dict)
    # What the engine says served the run (its options, no secrets; e.g. the local engine's kernels).
    engine_config: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str | None = None
    limit: int | None = None
    # task -> its problems' count and hash, their source and the task's version
    datasets: dict[str, TaskData] = field(default_factory=dict)
    concurrency: int | None = None
    max_model_len: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    # `score` of an external file: the file.
    source: str | None = None
    created: str | None = None
    updated: str | None = None
    last_generation: GenerationTiming | None = None
    # run --target-se: {"design": "two-stage", "target_se": points, "max_n", "budget_samples", "history": [every
    # command given to the run directory, run/adaptive.py], "stopped": {task: why}, "tasks": the adaptive ones (none:
    # all)}; without "design": a run of the earlier cross-fit design (reported with its own estimator). None: uniform K
    adaptive: dict[str, Any] | None = None
    # task -> its samples per problem, where the headline's tasks differ (a K extension of one task); else empty
    task_n: dict[str, int] = json_field(default_factory=dict, omit_empty=True)
    # "kind/name" -> "distribution==version" of every plugin the run used (its engine, tasks, their scorers and
    # prompt styles; run/pipeline.py used_plugins): what traces a result to the code outside reasoneval that made
    # it. Built-ins are reasoneval's own (versions["reasoneval"]); none used: not written, so no run id changes.
    plugins: dict[str, str] = json_field(default_factory=dict, omit_empty=True)
    # competition programming: the machine's calibration its CPU-time limits were scaled by (scoring/programs/
    # calibrate.py: factor, the reference workload's CPU time here and on the reference machine), measured once per
    # run; absent for runs without such a task
    calibration: dict[str, Any] = json_field(default_factory=dict, omit_empty=True)
    # Everything about the setup that can change the generated tokens (results/fingerprint.py: engine and version,
    # weights' sha256, dtype, parallelism, batching, kernels, threads, accelerator, sampling, seeds, grader); absent in
    # runs made before it was recorded (fingerprint.of_config derives a partial one)
    fingerprint: dict[str, Any] = json_field(default_factory=dict, omit_empty=True)

    @property
    def model(self) -> str:
        return self.settings.model or ""

    def task_version(self, task: str) -> str | None:
        """The version of the task definition the run was made with; None for a run written before tasks
        had versions (the definition then is version "1")."""
        data = self.datasets.get(task)
        return None if data is None else data.version

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any], legacy_scoring: Mapping[str, TaskScoring] | None = None
                       ) -> RunConfig:
        _check_version(d, CONFIG_FILE)
        config = from_json(cls, d, schema_version=SCHEMA_VERSION)
        if legacy_scoring:
            config = dataclasses.replace(config, scoring={
                **config.scoring, **{t: s for t, s in legacy_scoring.items() if t not in config.scoring}})
        return config


@dataclass(frozen=True, kw_only=True)
class RunResult(JsonRecord):
    """summary.json: every metric per task and over all tasks, with the config that produced them. Fields
    are written in this order (reasoneval.serial); `run_dir` is where it was read from, not written."""

    schema_version: int = SCHEMA_VERSION
    model: str
    run_id: str
    run_dir: Path = json_field(skip=True)
    # Samples per problem the metrics use (K).
    n: int
    config: RunConfig
    tasks: dict[str, TaskMetrics]
    aggregate: TaskMetrics
    timing: GenerationTiming = field(default_factory=GenerationTiming)
    complete: bool = False
    # scorer name -> its version, for the scorers this result used
    scorers: dict[str, str] = field(default_factory=dict)
    # run --target-se, per task: target_se, se (points: the measured re-run SE), planned_se (points: what the plan
    # predicted; two-stage runs), met (se <= target_se), stopped, samples, n_min, n_max, n_histogram, pass_at_k_max
    # (pass@k and maj@k are reported for k <= n_min only), uniform_k and uniform_samples (what uniform K reaching
    # the same SE would cost). None: a uniform run.
    adaptive: dict[str, Any] | None = json_field(default=None, omit_none=True)
    # A narrower command's result, not the run's headline (results/scope.py): the name of its folder under
    # views/ in the run directory. None: the headline (summary.json in the run directory).
    view: str | None = json_field(default=None, omit_none=True)
    # A view's command: whether it changed the headline too (its files, compared before and after: a task joined,
    # a wider scope, a re-score), and the headline's scope then (results.scope.describe). Not written.
    headline_changed: bool = json_field(default=False, skip=True)
    headline_scope: str | None = json_field(default=None, skip=True)
    # Where the command's evaluation of a task is adaptive and the headline's a fixed K (or the reverse): which one
    # the headline is now, and why (results.scope.evaluation_note). Not written.
    evaluation_note: str | None = json_field(default=None, skip=True)

    @property
    def files_dir(self) -> Path:
        """Where this result's summary.json, results.parquet and report.html are."""

        return self.run_dir / VIEWS_DIR / self.view if self.view else self.run_dir

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any], run_dir: Path | None = None,
                       config: RunConfig | None = None) -> RunResult:
        if run_dir is None:
            raise TypeError("RunResult.from_json_dict needs the run directory")
        _check_version(d, f"{run_dir}/{SUMMARY_FILE}")
        cfg = config or RunConfig.from_json_dict(d.get("config") or {})
        given: dict[str, Any] = {"run_dir": Path(run_dir), "config": cfg, "schema_version": SCHEMA_VERSION}
        if not d.get("model"):
            given["model"] = cfg.model
        if not d.get("run_id"):
            given["run_id"] = cfg.run_id
        if not d.get("n"):  # schema 1: K is every task's num_samples
            tasks = d.get("tasks") or {}
            given["n"] = next((int(m.get("num_samples") or 0) for m in tasks.values()), cfg.n)
        return from_json(cls, d, **given)


def _check_version(d: Mapping[str, Any], where: str) -> None:
    version = int(d.get("schema_version") or 1)
    if version > SCHEMA_VERSION:
        raise UserError(f"{where} has schema version {version}, newer than this reasoneval reads "
                        f"({SCHEMA_VERSION}): upgrade reasoneval")


def _read_json(path: Path) -> dict[str, Any]:
    # What re-creates it: summary.json is scored again by `report`; config.json is restored by `report` from the copy
    # summary.json holds, so when `report` is what fails on it, by the command that made it (issue 52.6).
    fix = (f"re-create it with `reasoneval report {path.parent}`" if path.name != CONFIG_FILE else
           "re-run the `reasoneval run` command that made this run, with the same flags: it writes config.json again "
           "and keeps every sample")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON ({e}); {fix}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object; {fix}")
    return data


def load_config(run_dir: Path) -> RunConfig:
    """config.json of a run directory (either schema version)."""
    from reasoneval.results.store.problems import legacy_scoring

    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise UserError(f"{run_dir} is not a reasoneval run directory (no config.json); "
                        "pass a directory like results/<model>/<run-id>")
    d = _read_json(path)
    return RunConfig.from_json_dict(d, legacy_scoring(Path(run_dir)) if "scoring" not in d else None)


def write_config(run_dir: Path, config: RunConfig) -> None:
    atomic_write_json(Path(run_dir) / CONFIG_FILE, config.to_json_dict())


def load_run(run_dir: Path) -> RunResult:
    """The result of a scored run directory, as its summary.json holds it (either schema version)."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.exists():
        raise UserError(f"{run_dir} has no summary.json yet: run `reasoneval report {run_dir}` to score it")
    return RunResult.from_json_dict(_read_json(path), run_dir, config)
