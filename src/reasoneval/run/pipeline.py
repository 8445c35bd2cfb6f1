"""The pipeline's stages, wired: load tasks -> plan -> generate (engine -> store) -> score -> result -> renderers.

    evaluate(...)            the Python API (sync); `reasoneval run` builds an EvalConfig and calls it
    await evaluate_async()   the same inside a running event loop (a notebook, a Ray actor, a sweep)
    generate_run(...)        generation only, with an engine the caller started (and owns): run/generation.py
    score_run(run_dir)       score a run directory and write summary.json, results.parquet, the table: run/score.py

This module is the wiring only; each half is its own module (import its names from there).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from rich.console import Console

from reasoneval.errors import RunIncomplete, UserError
from reasoneval.results.schema import RunResult, load_run
from reasoneval.results.scope import headline_scope
from reasoneval.run.flags import rename_old_keys
from reasoneval.run.generation import (
    check_run_judge,
    generate_run,
    load_tasks,
    started_engine,
    used_plugins,
)
from reasoneval.run.options import EvalConfig, takes_options_of
from reasoneval.run.score import disk_error, score_run

log = logging.getLogger("reasoneval")


@takes_options_of(EvalConfig)  # mypy checks each option's name and type against EvalConfig's fields
async def evaluate_async(config: EvalConfig | None = None, **options: Any) -> RunResult:
    """`evaluate` for code that already runs an event loop. Scoring runs in a thread, off the loop."""
    options = rename_old_keys(type(config) if config else EvalConfig, options, "evaluate()")
    cfg = dataclasses.replace(config, **options) if config else EvalConfig(**options)
    cfg.validate()
    cfg.check_given(set(options))
    if cfg.judge_server is not None:  # the judge launched for this run, stopped when it ends (however it ends)
        from pathlib import Path

        from reasoneval.scoring.judge.launched import launched_judge

        with launched_judge(cfg.judge_server, cfg.judge_model_path, cfg.judge_model,
                            Path(cfg.output_dir) / "judge-server") as judge:
            return await evaluate_async(dataclasses.replace(cfg, judge_server=None, judge_model_path=None,
                                                            judge_model=judge.model, judge_base_url=judge.base_url))
    tasks = load_tasks(cfg)
    used_plugins(cfg, tasks)  # a broken engine, task, scorer or prompt style: one line now, not after generating
    check_run_judge(cfg, tasks)  # a judge that cannot serve: one line now, not ungraded samples after generating
    if cfg.lmeval_metrics and not any(t.spec.scoring.extra for t in tasks):
        log.warning("--lmeval-metrics has no effect here: none of %s has lm-eval's columns",
                    ", ".join(t.name for t in tasks))
    try:
        async with started_engine(cfg) as (engine, info):
            run_dir, command, _ = await generate_run(cfg, tasks, engine, info, Console(stderr=True))
    except OSError as e:
        raise disk_error(e, cfg.output_dir) from None
    result = await asyncio.get_running_loop().run_in_executor(None, lambda: score_run(
        run_dir, scope=headline_scope(command, {}), adaptive=command.adaptive, command=command, workers=cfg.grading_workers,
        grading_timeout=cfg.grading_timeout, print_table=cfg.print_table))
    if cfg.log_to and result.view and not result.headline_changed:
        # A view (a smoke test, a narrower --n) left the headline as it was: nothing new to log under its name.
        log.info("--log-to: nothing logged; this command's result is a view and the run's headline is unchanged")
    elif cfg.log_to:
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
