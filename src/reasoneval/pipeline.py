"""The pipeline, end to end: tasks -> requests -> engine -> store -> grading -> metrics -> report.

`evaluate()` is the Python API; the CLI's `run` builds an EvalConfig and calls it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console

from . import __version__
from .config import RunSettings, run_dir_for, sample_seed
from .engines import EngineOptions, create_engine
from .errors import RunIncomplete, UserError
from .grading import GRADER_VERSION, GradingPool
from .progress import ProgressReporter, add_run_log
from .prompts import PromptConfig, build_messages, build_prompt
from .report import Summary, build_summary, load_config, render_table, select_problems, write_json_atomic
from .runner import GenerationStats, RetryPolicy, generate
from .store import SampleStore, add_problems, read_problems
from .tasks import dataset_hash, load_task, load_user_data, resolve_task_names
from .types import Problem, Request, SamplingParams

log = logging.getLogger("reasoneval")

_DEPENDENCIES = ("aiohttp", "math-verify", "latex2sympy2_extended", "sympy", "numpy", "scipy", "pyarrow",
                 "datasets", "llama_cpp_python", "vllm")


@dataclass
class EvalConfig:
    """Every option of `reasoneval run` (the CLI flag is the field name with dashes)."""

    tasks: Sequence[str] = ()
    model: str | None = None
    engine: str | None = None  # openai | local | launch (default: local with no --model/--base-url)
    base_url: str | None = None
    api: str = "chat"
    api_key_env: str = "OPENAI_API_KEY"
    n: int = 16
    seed: int = 42
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int | None = None
    min_p: float | None = None
    max_tokens: int = 32768
    stop: Sequence[str] = ()
    extra_body: dict[str, Any] = field(default_factory=dict)
    system_prompt: str | None = None
    prompt_template: str | None = None  # a file path
    concurrency: int = 64
    timeout: float = 3600.0
    max_retries: int = 6
    retry_backoff: float = 1.0
    limit: int | None = None
    data_dir: str | None = None
    data: str | None = None
    question_key: str = "problem"
    answer_key: str = "answer"
    id_key: str | None = None
    split: str | None = None
    output_dir: str = "results"
    grading_workers: int | None = None
    grading_timeout: float = 5.0
    # engine-specific
    model_path: str | None = None
    replicas: int = 1
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int | None = None
    dtype: str | None = None
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool = False
    server: str = "vllm"
    port: int | None = None
    server_args: Sequence[str] = ()
    progress: bool | None = None  # None: a live bar on a terminal, log lines elsewhere
    print_table: bool = True

    def validate(self) -> None:
        if self.n < 1:
            raise UserError(f"--n must be at least 1 (got {self.n})")
        if self.concurrency < 1:
            raise UserError(f"--concurrency must be at least 1 (got {self.concurrency})")
        if self.limit is not None and self.limit < 1:
            raise UserError(f"--limit must be at least 1 (got {self.limit})")
        if self.max_tokens < 1:
            raise UserError(f"--max-tokens must be at least 1 (got {self.max_tokens})")
        if self.max_retries < 0:
            raise UserError(f"--max-retries must be 0 or more (got {self.max_retries})")
        if self.timeout <= 0:
            raise UserError(f"--timeout must be positive (got {self.timeout})")
        if not 0 <= self.temperature:
            raise UserError(f"--temperature must be >= 0 (got {self.temperature})")
        if not 0 < self.top_p <= 1:
            raise UserError(f"--top-p must be in (0, 1] (got {self.top_p})")
        if self.api not in ("chat", "completions"):
            raise UserError(f"--api must be 'chat' or 'completions' (got {self.api!r})")

    def engine_kind(self) -> str:
        if self.engine:
            return self.engine
        return "openai" if (self.model or self.base_url) else "local"


def _versions() -> dict[str, str]:
    out = {"reasoneval": __version__, "python": platform.python_version(), "grader": GRADER_VERSION}
    for name in _DEPENDENCIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _read_template(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read --prompt-template {path}: {e.strerror}") from None


def load_problems(cfg: EvalConfig) -> list[tuple[str, list[tuple[Problem, float | None]]]]:
    """(task name, [(problem, rel_tol)]) for every task the config names, in order."""
    data_dir = Path(cfg.data_dir) if cfg.data_dir else (
        Path(os.environ["REASONEVAL_DATA_DIR"]) if os.environ.get("REASONEVAL_DATA_DIR") else None)
    out = []
    if cfg.data:
        spec, problems = load_user_data(cfg.data, question_key=cfg.question_key, answer_key=cfg.answer_key,
                                        id_key=cfg.id_key, split=cfg.split, limit=cfg.limit)
        out.append((spec.name, [(p, spec.rel_tol) for p in problems]))
    names = list(cfg.tasks)
    if not names and not cfg.data:
        if cfg.engine_kind() == "local":
            names = ["arith"]
        else:
            raise UserError("no tasks given: pass --tasks (e.g. --tasks math or --tasks aime24,math500) "
                            "or --data FILE; `reasoneval tasks` lists them")
    for name in resolve_task_names(names) if names else []:
        spec, problems = load_task(name, data_dir=data_dir, limit=cfg.limit)
        out.append((spec.name, [(p, spec.rel_tol) for p in problems]))
    for name, problems in out:
        if not problems:
            raise UserError(f"task {name} has no problems")
    return out


def _engine_options(cfg: EvalConfig, api_key: str | None, log_dir: Path) -> EngineOptions:
    return EngineOptions(
        model=cfg.model, base_url=cfg.base_url, api=cfg.api, api_key=api_key, api_key_env=cfg.api_key_env,
        timeout_s=cfg.timeout, concurrency=cfg.concurrency, model_path=cfg.model_path, replicas=cfg.replicas,
        tensor_parallel_size=cfg.tensor_parallel_size, data_parallel_size=cfg.data_parallel_size,
        max_model_len=cfg.max_model_len, dtype=cfg.dtype, gpu_memory_utilization=cfg.gpu_memory_utilization,
        enable_prefix_caching=cfg.enable_prefix_caching, server=cfg.server, port=cfg.port,
        server_args=tuple(cfg.server_args), log_dir=str(log_dir))


def _build_requests(tasks: Sequence[tuple[str, list[tuple[Problem, float | None]]]], cfg: EvalConfig,
                    sampling: SamplingParams, prompt_cfg: PromptConfig, done: set[tuple[str, str, int]]
                    ) -> list[Request]:
    """The missing samples, ordered sample-index-major so that an interrupted run has spread its
    samples over all problems (every problem gets sample 0 before any gets sample 1)."""
    per_problem = []
    for task, problems in tasks:
        for p, _ in problems:
            missing = [j for j in range(cfg.n) if (task, p.key, j) not in done]
            if missing:
                per_problem.append((p, missing))
    requests = []
    for j in range(cfg.n):
        for p, missing in per_problem:
            if j in missing:
                messages = build_messages(p, prompt_cfg) if cfg.api == "chat" else None
                prompt = build_prompt(p, prompt_cfg) if cfg.api == "completions" else None
                requests.append(Request(task=p.task, problem_key=p.key, problem_id=p.id, index=j,
                                        seed=sample_seed(cfg.seed, p.task, p.key, j), params=sampling,
                                        messages=messages, prompt=prompt))
    return requests


async def _generate(cfg: EvalConfig, tasks: list[tuple[str, list[tuple[Problem, float | None]]]],
                    console: Console) -> tuple[Path, dict[str, Any], GenerationStats]:
    api_key = os.environ.get(cfg.api_key_env) or None
    output_dir = Path(cfg.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    kind = cfg.engine_kind()
    engine = create_engine(kind, _engine_options(cfg, api_key, output_dir))
    info = await engine.start()
    store: SampleStore | None = None
    handler = None
    try:
        template = _read_template(cfg.prompt_template)
        sampling = SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k, min_p=cfg.min_p,
                                  max_tokens=cfg.max_tokens, stop=tuple(cfg.stop), extra_body=dict(cfg.extra_body))
        settings = RunSettings(model=info.model, model_identity=info.model_identity, api=cfg.api,
                               system_prompt=cfg.system_prompt, prompt_template=template, sampling=sampling,
                               seed=cfg.seed)
        run_dir = run_dir_for(output_dir, settings)
        store = SampleStore(run_dir).open()
        handler = add_run_log(run_dir)
        if hasattr(engine, "set_run_dir"):
            engine.set_run_dir(run_dir)
        add_problems(run_dir, [pt for _, problems in tasks for pt in problems])
        status = store.scan()
        prompt_cfg = PromptConfig(system_prompt=cfg.system_prompt, template=template)
        requests = _build_requests(tasks, cfg, sampling, prompt_cfg, status.ok)
        total = sum(len(ps) for _, ps in tasks) * cfg.n
        config = {
            "run_id": settings.run_id,
            "settings": settings.to_dict(),
            "engine": kind,
            "base_url": cfg.base_url if kind == "openai" else None,
            "api_key_env": cfg.api_key_env,
            "n": cfg.n,
            "limit": cfg.limit,
            "tasks": [t for t, _ in tasks],
            "problem_keys": {t: [p.key for p, _ in ps] for t, ps in tasks},
            "datasets": {t: {"num_problems": len(ps), "hash": dataset_hash([p for p, _ in ps])} for t, ps in tasks},
            "concurrency": cfg.concurrency,
            "max_model_len": info.max_model_len,
            "versions": _versions(),
        }
        old = _read_json(run_dir / "config.json")
        config["created"] = old.get("created") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
        config["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_json_atomic(run_dir / "config.json", config)
        log.info("run %s: %s, %d tasks, %d samples wanted, %d already in the store, %d to generate",
                 run_dir, info.model, len(tasks), total, total - len(requests), len(requests))
        concurrency = min(cfg.concurrency, info.max_concurrency or cfg.concurrency)
        policy = RetryPolicy(max_retries=cfg.max_retries, backoff_base_s=cfg.retry_backoff)
        stats = GenerationStats()
        with ProgressReporter(len(requests), enabled=cfg.progress, console=console) as progress:
            await generate(engine, requests, store, concurrency=concurrency, policy=policy,
                           max_model_len=info.max_model_len, stats=stats, on_progress=progress.update)
        return run_dir, config, stats
    finally:
        await engine.close()
        if store is not None:
            store.close()
        if handler is not None:
            logging.getLogger("reasoneval").removeHandler(handler)
            handler.close()


def _disk_error(e: OSError, where: Path | str) -> UserError:
    """A write that failed (disk full, read-only, quota) as a one-line error; the journal keeps
    every finished sample (the store cuts a partly written line back out)."""
    return UserError(f"cannot write {e.filename or where}: {e.strerror or e}; finished samples are kept. Free "
                     "space (or make it writable) and re-run the same command")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return {}


def _timing(stats: GenerationStats) -> dict[str, Any]:
    wall = stats.wall_s
    return {"wall_s": round(wall, 3), "output_tokens_per_s": round(stats.output_tokens / wall, 3) if wall > 0 else 0.0,
            "requests": stats.requests, "retries": stats.retries, "errors": stats.errors,
            "generated": stats.done, "failed": stats.failed, "output_tokens": stats.output_tokens}


def evaluate(config: EvalConfig | None = None, **options: Any) -> Summary:
    """Run an evaluation and return its summary (the same object summary.json holds).

    Raises UserError for bad input and RunIncomplete (with `.summary`) when samples are missing.
    Example: `evaluate(tasks=["aime24"], model="my-model", base_url="http://localhost:8000/v1", n=16)`.
    """
    cfg = dataclasses.replace(config, **options) if config else EvalConfig(**options)
    cfg.validate()
    console = Console(stderr=True)
    tasks = load_problems(cfg)
    try:
        run_dir, config_dict, stats = asyncio.run(_generate(cfg, tasks, console))
        timing = _timing(stats)
        config_dict["last_generation"] = timing
        write_json_atomic(run_dir / "config.json", config_dict)
    except OSError as e:
        raise _disk_error(e, cfg.output_dir) from None
    summary = report_run(run_dir, n=cfg.n, tasks=[t for t, _ in tasks],
                         keys={t: [p.key for p, _ in ps] for t, ps in tasks}, timing=timing,
                         workers=cfg.grading_workers, grading_timeout=cfg.grading_timeout,
                         print_table=cfg.print_table)
    if not summary.complete:
        raise RunIncomplete(summary)
    return summary


def report_run(run_dir: Path, *, n: int | None = None, tasks: Sequence[str] | None = None,
               keys: dict[str, list[str]] | None = None, timing: dict[str, Any] | None = None,
               workers: int | None = None, grading_timeout: float = 5.0, print_table: bool = True) -> Summary:
    """Grade the store and write summary.json, results.parquet and the table. No request is sent."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    K = n or int(config.get("n") or 1)
    if K < 1:
        raise UserError(f"--n must be at least 1 (got {K})")
    if tasks is None:
        tasks = config.get("tasks")
    if keys is None and tasks == config.get("tasks"):
        keys = config.get("problem_keys")
    all_problems = read_problems(run_dir)
    if tasks is not None:
        unknown = [t for t in tasks if t not in {p.task for p, _ in all_problems}]
        if unknown:
            raise UserError(f"{run_dir} has no samples of task(s) {', '.join(unknown)}; it has: "
                            + ", ".join(sorted({p.task for p, _ in all_problems})))
    problems = select_problems(all_problems, tasks, keys)
    if timing is None:
        timing = config.get("last_generation") or {}
    try:
        with GradingPool(workers=workers, timeout_s=grading_timeout, cache_path=run_dir / "grades.jsonl") as pool:
            summary = build_summary(run_dir, K=K, problems=problems, pool=pool, config=config, timing=timing)
    except OSError as e:
        raise _disk_error(e, run_dir) from None
    if print_table:
        render_table(summary.to_json_dict(), K)
    return summary
