"""The pipeline's stages, wired: load tasks -> plan -> generate (engine -> store) -> score -> result -> renderers.

    evaluate(...)            the Python API (sync); `reasoneval run` builds an EvalConfig and calls it
    await evaluate_async()   the same inside a running event loop (a notebook, a Ray actor, a sweep)
    generate_run(...)        generation only, with an engine the caller started (and owns)
    score_run(run_dir)       score a run directory and write summary.json, results.parquet, the table
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence, cast

from rich.console import Console

from reasoneval.analysis.outcomes import RESULTS_FILE
from reasoneval.atomic import FileSet
from reasoneval.engines import ENGINES, Engine, EngineInfo, capabilities, check_supported, create_engine
from reasoneval.errors import RunIncomplete, UserError
from reasoneval.metrics import aggregate_metrics, breakdown, se_vs_k, task_metrics
from reasoneval.metrics.adaptive_estimates import adaptive_summary, plan_se_of, with_estimates
from reasoneval.metrics.plan_adaptive import PILOT
from reasoneval.prompts import PROMPTS, Exemplar, PromptConfig
from reasoneval.records import Problem
from reasoneval.registry import Registry
from reasoneval.report.html_page import write_run_html
from reasoneval.report.parquet import ResultsWriter
from reasoneval.report.summary_json import write_summary
from reasoneval.report.table import render_table
from reasoneval.results.identity import RunSettings, run_dir_for
from reasoneval.results.schema import (
    CONFIG_FILE,
    SUMMARY_FILE,
    GenerationTiming,
    RunConfig,
    RunResult,
    TaskData,
    load_config,
    load_run,
    write_config,
)
from reasoneval.results.scope import Scope, TaskScope, decide, describe, headline_scope, task_complete, with_scope
from reasoneval.results.store import SampleStore, add_problems, read_problems
from reasoneval.results.stream import ChunkSink, ScoredProblem, score_store
from reasoneval.run.adaptive import (
    DESIGN,
    AdaptiveSampler,
    AdaptiveSettings,
    history_entry,
    history_for,
)
from reasoneval.run.options import EvalConfig, rename_old_keys, takes_options_of
from reasoneval.run.plan import LoadedTask, ProblemRef, Schedule, plan, request_maker
from reasoneval.run.progress import ProgressReporter, run_log
from reasoneval.run.runner import GenerationStats, RetryPolicy, generate
from reasoneval.scoring import SCORERS, ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.base import GRADING_TIMEOUT_S
from reasoneval.scoring.lmeval import hendrycks_reference
from reasoneval.tasks import TASKS, dataset_hash, load_task, load_user_data, resolve_task_names
from reasoneval.version import __version__

log = logging.getLogger("reasoneval")

_DEPENDENCIES = ("aiohttp", "math-verify", "latex2sympy2_extended", "sympy", "numpy", "scipy", "pyarrow",
                 "datasets", "llama_cpp_python", "vllm")
# Metadata fields that get an accuracy breakdown in summary.json where the data has them.
BREAKDOWN_FIELDS = ("subject", "level")
# Response bytes per results.parquet batch (Arrow holds ~3x that while building and compressing it).
PARQUET_BATCH_BYTES = 8 << 20


def versions() -> dict[str, str]:
    from reasoneval.scoring.maths import GRADER_VERSION

    out = {"reasoneval": __version__, "python": platform.python_version(), "grader": GRADER_VERSION}
    for name in _DEPENDENCIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def load_tasks(cfg: EvalConfig) -> list[LoadedTask]:
    """Every task the config names, with its problems, in order."""
    data_dir = Path(cfg.data_dir) if cfg.data_dir else (
        Path(os.environ["REASONEVAL_DATA_DIR"]) if os.environ.get("REASONEVAL_DATA_DIR") else None)
    out = []
    if cfg.data:
        spec, problems = load_user_data(cfg.data, problem_field=cfg.problem_field, answer_field=cfg.answer_field,
                                        id_field=cfg.id_field, split=cfg.split, limit=cfg.limit, scorer=cfg.scorer)
        out.append(LoadedTask(spec, problems))
    names = list(cfg.tasks)
    if not names and not cfg.data:
        if cfg.engine_name() != "local":
            raise UserError("no tasks given: pass --tasks (e.g. --tasks math or --tasks aime24,math500) "
                            "or --data FILE; `reasoneval tasks` lists them")
        names = ["arith"]
    for name in resolve_task_names(names) if names else []:
        spec, problems = load_task(name, data_dir=data_dir, limit=cfg.limit)
        out.append(LoadedTask(spec, problems))
    for t in out:
        if not t.problems:
            raise UserError(f"task {t.name} has no problems")
    prompt = cfg.prompt()
    return [with_fewshot_pool(t, prompt, data_dir) for t in out]


def with_fewshot_pool(task: LoadedTask, prompt: PromptConfig, data_dir: Path | None) -> LoadedTask:
    """The task with the rows its few-shot style draws exemplars from (lm-eval's gsm8k: the GSM8K train
    split; hendrycks_math: the MATH train split, by subject), from the data dir, cache or Hub like any task's
    data; unchanged for fixed-exemplar styles."""
    style = prompt.for_task(task.name, task.spec.prompt, task.spec.fewshot).fewshot_style()
    if style is None or style.pool is None or style.count(prompt.num_fewshot) == 0:
        return task
    _, rows = load_task(style.pool, data_dir=data_dir)
    return dataclasses.replace(task, fewshot_pool=[pool_exemplar(p, style.pool_by) for p in rows])


def pool_exemplar(row: Problem, by: str | None) -> Exemplar:
    """A pool row as an exemplar: a row kept in its source's layout (GSM8K train: question and worked answer,
    verbatim), else the problem and lm-eval's target for MATH (the boxed answer of its solution); `by`: the
    metadata field it is drawn by."""
    if "question" in row.payload:
        return Exemplar(str(row.payload["question"]), str(row.payload["answer"]))
    group = row.metadata.get(by) if by else None
    return Exemplar(row.problem, hendrycks_reference(row), None if group is None else str(group))


def used_plugins(cfg: EvalConfig, tasks: Sequence[LoadedTask]) -> dict[str, str]:
    """Resolve what the run will use (its engine, each task, the scorers its scoring names and the prompt style each
    task is asked with), so that one that breaks its protocol is a one-line error before any generation; returns
    "kind/name" -> "distribution==version" for those that come from other packages (RunConfig.plugins)."""
    prompt = cfg.prompt()
    used: list[tuple[str, Registry[Any], str]] = [("engine", ENGINES, cfg.engine_name())]
    inner = cfg.engine_args.get("inner") if cfg.engine_name() == "ray" else None
    if isinstance(inner, str) and inner in ENGINES:  # the engine the Ray replicas run
        used.append(("engine", ENGINES, inner))
    for t in tasks:
        if t.name in TASKS:
            used.append(("task", TASKS, t.name))
        scoring = task_scoring(t, prompt, cfg.lmeval_metrics)
        used += [("scorer", SCORERS, s.scorer) for s in (scoring, *scoring.extra.values())]
        style = prompt.for_task(t.name, t.spec.prompt, t.spec.fewshot)
        if style.template is None:
            used.append(("prompt", PROMPTS, style.style))
    out = {}
    for kind, registry, name in used:
        registry.get(name)
        origin = registry.provenance(name)
        if origin is not None:
            out[f"{kind}/{name}"] = origin
    return dict(sorted(out.items()))


@contextlib.asynccontextmanager
async def started_engine(cfg: EvalConfig) -> AsyncIterator[tuple[Engine, EngineInfo]]:
    """The configured engine, checked against what the run asks for, started, and closed at the end."""
    name = cfg.engine_name()
    check_supported(name, capabilities(name, cfg.engine_args), cfg.api, cfg.sampling())
    Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
    engine = create_engine(name, cfg.common_options(), cfg.engine_args)
    try:
        info = await engine.start()
        yield engine, info
    finally:
        await engine.close()


def run_settings(cfg: EvalConfig, *, model: str, model_identity: str | None) -> RunSettings:
    """What the run id of `cfg` hashes, with an engine serving `model` (config.json's `settings`)."""
    prompt = cfg.prompt()
    return RunSettings(model=model, model_identity=model_identity, api=cfg.api, system_prompt=cfg.system_prompt,
                       prompt_template=prompt.template, sampling=cfg.sampling(), seed=cfg.seed,
                       prompt_style=prompt.identity())


async def generate_run(cfg: EvalConfig, tasks: Sequence[LoadedTask], engine: Engine, info: EngineInfo,
                       console: Console | None = None, expected: Mapping[ProblemRef, float] | None = None,
                       ) -> tuple[Path, RunConfig, GenerationStats]:
    """Generate every missing sample of `tasks` into the run's store with a started engine.

    expected: output lengths per problem known from elsewhere (an earlier checkpoint of a sweep), for
    the longest-first schedule; the run's own finished samples take precedence.

    Holds the run's store lock and writes its run.log while it runs; returns the run directory,
    its config and the counters. Raises (after journaling every finished sample) when the engine
    cannot go on.
    """
    prompt = cfg.prompt()
    sampling = cfg.sampling()
    settings = run_settings(cfg, model=info.model, model_identity=info.model_identity)
    run_dir = run_dir_for(Path(cfg.output_dir), settings)
    # A run's config.json changes only when a command finishes generating (a failure leaves it as it was); a new run
    # writes it at once, so a run that never finishes is still a run directory `report` can read.
    new_run = not (run_dir / CONFIG_FILE).exists()
    with SampleStore(run_dir) as store, run_log(run_dir):
        engine.attach_run(run_dir)
        add_problems(run_dir, [p for t in tasks for p in t.problems])
        status = store.scan()
        adaptive = cfg.target_se is not None
        the_plan = plan(tasks, n=0 if adaptive else cfg.n, seed=cfg.seed, sampling=sampling, api=cfg.api,
                        prompt=prompt, done=status.ok, expected={**(expected or {}), **status.lengths})
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        engine_name = cfg.engine_name()
        history = None
        if adaptive:
            assert cfg.target_se is not None
            entry = history_entry(cfg.target_se, cfg.max_n, cfg.budget_samples, {t.name: len(t.problems) for t in tasks})
            history = history_for(_previous_config(run_dir), entry, run_dir)
        config = RunConfig(
            run_id=settings.run_id, settings=settings, engine=engine_name,
            n=max([cfg.samples_per_problem()] + [2 * int(e.get("max_n") or e.get("n") or 0) for e in history or []]),
            tasks=[t.name for t in tasks], problem_keys={t.name: [p.key for p in t.problems] for t in tasks},
            scoring={t.name: task_scoring(t, prompt, cfg.lmeval_metrics) for t in tasks}, engine_config=engine.describe(),
            base_url=cfg.base_url if engine_name == "openai" else None, api_key_env=cfg.api_key_env, limit=cfg.limit,
            datasets={t.name: TaskData(len(t.problems), dataset_hash(list(t.problems)), t.spec.source, t.spec.version)
                      for t in tasks},
            concurrency=cfg.concurrency, max_model_len=info.max_model_len, versions=versions(),
            created=now, updated=now, plugins=used_plugins(cfg, tasks),
            adaptive={"design": DESIGN, "target_se": cfg.target_se, "max_n": cfg.max_n,
                      "budget_samples": cfg.budget_samples, "history": history, "stopped": {}} if adaptive else None)
        if new_run:
            write_config(run_dir, config)
        if adaptive:
            log.info("run %s: %s, %d tasks, %d samples already in the store; a pilot of %d per problem, then one plan "
                     "per task for a re-run SE of %g points", run_dir, info.model, len(tasks), len(status.ok), PILOT,
                     cfg.target_se)
            for t in tasks:  # 4 samples of each problem give a re-run SE of at most 25/sqrt(Q) points
                if cfg.target_se is not None and cfg.target_se >= 25 / len(t.problems) ** 0.5:
                    log.warning("%s: --target-se %g is met by the pilot of %d samples per problem whatever the "
                                "answers (%d problems: re-run SE at most %.2f points then); a lower target samples more",
                                t.name, cfg.target_se, PILOT, len(t.problems), 25 / len(t.problems) ** 0.5)
        else:
            log.info("run %s: %s, %d tasks, %d samples wanted, %d already in the store, %d to generate",
                     run_dir, info.model, len(tasks), the_plan.total, the_plan.total - len(the_plan.requests),
                     len(the_plan.requests))
        concurrency = min(cfg.concurrency, info.max_concurrency or cfg.concurrency)
        stats = GenerationStats()
        sampler = None
        try:
            with contextlib.ExitStack() as scoring:
                if adaptive:
                    sampler = _adaptive_sampler(cfg, tasks, prompt, run_dir, history or [],
                                                scoring.enter_context(ScoringContext(
                                                    workers=cfg.grading_workers, timeout_s=cfg.grading_timeout,
                                                    cache_dir=run_dir)))
                first = len(the_plan.requests) or (PILOT * sum(len(t.problems) for t in tasks) if adaptive else 0)
                with ProgressReporter(first, enabled=cfg.progress, console=console) as progress:
                    await generate(engine, the_plan.queue(cast(Schedule, cfg.schedule)), store,
                                   concurrency=concurrency,
                                   policy=RetryPolicy(max_retries=cfg.max_retries, backoff_base_s=cfg.retry_backoff,
                                                      rate_limit_window_s=cfg.rate_limit_window),
                                   max_model_len=info.max_model_len, stats=stats, on_progress=progress.update,
                                   on_sample=sampler.on_sample if sampler else None,
                                   refill=sampler.refill if sampler else None)
                if sampler is not None:
                    await sampler.drain()
                    config = dataclasses.replace(config, adaptive={**(config.adaptive or {}),
                                                                   "stopped": dict(sampler.stopped)})
        except BaseException:
            # A new run records what was done, but never hides why it stopped (a full disk fails this write too).
            if new_run:
                with contextlib.suppress(OSError, UserError):
                    write_config(run_dir, dataclasses.replace(config, last_generation=stats.timing()))
            raise
        config = dataclasses.replace(config, last_generation=stats.timing())
        write_config(run_dir, on_disk(run_dir, config))
        if stats.requests:
            log.info("generation: %d samples generated, %d failed after their retries; %d requests, %d errors, %d "
                     "retries, %.1f s", stats.done, stats.failed, stats.requests, stats.errors, stats.retries,
                     stats.wall_s)
    return run_dir, config, stats


def on_disk(run_dir: Path, command: RunConfig) -> RunConfig:
    """config.json while a command generates: the command's settings, engine and timing, and the run's headline as
    it is (results/scope.py: only scoring may change it), or the command's scope when the run has none yet. Read
    just before each write: a sweep's driver may be scoring an earlier job of the same run meanwhile."""
    old = _previous_config(run_dir)
    if old is None or not old.tasks:
        return command
    # The headline's provenance stays the headline's (issue 41.5): its tasks' datasets and the timing of the command
    # that made it; score_run gives them the command's when its evaluation becomes the headline's.
    datasets = {**old.datasets, **{t: d for t, d in command.datasets.items() if t not in old.tasks}}
    return dataclasses.replace(command, tasks=old.tasks, problem_keys=old.problem_keys, n=old.n, task_n=old.task_n,
                               adaptive=old.adaptive, limit=old.limit, created=old.created or command.created,
                               scoring={**old.scoring, **command.scoring}, datasets=datasets,
                               plugins={**old.plugins, **command.plugins}, last_generation=old.last_generation)


def _adaptive_sampler(cfg: EvalConfig, tasks: Sequence[LoadedTask], prompt: PromptConfig, run_dir: Path,
                      history: Sequence[Mapping[str, Any]], context: ScoringContext) -> AdaptiveSampler:
    """run --target-se: the sampler that feeds the runner, with the store's finished samples counted."""
    make = request_maker(tasks, seed=cfg.seed, sampling=cfg.sampling(), api=cfg.api, prompt=prompt)
    scorers = {t.name: create_scorer(task_scoring(t, prompt, cfg.lmeval_metrics), context) for t in tasks}
    assert cfg.target_se is not None
    settings = AdaptiveSettings(cfg.target_se, cfg.max_n, cfg.budget_samples, tuple(history))
    sampler = AdaptiveSampler(tasks, settings, make, scorers)
    sampler.load(run_dir)
    return sampler


def task_scoring(task: LoadedTask, prompt: PromptConfig, lmeval_metrics: bool = False) -> TaskScoring:
    """The task's scoring with settings that follow the prompt style (lm-eval's strict-match looks for
    the answer in the style's format) filled in for the style this run asks the task with.

    The lm-eval columns (its extra scorers) are kept where lm-eval defines the task with that style (a
    gsm8k few-shot prompt, MATH with Minerva's), or when asked (`lmeval_metrics`): elsewhere they would
    measure a format the run never asked for (e.g. "#### N" under a zero-shot boxed prompt)."""
    style = prompt.for_task(task.name, task.spec.prompt, task.spec.fewshot)
    scoring = task.spec.scoring.with_style_pattern(style.answer_pattern())
    lmeval_defined = style.template is None and style.style in task.spec.lmeval_styles
    if scoring.extra and not (lmeval_metrics or lmeval_defined):
        scoring = dataclasses.replace(scoring, extra={})
    return scoring


def _previous_config(run_dir: Path) -> RunConfig | None:
    """The config an earlier run of this directory wrote (for its creation time); None if none is readable:
    config.json is rewritten whole below."""
    try:
        return load_config(run_dir)
    except UserError:
        return None


def _disk_error(e: OSError, where: Path | str) -> UserError:
    """A write that failed (disk full, read-only, quota) as a one-line error; the journal keeps
    every finished sample (the store cuts a partly written line back out)."""
    return UserError(f"cannot write {e.filename or where}: {e.strerror or e}; finished samples are kept. Free "
                     "space (or make it writable) and re-run the same command")


@takes_options_of(EvalConfig)  # mypy checks each option's name and type against EvalConfig's fields
async def evaluate_async(config: EvalConfig | None = None, **options: Any) -> RunResult:
    """`evaluate` for code that already runs an event loop. Scoring runs in a thread, off the loop."""
    options = rename_old_keys(type(config) if config else EvalConfig, options, "evaluate()")
    cfg = dataclasses.replace(config, **options) if config else EvalConfig(**options)
    cfg.validate()
    cfg.check_given(set(options))
    tasks = load_tasks(cfg)
    used_plugins(cfg, tasks)  # a broken engine, task, scorer or prompt style: one line now, not after generating
    if cfg.lmeval_metrics and not any(t.spec.scoring.extra for t in tasks):
        log.warning("--lmeval-metrics has no effect here: none of %s has lm-eval's columns",
                    ", ".join(t.name for t in tasks))
    try:
        async with started_engine(cfg) as (engine, info):
            run_dir, command, _ = await generate_run(cfg, tasks, engine, info, Console(stderr=True))
    except OSError as e:
        raise _disk_error(e, cfg.output_dir) from None
    result = await asyncio.get_running_loop().run_in_executor(None, lambda: score_run(
        run_dir, scope=headline_scope(command, {}), adaptive=command.adaptive, command=command, workers=cfg.grading_workers,
        grading_timeout=cfg.grading_timeout, print_table=cfg.print_table))
    if cfg.log_to:
        from reasoneval.report.dashboards import log_once, model_checkpoint

        # The dashboards show the run's headline (this result, or the wider one a narrower command left in place),
        # at the training step of the model the server evaluated.
        headline = load_run(run_dir) if result.view else result
        await asyncio.get_running_loop().run_in_executor(None, log_once, cfg, headline,
                                                         model_checkpoint(headline.config).step)
    if not result.complete:
        raise RunIncomplete(result)
    return result


@takes_options_of(EvalConfig)
def evaluate(config: EvalConfig | None = None, **options: Any) -> RunResult:
    """Run an evaluation and return its result (what summary.json holds).

    Raises UserError for bad input and RunIncomplete (with `.summary`) when samples are missing.
    Example: `evaluate(tasks=["aime24"], model="my-model", base_url="http://localhost:8000/v1", n=16)`.
    Inside a running event loop, `await evaluate_async(...)` instead.
    """
    if _loop_running():
        raise UserError("evaluate() was called inside a running event loop: use `await evaluate_async(...)`")
    return asyncio.run(evaluate_async(config, **options))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def score_run(run_dir: Path, *, n: int | None = None, tasks: Sequence[str] | None = None,
              workers: int | None = None, grading_timeout: float = GRADING_TIMEOUT_S, print_table: bool = True,
              write: bool = True, scope: Scope | None = None, adaptive: Mapping[str, Any] | None = None,
              command: RunConfig | None = None) -> RunResult:
    """Score a run directory's store for one command and print its table; no request is sent. Returns the
    command's result.

    What the command covers (results/scope.py): `scope` (run: its tasks, problems and K, with `adaptive`, its
    --target-se settings), else the run's headline, narrowed to `tasks` and with sample indices < `n` when
    given. With `write`, the run's headline (summary.json, results.parquet, report.html, config.json) becomes
    this result when it is the widest complete evaluation (`choose_headline`); a narrower command writes its
    result as a view under views/<name>/ and leaves the headline as it was. Every file changes together or not
    at all (atomic.FileSet): a command that fails leaves them as they were.

    `command`: the config of the command that generated (run, a sweep's job), whose provenance (each task's
    datasets, the generation's timing) goes with its evaluation: into the headline's config.json and summary.json
    for the tasks where its evaluation becomes the headline's, else into its view only.
    """
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    all_problems = read_problems(run_dir)
    known: dict[str, list[str]] = {}
    for p in all_problems:
        known.setdefault(p.task, []).append(p.key)
    headline = headline_scope(config, known)
    if scope is None:
        scope = _asked_scope(run_dir, config, headline, known, n, tasks)
    try:
        with ScoringContext(workers=workers, timeout_s=grading_timeout, cache_dir=run_dir) as context, FileSet() as files:
            own = _with_provenance(config, command, list(scope), view=True)
            result, parquet = _evaluate(run_dir, own, scope, adaptive, all_problems, context, files if write else None)
            if write:
                decision = decide(headline, _headline_complete(run_dir), scope,
                                  {t: task_complete(result, t) for t in scope})
                chosen = decision.headline
                if decision.reorder:  # config.json keeps the headline's order: summary.json agrees with it
                    result = _in_task_order(result, own, chosen, adaptive)
                top_config = _with_provenance(with_scope(config, chosen, adaptive), command,
                                              [t for t in scope if chosen.get(t) == scope[t]])
                if decision.rescore_headline:
                    top, top_parquet = _evaluate(run_dir, top_config, chosen, top_config.adaptive, all_problems, context,
                                                 files)
                    _stage(top, top_parquet, files)
                if top_config != config:
                    files.write_json(run_dir / CONFIG_FILE, top_config.to_json_dict())
                if decision.view is not None:  # narrower, or only part of a wider headline: this command's view
                    # Whether the headline changes with it is read off the files, before and after (issue 41.3).
                    changed = files.changes(run_dir / SUMMARY_FILE) or files.changes(run_dir / CONFIG_FILE)
                    result = dataclasses.replace(result, view=decision.view, headline_changed=changed,
                                                 headline_scope=describe(chosen) if changed else None)
                _stage(result, parquet, files)
    except OSError as e:
        raise _disk_error(e, run_dir) from None
    if print_table:
        render_table(result)
    return result


def _with_provenance(config: RunConfig, command: RunConfig | None, tasks: Sequence[str], view: bool = False
                     ) -> RunConfig:
    """`config` with the command's provenance for `tasks`: their datasets (the problems the command asked them
    with), and its generation's timing. For the headline (view False) only when some task's evaluation is the
    command's and the command generated something: a command that generated nothing leaves the timing of the
    one that did."""
    if command is None or not tasks:
        return config
    datasets = {**config.datasets, **{t: command.datasets[t] for t in tasks if t in command.datasets}}
    timing = config.last_generation
    if view or (command.last_generation is not None and command.last_generation.requests):
        timing = command.last_generation
    if datasets == config.datasets and timing == config.last_generation:
        return config
    return dataclasses.replace(config, datasets=datasets, last_generation=timing)


def _in_task_order(result: RunResult, config: RunConfig, scope: Scope, adaptive: Mapping[str, Any] | None
                   ) -> RunResult:
    """`result` (of the same tasks as `scope`) with its tasks in `scope`'s order."""
    return dataclasses.replace(result, tasks={t: result.tasks[t] for t in scope}, config=with_scope(config, scope, adaptive),
                               adaptive=None if result.adaptive is None else
                               {t: result.adaptive[t] for t in scope if t in result.adaptive})


def _asked_scope(run_dir: Path, config: RunConfig, headline: Scope, known: Mapping[str, Sequence[str]],
                 n: int | None, tasks: Sequence[str] | None) -> Scope:
    """`report` / `score` of a run directory: the headline's tasks (or `tasks`: the headline's problems of each,
    or every problem the store has of a task the headline lacks), with sample indices < n when given."""
    if n is not None and n < 1:
        raise UserError(f"--n must be at least 1 (got {n})")
    if tasks is not None:
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise UserError(f"{run_dir} has no samples of task(s) {', '.join(unknown)}; it has: "
                            + ", ".join(sorted(known)))
    names = list(tasks) if tasks is not None else (list(headline) or list(known))
    out: Scope = {}
    for t in names:
        h = headline.get(t)
        problems = h.problems if h is not None else tuple(known.get(t, ()))
        # --n asks for K samples per problem: a fixed-K evaluation of the first n (indices < n), even of an adaptive
        # task (its view is named and labelled as what it is: `aime24-n4`, K = 4; issue 41.4).
        out[t] = TaskScope(problems, n or (h.n if h is not None else config.n), n is None and h is not None and h.adaptive)
    return out


def _headline_complete(run_dir: Path) -> dict[str, bool]:
    """Which tasks of the headline on disk are complete (none when it was never scored or cannot be read)."""
    if not (run_dir / SUMMARY_FILE).exists():
        return {}
    try:
        result = load_run(run_dir)
    except UserError:
        return {}
    return {t: task_complete(result, t) for t in result.tasks}


def _stage(result: RunResult, parquet: Path | None, files: FileSet) -> None:
    """The result's summary.json, report.html and results.parquet, moved into its folder at the commit."""
    if parquet is None:
        return
    write_summary(result, files)
    write_run_html(result, files=files, parquet=parquet)
    files.adopt(parquet, result.files_dir / RESULTS_FILE)


def _evaluate(run_dir: Path, config: RunConfig, scope: Scope, adaptive_settings: Mapping[str, Any] | None,
              all_problems: Sequence[Problem], context: ScoringContext, files: FileSet | None
              ) -> tuple[RunResult, Path | None]:
    """Score `scope`'s samples: its result, and (with `files`) its results.parquet, written to a temporary."""
    position = {(t, k): i for t, s in scope.items() for i, k in enumerate(s.problems)}
    order = {t: i for i, t in enumerate(scope)}
    problems = sorted((p for p in all_problems if (p.task, p.key) in position),
                      key=lambda p: (order[p.task], position[(p.task, p.key)]))
    if not problems:
        raise UserError(f"{run_dir} holds no problems to report on (check --tasks)")
    names = list(scope)
    scorers = {t: create_scorer(config.scoring.get(t) or TaskScoring(), context) for t in names}
    extra = {t: {name: create_scorer(s, context) for name, s in (config.scoring.get(t) or TaskScoring()).extra.items()}
             for t in names}
    parquet = files.scratch(run_dir / RESULTS_FILE) if files is not None else None
    writer = ResultsWriter(parquet) if parquet is not None else None
    try:
        outcomes = score_store(run_dir, problems, {t: s.n for t, s in scope.items()}, scorers,
                               _parquet_sink(writer) if writer else None, extra)
    finally:
        if writer is not None:
            writer.close()
    settings = adaptive_settings if adaptive_settings is not None else config.adaptive
    adaptive = {}
    # No fixed K in an adaptive task: problems differ in n_i by design (metrics over k go up to the smallest n_i),
    # and each problem's accuracy is the design's estimate (run/adaptive.py).
    estimated = with_estimates({t: os_ for t, os_ in outcomes.items() if scope[t].adaptive}, settings or {})
    planned = plan_se_of(estimated, settings or {})
    for t, os_ in estimated.items():
        outcomes[t] = os_
        adaptive[t] = adaptive_summary(os_, settings or {}, t, planned.get(t))
    for t, os_ in outcomes.items():
        if t not in adaptive and config.engine == "score":
            # A file of generations: each problem has the responses its rows gave, none is missing.
            outcomes[t] = [dataclasses.replace(o, num_missing=0) for o in os_]
    metadata = {(p.task, p.key): p.metadata for p in problems}
    per_task, bound = {}, {}
    for t, os_ in outcomes.items():
        bound[t] = (max((len(o.correct) for o in os_), default=1) or 1) if t in adaptive else scope[t].n
        meta = {o.problem_key: metadata[(t, o.problem_key)] for o in os_}
        fields = {f: breakdown(os_, meta, f) for f in BREAKDOWN_FIELDS}
        # The lm-eval columns per subject too (lm-eval's minerva_math reports one subtask per subject).
        for name in (config.scoring.get(t) or TaskScoring()).extra:
            fields[f"subject [{name}]"] = breakdown(os_, meta, "subject", metric=name)
        per_task[t] = dataclasses.replace(task_metrics(os_, bound[t]), breakdown={f: b for f, b in fields.items() if b},
                                          se_vs_k=se_vs_k(os_, bound[t]))
    K = max(bound.values(), default=1)
    result = RunResult(
        model=config.model, run_id=config.run_id, run_dir=run_dir, config=with_scope(config, scope, adaptive_settings),
        n=K, tasks=per_task, aggregate=aggregate_metrics(outcomes, K), timing=config.last_generation or GenerationTiming(),
        complete=all(o.num_missing == 0 for os_ in outcomes.values() for o in os_)
        and all(a["stopped"] is not None for a in adaptive.values()), adaptive=adaptive or None,
        scorers={s.name: s.version for s in [*scorers.values(), *(e for d in extra.values() for e in d.values())]})
    return result, parquet


def _parquet_sink(writer: ResultsWriter) -> ChunkSink:
    written = {"bytes": 0, "rows": 0}

    def sink(scored: Sequence[ScoredProblem], size: int) -> None:
        # Parquet rows wait in the writer until a batch is full: keep a batch near PARQUET_BATCH_BYTES of
        # responses (256 rows of short answers, 2 of 4 MB ones).
        written["bytes"] += size
        written["rows"] += len(scored)
        writer.batch_rows = max(1, min(256, PARQUET_BATCH_BYTES * written["rows"] // max(1, written["bytes"])))
        for sp in scored:
            writer.add(sp)

    return sink
