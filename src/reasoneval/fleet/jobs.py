"""Jobs files (`reasoneval sweep JOBS.yaml`) and watch settings files: read, checked against the `run`
options' schema (reasoneval.run.options.EvalConfig), turned into Jobs.

    defaults:                  # any `reasoneval run` option (EvalConfig field), plus gpus_per_job / cpus_per_job
      tasks: [aime24, math500]
      n: 16
      engine: vllm
      engine_args: {max_model_len: 32768}
      # battery: lmeval-base             # instead of tasks: each model runs lm-eval's base-model table
    models:
      - /ckpt/step-1000                    # a path or a served name
      - model: /ckpt/step-2000
        name: step-2000                    # the row's name (default: the path's last part)
        n: 32                              # any option, for this job only
        step: 2000                         # training step for --log-to (default: from the name)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reasoneval.errors import UserError

# Job keys that are not EvalConfig fields.
JOB_KEYS = ("name", "gpus_per_job", "cpus_per_job", "step")
# Their old names (read, with a warning): `num_gpus` is also the cluster's count (`sweep --num-gpus`).
_OLD_JOB_KEYS = {"num_gpus": "gpus_per_job", "num_cpus": "cpus_per_job"}
# Options that name files: relative to the jobs (or settings) file.
PATH_OPTIONS = ("output_dir", "data_dir", "data", "prompt_template")
# The EvalConfig fields the first sweep state files fingerprinted, under the names they had then: hashed at any
# value, so a finished job of such a state is not run again. Every other field is hashed only where it differs
# from its default: a new option changes no fingerprint until a job sets it. (A renamed field keeps its old name
# here, and the old name among its flag's aliases.) This list never grows.
_FIRST_FINGERPRINT = frozenset({
    "tasks", "limit", "data_dir", "data", "question_key", "answer_key", "id_key", "split", "model", "engine",
    "base_url", "api", "api_key_env", "engine_args", "n", "seed", "temperature", "top_p", "top_k", "min_p",
    "max_tokens", "stop", "extra_body", "system_prompt", "prompt_template", "prompt_style", "num_fewshot",
    "style_stop", "greedy", "lmeval_metrics", "target_se", "max_n", "budget_samples", "concurrency", "schedule",
    "timeout", "max_retries", "retry_backoff", "output_dir", "grading_workers", "grading_timeout", "progress",
    "print_table"})
# Where results are logged is not what the job computes.
_NOT_FINGERPRINTED = frozenset({"log_to", "log_args"})


@dataclass(frozen=True)
class Job:
    name: str
    config: Any  # run.options.EvalConfig (imported lazily: the CLI stays light)
    # What Ray reserves for the job's generation (the cluster's own count is `sweep --num-gpus`).
    gpus_per_job: float = 1.0
    cpus_per_job: float = 1.0
    # The training step its results are logged at (--log-to): `step:` in the jobs file, else from the
    # checkpoint's name (dashboards.checkpoint_step); None when neither has one.
    step: int | None = None
    # A battery's run (`battery:` in the jobs file): the model entry's job becomes one job per run of the
    # battery, `<name>/<run>`; `checkpoint` is the entry's name (the battery matrix's row), `battery_run` the run.
    battery: str | None = None
    battery_run: str | None = None
    checkpoint: str | None = None

    def fingerprint(self) -> str:
        """Changes when the job's options change (then a finished job runs again, e.g. with a larger n)."""
        from reasoneval.run.flags import field_default, known_keys

        first_name = {new: old for old, new in known_keys(type(self.config)).items() if old in _FIRST_FINGERPRINT}
        d = {}
        for f in dataclasses.fields(self.config):
            value = getattr(self.config, f.name)
            if f.name in _NOT_FINGERPRINTED:
                continue
            if f.name in first_name:
                d[first_name[f.name]] = value
            elif value != field_default(f):
                d[f.name] = value
        d = json.loads(json.dumps(d, default=str))  # as dataclasses.asdict gave it: tuples as lists
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_yaml(path: Path, what: str) -> Any:
    """A YAML file's content; an unreadable or invalid file is one line."""
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise UserError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None


def load_jobs(path: Path, extra_defaults: Mapping[str, Any] | None = None) -> list[Job]:
    """The jobs of a jobs file; an unknown key or bad value is a one-line error naming it."""
    data = load_yaml(path, "jobs file")
    if not isinstance(data, dict) or not isinstance(data.get("models"), list) or not data["models"]:
        raise UserError(f"{path}: a jobs file needs `models:` (a list of model paths or names), optionally "
                        "`defaults:`; see `reasoneval sweep --help`")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise UserError(f"{path}: `defaults:` must be a mapping of options")
    unknown_top = sorted(set(data) - {"defaults", "models"})
    if unknown_top:
        raise UserError(f"{path}: unknown top-level key(s) {', '.join(unknown_top)}; use `defaults:` and `models:`")
    # The defaults checked on their own first, so a typo there is reported as in `defaults:`, not in models[0].
    make_job({"model": "defaults-check"}, over_defaults(defaults, extra_defaults), path.parent, where=f"{path}: defaults")
    jobs = [j for i, entry in enumerate(data["models"])
            for j in battery_jobs(make_job(entry, over_defaults(defaults, extra_defaults), path.parent,
                                           where=f"{path}: models[{i}]"))]
    names = [j.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"{path}: job name(s) {', '.join(dup)} appear twice; give each a distinct `name:`")
    return jobs


