"""A run's metrics on the training run's dashboard: `--log-to tensorboard|mlflow|wandb` (docs/reporting.md).

A renderer of the pipeline's result: after a run is scored, each task's figures (`result_metrics`:
pass@1 ± SE, pass@k, maj@k, lm-eval's columns under lm-eval's names, the subject/level table, lengths,
truncation) go to every backend asked for, once, at the checkpoint's training step for `sweep` and
`watch` (`checkpoint_step`). One module per backend, each registered here with the library it needs,
imported only when that backend is asked for. A missing library is a one-line error before any request
is sent (`check_backends`); a backend that fails later (bad URI, network, disk) warns once and is left
out: the samples and the run's results never depend on it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from reasoneval.errors import UserError
from reasoneval.records import sampling_options_set
from reasoneval.registry import Registry

log = logging.getLogger("reasoneval")


class Session(Protocol):
    """One open dashboard run: figures go in at a step (None: the backend's own counter), the run's settings as
    the backend's run-level record (MLflow params, W&B config, TensorBoard hparams), then close."""

    def log(self, metrics: Mapping[str, float], step: int | None, info: Mapping[str, str]) -> None: ...

    def log_params(self, params: Mapping[str, str | float | int], step: int | None) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Backend:
    library: str  # the module the backend imports (checked up front)
    extra: str  # pip extra that installs it
    module: str  # reasoneval module with open_session(args, run_name, default_dir) -> Session
    fix: str  # what to check when it fails


DASHBOARDS: Registry[Backend] = Registry("dashboard")
DASHBOARDS.add("tensorboard", Backend("tensorboard", "tensorboard", "tensorboard_log",
                                      "check that --tensorboard-dir is writable"))
DASHBOARDS.add("mlflow", Backend("mlflow", "mlflow", "mlflow_log",
                                 "check --mlflow-tracking-uri (or MLFLOW_TRACKING_URI) and that the server answers"))
DASHBOARDS.add("wandb", Backend("wandb", "wandb", "wandb_log",
                                "check `wandb login` or WANDB_API_KEY, or set WANDB_MODE=offline and `wandb sync` later"))

# log_args keys (EvalConfig.log_args, jobs files' `log_args:`) -> the flag and what it sets.
LOG_ARGS = {
    "run_name": ("--log-run-name", "the dashboard run's name (W&B, MLflow; TensorBoard: a sub-folder) "
                 "(default: model and run id for `run`, the jobs file or watched folder for sweep/watch)"),
    "tensorboard_dir": ("--tensorboard-dir", "TensorBoard log dir (default OUTPUT_DIR/tensorboard)"),
    "mlflow_tracking_uri": ("--mlflow-tracking-uri", "MLflow tracking URI, e.g. http://host:5000 or "
                            "sqlite:///mlflow.db (default $MLFLOW_TRACKING_URI, else MLflow's default)"),
    "mlflow_experiment": ("--mlflow-experiment", "MLflow experiment (default $MLFLOW_EXPERIMENT_NAME, else reasoneval)"),
    "wandb_project": ("--wandb-project", "W&B project (default $WANDB_PROJECT, else reasoneval)"),
    "wandb_entity": ("--wandb-entity", "W&B entity (default $WANDB_ENTITY / your default entity); "
                     "WANDB_MODE=offline and WANDB_DIR work as with any W&B run"),
    "wandb_group": ("--wandb-group", "W&B group (e.g. the training run's name)"),
}

# lm-eval's (metric, filter) for reasoneval's extra metric names, so the dashboard and the table carry the
# names an lm-eval baseline has (its W&B logger drops a ",none" filter: `remove_none_pattern`).
LMEVAL_NAMES = {
    "strict-match": ("exact_match", "strict-match"), "flexible-extract": ("exact_match", "flexible-extract"),
    "prompt_strict": ("prompt_level_strict_acc", "none"), "prompt_loose": ("prompt_level_loose_acc", "none"),
    "inst_strict": ("inst_level_strict_acc", "none"), "inst_loose": ("inst_level_loose_acc", "none"),
}


def lmeval_name(extra: str, stderr: bool = False) -> str:
    """`exact_match,strict-match` for "strict-match" (`exact_match_stderr,strict-match` with stderr),
    `exact_match` for "exact_match"."""
    metric, filt = LMEVAL_NAMES.get(extra, (extra, "none"))
    metric += "_stderr" if stderr else ""
    return metric if filt == "none" else f"{metric},{filt}"


def backend_names(values: Sequence[str] | str | None) -> list[str]:
    """The backends of `--log-to` (repeated or comma-separated), each known."""
    items = [values] if isinstance(values, str) else list(values or [])
    names = list(dict.fromkeys(x.strip() for v in items for x in str(v).split(",") if x.strip()))
    for name in names:
        DASHBOARDS.get(name)  # one-line error naming the known ones
    return names


def check_backends(names: Sequence[str] | str | None, args: Mapping[str, Any] | None = None) -> None:
    """Before any request is sent: every backend known, its library installed, its settings known."""
    unknown = sorted(set(args or {}) - set(LOG_ARGS))
    if unknown:
        raise UserError(f"unknown log_args key(s) {', '.join(unknown)}; known: {', '.join(LOG_ARGS)}")
    for name in backend_names(names):
        b = DASHBOARDS.get(name)
        try:
            found = importlib.util.find_spec(b.library) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise UserError(f"--log-to {name} needs the {b.library} package: pip install 'reasoneval[{b.extra}]' "
                            f"(or pip install {b.library})")


_STEP = re.compile(r"(?:checkpoint|ckpt|global_step|step|iter|iteration)[-_]?(\d+)$", re.IGNORECASE)


def checkpoint_step(name: str | None) -> int | None:
    """The training step in a checkpoint folder's name: checkpoint-1200, step_1200, global_step1200,
    step-1200, iter_0001200 (the last part of a path); None when the name has none."""
    if not name:
        return None
    m = _STEP.search(Path(str(name).rstrip("/")).name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Checkpoint:
    """A model as a point of a training run: the run's folder (the path before the checkpoint's own name, ""
    when there is none), the checkpoint's name, and the training step in it (None when the name has none).
    `/ckpt/run7/checkpoint-100` is ("/ckpt/run7", "checkpoint-100", 100); `run8/checkpoint-100` is another."""

    training_run: str
    name: str
    step: int | None


def checkpoint_of(model: str) -> Checkpoint:
    path = str(model).rstrip("/")
    parent, _, name = path.rpartition("/")
    return Checkpoint(parent, name or path, checkpoint_step(path))


def model_checkpoint(config: Any) -> Checkpoint:
    """The checkpoint a run (a results.schema.RunConfig) evaluated: the first of the checkpoint the engine
    loaded (--model-path), the model the server served (--model, or the server's only model when --model was
    left out) and the server's own identity of it (vLLM's root: the checkpoint path) that names a training
    step; else the model as served."""
    candidates = [str(c) for c in ((config.engine_config or {}).get("model_path"), config.settings.model,
                                   config.settings.model_identity) if c]
    for c in candidates:
        if checkpoint_step(c) is not None:
            return checkpoint_of(c)
    return checkpoint_of(candidates[0] if candidates else "")


def _param(value: Any) -> str | float | int:
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else json.dumps(value)


def sampling_settings(sampling: Any) -> dict[str, str | float | int]:
    """Every sampling option the run set, read from SamplingParams' fields (so a new option is logged with no edit
    here): unset ones (None, empty) are left out; --extra-body's keys as `extra_body/<key>`; a list as JSON."""
    out: dict[str, str | float | int] = {}
    for name, value in sampling_options_set(sampling).items():
        if isinstance(value, Mapping):
            out.update({f"{name}/{k}": _param(v) for k, v in value.items()})
        else:
            out[name] = _param(list(value) if isinstance(value, tuple) else value)
    return out


def run_settings(result: Any) -> dict[str, str | float | int]:
    """What a curve's points were measured with, for the dashboards' run-level record: K (or the adaptive target),
    sampling, seed, prompt style and shots, engine, API, each task's version, reasoneval's version."""
    cfg = result.config
    s = cfg.settings
    out: dict[str, str | float | int] = {"model": str(result.model)}
    if result.adaptive:
        a = cfg.adaptive or {}
        out.update(target_se=float(a.get("target_se") or 0), max_n=int(a.get("max_n") or 0))
    else:
        out["n"] = int(result.n)
        for task, n in (cfg.task_n or {}).items():  # a headline whose tasks have different K
            out[f"n/{task}"] = int(n)
    if s.sampling is not None:
        out.update(sampling_settings(s.sampling))
    if s.seed is not None:
        out["seed"] = int(s.seed)
    style = s.prompt_style or {}
    out["prompt_style"] = str(style.get("style") or "default")
    if style.get("num_fewshot") is not None:
        out["num_fewshot"] = int(style["num_fewshot"])
    if s.api:
        out["api"] = str(s.api)
    out["engine"] = str(cfg.engine)
    for task in result.tasks:
        out[f"task_version/{task}"] = str(cfg.task_version(task) or "1")
    out["reasoneval_version"] = str((cfg.versions or {}).get("reasoneval") or "")
    return out


def task_metrics(task: str, m: Any) -> dict[str, float]:
    """One task's figures (a metrics.TaskMetrics), as fractions, named `<task>/<metric>`."""
    out: dict[str, float] = {}

    def put(name: str, value: Any) -> None:
        if value is not None:
            out[f"{task}/{name}"] = float(value)

    put("pass@1", m.mean)
    put("pass@1_stderr", m.stderr)
    for k, v in sorted(m.pass_at_k.items()):
        if k > 1:
            put(f"pass@{k}", v)
    for k, v in sorted(m.maj_at_k.items()):
        if k > 1:
            put(f"maj@{k}", v)
    for name, g in m.extra.items():
        put(lmeval_name(name), g.mean)
        put(lmeval_name(name, stderr=True), g.stderr)
    for field, groups in m.breakdown.items():
        for value, g in groups.items():
            put(f"{field}/{value}", g.mean)
    put("tokens_mean", m.tokens.mean)
    put("tokens_median", m.tokens.median)
    put("tokens_p90", m.tokens.p90)
    put("tokens_max", m.tokens.max)
    put("truncation_rate", m.truncation_rate)
    put("no_answer_rate", m.no_answer_rate)
    put("num_problems", m.num_problems)
    put("num_missing", m.num_missing)
    return out


def result_metrics(result: Any) -> dict[str, float]:
    """Every task's figures of a RunResult, and `all/...` over the tasks when there are several."""
    out: dict[str, float] = {}
    for task, m in result.tasks.items():
        out.update(task_metrics(task, m))
    if len(result.tasks) > 1:
        agg = result.aggregate
        for name, value in (("pass@1", agg.mean), ("pass@1_stderr", agg.stderr), ("macro_mean", agg.macro_mean)):
            if value is not None:
                out[f"all/{name}"] = float(value)
    return out


class Dashboards:
    """The dashboard runs a process logs to, opened on first use (one per backend and settings: a sweep's
    checkpoints land in one run, at their steps) and closed by `close()`. Never raises: a backend that
    fails warns once and is skipped from then on."""

    def __init__(self, run_name: str | None = None, by_training_run: bool = False) -> None:
        """run_name: the dashboard run every result goes to (a sweep's jobs file, a watched folder); default each
        result's model and run id. by_training_run: a sweep over checkpoints of several training runs gives each
        training run its own dashboard run, `<run_name>-<training run>` (run7/checkpoint-100 and
        run8/checkpoint-100 are two points at step 100, never two values of one curve)."""
        self.run_name = run_name
        self.by_training_run = by_training_run
        self._sessions: dict[tuple[Any, ...], Session] = {}
        self._params: dict[tuple[Any, ...], dict[str, str | float | int]] = {}  # what each session recorded
        self._failed: set[str] = set()

    def log(self, cfg: Any, result: Any, step: int | None = None, metrics: Mapping[str, float] | None = None,
            settings: Mapping[str, str | float | int] | None = None) -> None:
        """Log `result` (a scored RunResult) to every backend `cfg.log_to` names (an EvalConfig); `metrics`: these
        figures instead of the result's own (a battery's rows, `battery_metrics`), with `settings` their run-level
        record instead of the result's (`rows_settings`: each row's own)."""
        names = backend_names(cfg.log_to)
        if not names:
            return
        metrics = result_metrics(result) if metrics is None else metrics
        info = {"model": str(result.model), "run_id": str(result.run_id), "run_dir": str(result.run_dir),
                "complete": str(bool(result.complete)).lower()}
        settings = run_settings(result) if settings is None else settings
        args = dict(cfg.log_args or {})
        for name in names:
            if name in self._failed:
                continue
            backend = DASHBOARDS.get(name)
            run_name = str(args.get("run_name") or self.run_name or f"{result.model}-{result.run_id}")
            training_run = model_checkpoint(result.config).training_run if self.by_training_run else ""
            if training_run:
                run_name = f"{run_name}-{Path(training_run).name or training_run}"
            key = (name, run_name, str(cfg.output_dir), tuple(sorted((k, str(v)) for k, v in args.items())))
            try:
                session = self._sessions.get(key)
                if session is None:
                    module = importlib.import_module(f"{__name__}.{backend.module}")
                    # The default name is the run directory's own (model, run id): one dashboard run for it, found
                    # again and updated in place by every command that logs its headline (issue 52.3).
                    own = not (args.get("run_name") or self.run_name)
                    session = module.open_session({**args, "one_per_run_dir": own}, run_name, Path(cfg.output_dir))
                    self._sessions[key] = session
                session.log(metrics, step, info)
                session.log_params(self._new_params(key, settings, step), step)
            except Exception as e:  # any failure of the backend: the results are already on disk
                self._failed.add(name)
                self._sessions.pop(key, None)
                cause = " ".join(f"{type(e).__name__}: {e}".split())[:300]
                log.warning("--log-to %s failed, nothing more goes there this run (%s); %s. The results are in %s: "
                            "`reasoneval report %s --log-to %s` logs them again", name, cause, backend.fix,
                            result.run_dir, result.run_dir, name)

    def _new_params(self, key: tuple[Any, ...], settings: Mapping[str, str | float | int], step: int | None
                    ) -> dict[str, str | float | int]:
        """The settings this dashboard run has not recorded yet. A run-level record holds one value per name
        (MLflow refuses to change a param): a later checkpoint of a sweep whose setting differs (a job with
        another K) records it as `<name>.step_<step>`."""
        done = self._params.setdefault(key, {})
        out: dict[str, str | float | int] = {}
        for name, value in settings.items():
            if name not in done:
                out[name] = done[name] = value
            elif done[name] != value:
                alt = f"{name}.step_{step if step is not None else 'none'}"
                if done.get(alt) != value:
                    out[alt] = done[alt] = value
        return out

    def close(self) -> None:
        for (name, *_), session in list(self._sessions.items()):
            try:
                session.close()
            except Exception as e:
                log.warning("--log-to %s: closing failed (%s: %s)", name, type(e).__name__, " ".join(str(e).split())[:200])
        self._sessions.clear()

    def __enter__(self) -> Dashboards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def log_once(cfg: Any, result: Any, step: int | None = None, metrics: Mapping[str, float] | None = None,
             settings: Mapping[str, str | float | int] | None = None) -> None:
    """Log one result to cfg.log_to and close the dashboard runs (`reasoneval run`, `report --log-to`)."""
    with Dashboards() as dashboards:
        dashboards.log(cfg, result, step, metrics, settings)


# Settings every row of a battery shares (one checkpoint, one server): recorded once under their own names.
_SHARED = ("model", "engine", "api", "reasoneval_version")


def rows_settings(rows: Mapping[str, Any]) -> dict[str, str | float | int]:
    """The run-level record of several results logged as one (a battery's rows, `<battery>/<row>` -> the row's
    RunResult): the settings all share (`_SHARED`) under their own names, every other one per row as
    `<row>/<setting>`, so the 8-shot row records its own num_fewshot and max_tokens, not the first row's."""
    out: dict[str, str | float | int] = {}
    for row, result in rows.items():
        for name, value in run_settings(result).items():
            if name in _SHARED:
                out.setdefault(name, value)
            else:
                out[f"{row}/{name}"] = value
    return out


def add_dashboard_args(p: Any) -> None:
    """--log-to and the backends' settings (an argparse parser or group)."""
    g = p.add_argument_group("dashboards (docs/reporting.md)")
    g.add_argument("--log-to", action="append", default=[], metavar="NAME",
                   help=f"log each task's metrics to {', '.join(DASHBOARDS.names())} (repeatable or comma-separated)")
    for key, (flag, help_) in LOG_ARGS.items():
        g.add_argument(flag, dest=key, metavar="VALUE", help=help_)


def dashboard_options(a: Any) -> tuple[list[str], dict[str, Any]]:
    """(log_to, log_args) from parsed flags; only the settings that were given."""
    return backend_names(a.log_to), {k: getattr(a, k) for k in LOG_ARGS if getattr(a, k, None) is not None}


__all__ = ["DASHBOARDS", "LOG_ARGS", "Checkpoint", "Dashboards", "add_dashboard_args", "check_backends", "checkpoint_of",
           "checkpoint_step", "dashboard_options", "lmeval_name", "log_once", "model_checkpoint", "result_metrics",
           "rows_settings", "run_settings", "task_metrics"]
