"""Generation, the first half of a run: load its tasks, resolve what it uses, start the engine, and generate every
missing sample into the run's store (`generate_run`), writing config.json's generation record. Scoring is
run/score.py; run/pipeline.py wires the two (`evaluate`)."""


from __future__ import annotations

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

from reasoneval.engines import ENGINES, Engine, EngineInfo, capabilities, check_supported, create_engine
from reasoneval.errors import UserError
from reasoneval.metrics.plan_adaptive import PILOT
from reasoneval.prompts import PROMPTS, Exemplar, PromptConfig
from reasoneval.records import Problem
from reasoneval.registry import Registry
from reasoneval.results import fingerprint
from reasoneval.results.adaptive import ADAPTIVE_DESIGN
from reasoneval.results.identity import RunSettings, run_dir_for
from reasoneval.results.schema import RunConfig, TaskData, load_config, write_config
from reasoneval.results.store import SampleStore, add_problems
from reasoneval.run.adaptive import (
    AdaptiveSampler,
    AdaptiveSettings,
    history_entry,
    history_for,
)
from reasoneval.run.options import EvalConfig
from reasoneval.run.plan import LoadedTask, ProblemRef, Schedule, plan, request_maker
from reasoneval.run.progress import ProgressReporter, run_log
from reasoneval.run.retry import RetryPolicy
from reasoneval.run.runner import GenerationStats, generate
from reasoneval.run_files import CONFIG_FILE
from reasoneval.scoring import SCORERS, ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.base import needs_calibration
from reasoneval.scoring.judge.cascade import cascade_scoring
from reasoneval.scoring.judge.client import JudgeSettings, check_judge
from reasoneval.scoring.lmeval_hendrycks import hendrycks_reference
from reasoneval.tasks import TASKS, dataset_hash, load_task, load_user_data, resolve_task_names
from reasoneval.version import __version__

log = logging.getLogger("reasoneval")

_DEPENDENCIES = ("aiohttp", "math-verify", "latex2sympy2_extended", "sympy", "numpy", "scipy", "pyarrow",
                 "datasets", "llama_cpp_python", "vllm")
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
    resolved = resolve_task_names(names) if names else []
    options = task_options(cfg.task_arg, resolved)
    for name in resolved:
        spec, problems = load_task(name, data_dir=data_dir, limit=cfg.limit, options=options.get(name))
        out.append(LoadedTask(spec, problems))
    for t in out:
        if not t.problems:
            raise UserError(f"task {t.name} has no problems")
    prompt = cfg.prompt()
    return [with_fewshot_pool(t, prompt, data_dir) for t in out]


def run_calibration(run_dir: Path, tasks: Sequence[LoadedTask]) -> dict[str, Any]:
    """The machine's calibration for CPU-time limits (measured once per run, kept in the run directory where the
    scorer reads it), when a task's scorer needs it (`scoring.needs_calibration`); else nothing."""
    if not any(needs_calibration(t.spec.scoring) for t in tasks):
        return {}
    from reasoneval.scoring.programs.calibrate import machine_calibration

    return machine_calibration(run_dir).to_json_dict()