def battery_jobs(job: Job) -> list[Job]:
    """A job with `battery:` as one job per run of the battery (reasoneval.run.battery), named `<name>/<run>`;
    any other job as it is."""
    if not job.config.battery:
        return [job]
    from reasoneval.analysis.battery import get_battery
    from reasoneval.run.battery import battery_configs

    battery = get_battery(job.config.battery)
    return [dataclasses.replace(job, name=f"{job.name}/{run.name}", config=cfg, battery=battery.name,
                                battery_run=run.name, checkpoint=job.name)
            for run, cfg in battery_configs(job.config, battery)]


def load_settings(path: Path) -> dict[str, Any]:
    """`watch --settings FILE`: `reasoneval run` options (or a jobs file's `defaults:`), checked now, before any
    checkpoint appears; paths relative to the file."""
    data = load_yaml(path, "settings file") or {}
    if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
        data = data["defaults"]
    if not isinstance(data, dict):
        raise UserError(f"{path}: the settings are a mapping of `reasoneval run` options (tasks, n, engine, ...)")
    from reasoneval.run.options import OUTPUT_DIR

    data = _absolute_paths(data, path.parent)
    data.setdefault("output_dir", str(path.parent / OUTPUT_DIR))
    make_job({"model": "settings-check"}, data, path.parent, where=str(path))
    return data


def over_defaults(defaults: Mapping[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """`extra` (command-line options) over a jobs or settings file's defaults; the dashboards' settings
    (`log_args`) merge key by key, so `--tensorboard-dir` keeps the file's MLflow tracking URI."""
    out = {**defaults, **(extra or {})}
    if isinstance(defaults.get("log_args"), Mapping) and isinstance((extra or {}).get("log_args"), Mapping):
        out["log_args"] = {**defaults["log_args"], **(extra or {})["log_args"]}
    return out


def _absolute_paths(options: Mapping[str, Any], base: Path) -> dict[str, Any]:
    out = dict(options)
    for key in PATH_OPTIONS:
        if out.get(key) is not None and not Path(str(out[key])).is_absolute():
            out[key] = str(base / str(out[key]))
    return out


def make_job(entry: Any, defaults: Mapping[str, Any], base: Path, *, where: str) -> Job:
    from reasoneval.engines import ENGINES, options_class
    from reasoneval.run.flags import check_values, rename_old_keys
    from reasoneval.run.options import GREEDY, OUTPUT_DIR, EvalConfig, default_engine

    if isinstance(entry, str):
        entry = {"model": entry}
    if not isinstance(entry, dict) or not entry.get("model"):
        raise UserError(f"{where}: each model is a path/name or a mapping with `model:`")
    merged = {str(k).replace("-", "_"): v for k, v in {**defaults, **entry}.items()}
    fields = {f.name for f in dataclasses.fields(EvalConfig)}
    # The engine's own options (model_path, replicas, ...) may be given at the top level, as on the
    # command line (--model-path); they go into engine_args, where a job's own engine_args win.
    engine = str(merged.get("engine") or default_engine(merged.get("model"), merged.get("base_url")))
    if engine in ENGINES:
        own = {f.name for f in dataclasses.fields(options_class(engine))}
        moved = {k: merged.pop(k) for k in sorted(set(merged) & own - fields)}
        if moved:
            merged["engine_args"] = {**moved, **dict(merged.get("engine_args") or {})}
    merged = rename_old_keys(EvalConfig, merged, where, extra=JOB_KEYS, old_extra=_OLD_JOB_KEYS,
                             hint=", and the engine's own options (`reasoneval engines`)")
    engine_args = dict(merged.get("engine_args") or {})
    if engine_args.get("model_path") and not Path(str(engine_args["model_path"])).is_absolute():
        engine_args["model_path"] = str(base / str(engine_args["model_path"]))
        merged["engine_args"] = engine_args
    options = {k: v for k, v in merged.items() if k in fields}
    if isinstance(options.get("tasks"), str):
        options["tasks"] = [t.strip() for t in options["tasks"].split(",") if t.strip()]
    check_values(EvalConfig, options, where)
    options = _absolute_paths(options, base)
    options.setdefault("output_dir", str(base / OUTPUT_DIR))
    options.update(progress=False, print_table=False)
    # The entry's keys, and the defaults' where the entry does not choose the sampling itself (a job with its own
    # target_se overrides the defaults' n, and is no contradiction).
    mode = {*GREEDY, "greedy", "target_se"}
    own_mode = bool(mode & {str(k).replace("-", "_") for k in entry})
    given = {str(k).replace("-", "_") for k in entry} | {str(k).replace("-", "_") for k in defaults
                                                         if not (own_mode and str(k).replace("-", "_") in mode)}
    try:
        cfg = EvalConfig(**options)
        cfg.validate()
    except TypeError as e:
        raise UserError(f"{where}: {e}") from None
    try:
        cfg.check_given(given & fields)
    except UserError as e:
        raise UserError(f"{where}: {e}") from None
    name = str(merged.get("name") or Path(str(cfg.model)).name or cfg.model)
    try:
        gpus, cpus = float(merged.get("gpus_per_job", 1)), float(merged.get("cpus_per_job", 1))
    except (TypeError, ValueError):
        raise UserError(f"{where}: gpus_per_job and cpus_per_job must be numbers") from None
    from reasoneval.report.dashboards import checkpoint_step

    try:
        step = int(merged["step"]) if merged.get("step") is not None else (
            checkpoint_step(name) if checkpoint_step(name) is not None else checkpoint_step(str(cfg.model)))
    except (TypeError, ValueError):
        raise UserError(f"{where}: step must be an integer (the training step), got {merged.get('step')!r}") from None
    return Job(name=name, config=cfg, gpus_per_job=gpus, cpus_per_job=cpus, step=step)


__all__ = ["JOB_KEYS", "Job", "battery_jobs", "load_jobs", "load_settings", "load_yaml", "make_job", "over_defaults"]
