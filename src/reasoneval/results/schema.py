"""The typed, versioned result of a run: `RunConfig` (config.json) and `RunResult` (summary.json).

One shape whoever writes it (`run`, `report`, `score`), with a schema version; `load_run(dir)` reads
this version and the previous one (schema 1: no `schema_version`, no per-task scoring in config.json).
Renderers (the table, summary.json, later HTML and comparisons) take a `RunResult`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from reasoneval.errors import UserError
from reasoneval.metrics import TaskMetrics
from reasoneval.scoring.base import TaskScoring

SCHEMA_VERSION = 2
CONFIG_FILE = "config.json"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class GenerationTiming:
    """The last generation pass of a run (empty for a run that only scored)."""

    wall_s: float = 0.0
    output_tokens_per_s: float = 0.0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    generated: int = 0
    failed: int = 0
    output_tokens: int = 0

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any] | None) -> GenerationTiming:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


@dataclass(frozen=True)
class RunConfig:
    """config.json: what a run is (its identity and settings) and what it covers."""

    run_id: str
    # RunSettings.to_dict(): everything the run id hashes (model, identity, api, prompt, sampling, seed).
    settings: Mapping[str, Any]
    # "openai" | "local" | "launch" | "vllm" | ... | "score" (an imported file of generations)
    engine: str
    n: int
    tasks: list[str]
    # task -> the problem keys the last `run` covered, in order (limits `report` to them)
    problem_keys: dict[str, list[str]]
    # task -> how its responses are scored
    scoring: dict[str, TaskScoring]
    # What the engine says served the run (its options, no secrets; e.g. the local engine's kernels).
    engine_config: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str | None = None
    limit: int | None = None
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    concurrency: int | None = None
    max_model_len: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    # `score` of an external file: the file.
    source: str | None = None
    created: str | None = None
    updated: str | None = None
    last_generation: GenerationTiming | None = None
    # run --target-se: {"target_se": points, "max_n", "budget_samples", "stopped": {task: why}}; None: uniform K
    adaptive: dict[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def model(self) -> str:
        return str(self.settings.get("model") or "")

    def to_json_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["scoring"] = {t: s.to_json_dict() for t, s in self.scoring.items()}
        d["settings"] = dict(self.settings)
        return {"schema_version": d.pop("schema_version"), **d}

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any], legacy_scoring: Mapping[str, TaskScoring] | None = None
                       ) -> RunConfig:
        version = int(d.get("schema_version") or 1)
        if version > SCHEMA_VERSION:
            raise UserError(f"config.json has schema version {version}, newer than this reasoneval reads "
                            f"({SCHEMA_VERSION}): upgrade reasoneval")
        tasks = list(d.get("tasks") or [])
        scoring = {t: TaskScoring.from_json_dict(s) for t, s in (d.get("scoring") or {}).items()}
        for t, s in (legacy_scoring or {}).items():
            scoring.setdefault(t, s)
        last = d.get("last_generation")
        return cls(
            run_id=str(d.get("run_id") or ""), settings=dict(d.get("settings") or {}),
            engine=str(d.get("engine") or ""), n=int(d.get("n") or 1), tasks=tasks,
            problem_keys={t: list(ks) for t, ks in (d.get("problem_keys") or {}).items()}, scoring=scoring,
            engine_config=dict(d.get("engine_config") or {}), base_url=d.get("base_url"),
            api_key_env=d.get("api_key_env"), limit=d.get("limit"), datasets=dict(d.get("datasets") or {}),
            concurrency=d.get("concurrency"), max_model_len=d.get("max_model_len"),
            versions=dict(d.get("versions") or {}), source=d.get("source"), created=d.get("created"),
            updated=d.get("updated"), last_generation=GenerationTiming.from_json_dict(last) if last else None,
            adaptive=d.get("adaptive"),
        )


@dataclass(frozen=True)
class RunResult:
    """summary.json: every metric per task and over all tasks, with the config that produced them."""

    model: str
    run_id: str
    run_dir: Path
    config: RunConfig
    # Samples per problem the metrics use (K).
    n: int
    tasks: dict[str, TaskMetrics]
    aggregate: TaskMetrics
    timing: GenerationTiming
    complete: bool
    # scorer name -> its version, for the scorers this result used
    scorers: dict[str, str] = field(default_factory=dict)
    # run --target-se, per task: target_se, se (points), met, stopped, samples, n_min, n_max, n_histogram,
    # pass_at_k_max (pass@k and maj@k are reported for k <= n_min only), uniform_k and uniform_samples (what
    # uniform K reaching the same SE would cost). None: a uniform run.
    adaptive: dict[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION

    def to_json_dict(self) -> dict[str, Any]:
        d = {
            "schema_version": self.schema_version, "model": self.model, "run_id": self.run_id, "n": self.n,
            "config": self.config.to_json_dict(),
            "tasks": {t: m.to_json_dict() for t, m in self.tasks.items()},
            "aggregate": self.aggregate.to_json_dict(), "timing": dataclasses.asdict(self.timing),
            "complete": self.complete, "scorers": dict(self.scorers),
        }
        if self.adaptive is not None:
            d["adaptive"] = self.adaptive
        return d

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any], run_dir: Path, config: RunConfig | None = None) -> RunResult:
        version = int(d.get("schema_version") or 1)
        if version > SCHEMA_VERSION:
            raise UserError(f"{run_dir}/summary.json has schema version {version}, newer than this reasoneval "
                            f"reads ({SCHEMA_VERSION}): upgrade reasoneval")
        cfg = config or RunConfig.from_json_dict(d.get("config") or {})
        tasks = {t: TaskMetrics.from_json_dict(m) for t, m in (d.get("tasks") or {}).items()}
        n = int(d.get("n") or next((m.num_samples for m in tasks.values()), cfg.n))
        return cls(model=str(d.get("model") or cfg.model), run_id=str(d.get("run_id") or cfg.run_id),
                   run_dir=Path(run_dir), config=cfg, n=n, tasks=tasks,
                   aggregate=TaskMetrics.from_json_dict(d.get("aggregate") or {}),
                   timing=GenerationTiming.from_json_dict(d.get("timing")), complete=bool(d.get("complete")),
                   scorers=dict(d.get("scorers") or {}), adaptive=d.get("adaptive"), schema_version=SCHEMA_VERSION)


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON ({e}); re-create it with `reasoneval report`") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object; re-create it with `reasoneval report`")
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
    write_json_atomic(Path(run_dir) / CONFIG_FILE, config.to_json_dict())


def load_run(run_dir: Path) -> RunResult:
    """The result of a scored run directory, as its summary.json holds it (either schema version)."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    path = run_dir / SUMMARY_FILE
    if not path.exists():
        raise UserError(f"{run_dir} has no summary.json yet: run `reasoneval report {run_dir}` to score it")
    return RunResult.from_json_dict(_read_json(path), run_dir, config)