def task_options(args: Sequence[str], tasks: Sequence[str]) -> dict[str, dict[str, str]]:
    """--task-arg values ("TASK:KEY=VALUE", or "KEY=VALUE" for every task that takes options) -> per task."""
    out: dict[str, dict[str, str]] = {}
    for arg in args:
        head, eq, value = arg.partition("=")
        task, colon, key = head.rpartition(":")
        if not eq or not key.strip():
            raise UserError(f"--task-arg {arg!r}: give KEY=VALUE or TASK:KEY=VALUE (e.g. livecodebench:release=v5)")
        if colon and task not in tasks:
            raise UserError(f"--task-arg {arg!r}: task {task!r} is not among this run's tasks ({', '.join(tasks)})")
        targets = [task] if colon else [t for t in tasks if TASKS.get(t).options is not None]
        if not targets:
            raise UserError(f"--task-arg {arg!r}: none of this run's tasks ({', '.join(tasks)}) takes options")
        for t in targets:
            out.setdefault(t, {})[key.strip()] = value.strip()
    return out


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
        scoring = task_scoring(t, prompt, cfg.lmeval_metrics, judge_of(cfg))
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
    adaptive = cfg.target_se is not None
    # What this command draws, for `view`'s live counts and ETA: K per problem, or at most --max-n (adaptive);
    # config.json describes the headline, not the command (issue 52.4/7).
    drawing = {"tasks": {t.name: {"problems": [p.key for p in t.problems], "adaptive": adaptive,
                                  "per_problem": cfg.max_n if adaptive else cfg.n} for t in tasks}}
    with SampleStore(run_dir, drawing) as store, run_log(run_dir):
        engine.attach_run(run_dir)
        add_problems(run_dir, [p for t in tasks for p in t.problems])
        status = store.scan()
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
            scoring={t.name: task_scoring(t, prompt, cfg.lmeval_metrics, judge_of(cfg)) for t in tasks}, engine_config=engine.describe(),
            base_url=cfg.base_url if engine_name == "openai" else None, api_key_env=cfg.api_key_env, limit=cfg.limit,
            datasets={t.name: TaskData(len(t.problems), dataset_hash(list(t.problems)), t.spec.source, t.spec.version,
                                       dict(t.spec.options_given), t.spec.judged_by(t.problems), dict(t.spec.left_out))
                      for t in tasks},
            concurrency=cfg.concurrency, max_model_len=info.max_model_len, versions=versions(),
            created=now, updated=now, plugins=used_plugins(cfg, tasks), calibration=run_calibration(run_dir, tasks),
            adaptive={"design": ADAPTIVE_DESIGN, "target_se": cfg.target_se, "max_n": cfg.max_n,
                      "budget_samples": cfg.budget_samples, "history": history, "stopped": {}} if adaptive else None)
        # the requests in flight the engine takes (the local engine: replicas x parallel), not the flag's
        in_flight = min(cfg.concurrency, info.max_concurrency or cfg.concurrency)
        config = dataclasses.replace(config, fingerprint=fingerprint.collect(
            dataclasses.replace(config, concurrency=in_flight)))
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
        concurrency = in_flight
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
        # The engine as it ended (a kernel fallback, the server's system_fingerprints seen while generating).
        config = dataclasses.replace(config, last_generation=stats.timing(), engine_config=engine.describe())
        config = dataclasses.replace(config, fingerprint=fingerprint.collect(
            dataclasses.replace(config, concurrency=in_flight)))
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
                               # when the headline last changed: score_run moves it when the command's evaluation
                               # becomes the headline's, a narrower command leaves it (issue 52.5)
                               updated=old.updated or command.updated,
                               scoring={**old.scoring, **command.scoring}, datasets=datasets,
                               plugins={**old.plugins, **command.plugins}, last_generation=old.last_generation)


def _adaptive_sampler(cfg: EvalConfig, tasks: Sequence[LoadedTask], prompt: PromptConfig, run_dir: Path,
                      history: Sequence[Mapping[str, Any]], context: ScoringContext) -> AdaptiveSampler:
    """run --target-se: the sampler that feeds the runner, with the store's finished samples counted."""
    make = request_maker(tasks, seed=cfg.seed, sampling=cfg.sampling(), api=cfg.api, prompt=prompt)
    scorers = {t.name: create_scorer(task_scoring(t, prompt, cfg.lmeval_metrics, judge_of(cfg)), context) for t in tasks}
    assert cfg.target_se is not None
    settings = AdaptiveSettings(cfg.target_se, cfg.max_n, cfg.budget_samples, tuple(history))
    sampler = AdaptiveSampler(tasks, settings, make, scorers)
    sampler.load(run_dir)
    return sampler


def judge_of(cfg: EvalConfig) -> JudgeSettings | None:
    """The judge --judge-model / --judge-base-url name (None: no judge): each task's scoring becomes a cascade."""
    if cfg.judge_server is not None:  # evaluate() launches it and names its endpoint; other callers cannot
        raise UserError("--judge-server is taken by `run` and `report`; here name the judge's endpoint: --judge-model "
                        "NAME --judge-base-url URL")
    if cfg.judge_model is None or cfg.judge_base_url is None:
        return None
    return JudgeSettings.make(cfg.judge_model, cfg.judge_base_url, max_tokens=cfg.judge_max_tokens)


def check_run_judge(cfg: EvalConfig, tasks: Sequence[LoadedTask]) -> None:
    """The run's judge, when some task's scoring asks it, checked to serve (scoring/judge/client.check_judge)."""
    judge = judge_of(cfg)
    if judge is None:
        return
    prompt = cfg.prompt()
    if any(task_scoring(t, prompt, cfg.lmeval_metrics, judge).scorer == "cascade" for t in tasks):
        check_judge(judge)


def task_scoring(task: LoadedTask, prompt: PromptConfig, lmeval_metrics: bool = False,
                 judge: JudgeSettings | None = None) -> TaskScoring:
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
    return cascade_scoring(scoring, judge) if judge is not None else scoring


def _previous_config(run_dir: Path) -> RunConfig | None:
    """The config an earlier run of this directory wrote (for its creation time); None if none is readable:
    config.json is rewritten whole below."""
    try:
        return load_config(run_dir)
    except UserError:
        return None


