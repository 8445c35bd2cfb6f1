"""`reasoneval sweep JOBS.yaml`: every (model, tasks) job of a jobs file on a Ray cluster, one per GPU.

Each job's generation is a Ray task asking for `gpus_per_job` (default 1: one job per GPU, no tensor
parallelism unless a job asks for more) and `cpus_per_job` (default 1); Ray queues the jobs until
resources free up. A job's run directory is the one `reasoneval run` with the same options writes,
so a re-run sweep resumes unfinished jobs and skips finished ones. Scoring happens in the driver
while the next jobs generate (checkpoint i is graded while i + 1 generates). A job whose worker dies
is retried by Ray up to --job-retries times, then marked failed; the others go on.

On a locally started cluster, GPUs that are busy outside Ray (memory in use, via NVML when pynvml is
installed, or named with --busy-gpus) are left out of the cluster (CUDA_VISIBLE_DEVICES) and reported.
State: `<JOBS>.state.json` beside the jobs file; the table: `<JOBS>.status.csv` and `.status.md`; jobs by
training step x (task, metric) with lm-eval's metric names: `<JOBS>.checkpoints.csv` and `.checkpoints.md`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from reasoneval.errors import EngineDown, UserError
from reasoneval.fleet.cluster import start_cluster
from reasoneval.fleet.jobs import Job, load_jobs
from reasoneval.fleet.state import JobState, SweepState, read_state, state_path, write_state
from reasoneval.fleet.status import show_status
from reasoneval.run.flags import run_option
from reasoneval.run_files import SUMMARY_FILE

log = logging.getLogger("reasoneval")

# ---- one job ----------------------------------------------------------------------------------

def generate_job(cfg: Any, prior_run_dir: str | None) -> dict[str, Any]:
    """A job's generation, in a Ray worker holding the job's GPUs: the run directory and the GPUs it had.

    prior_run_dir: the previous checkpoint's run, whose finished lengths order this one's samples."""
    import ray

    from reasoneval.results.store import SampleStore
    from reasoneval.run.generation import generate_run, load_tasks, started_engine

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    expected = SampleStore(Path(prior_run_dir)).scan().lengths if prior_run_dir else None

    async def go() -> tuple[Path, Any, int]:
        tasks = load_tasks(cfg)
        async with started_engine(cfg) as (engine, info):
            run_dir, command, stats = await generate_run(cfg, tasks, engine, info, expected=expected)
        return run_dir, command, stats.done

    t0 = time.time()
    run_dir, command, generated = asyncio.run(go())
    return {"run_dir": str(run_dir), "gpu_ids": gpu_ids, "pid": os.getpid(), "generated": generated,
            "started": t0, "finished": time.time(), "command": command.to_json_dict()}


def _score(job: Job, run_dir: str, command: Mapping[str, Any] | None, workers: int | None, dashboards: Any) -> bool:
    """Score what the job generated (its tasks, problems and K: results/scope.py; the run's headline follows the
    rule, so jobs of one model sharing a run directory add their tasks to it) and log the run's headline."""
    from reasoneval.results.schema import RunConfig, load_run
    from reasoneval.results.scope import headline_scope
    from reasoneval.run.score import score_run

    cfg = job.config
    asked = RunConfig.from_json_dict(command) if command else None
    result = score_run(Path(run_dir), n=None if asked else cfg.samples_per_problem(),
                       scope=headline_scope(asked, {}) if asked else None, adaptive=asked.adaptive if asked else None,
                       command=asked,
                       workers=workers, grading_timeout=cfg.grading_timeout, print_table=False)
    metrics = settings = None
    if job.battery is not None and job.battery_run is not None:  # the battery's rows (this job's run), lm-eval's names
        from reasoneval.analysis.battery import battery_metrics, get_battery, metric_name, row_figures
        from reasoneval.report.dashboards import rows_settings

        battery = get_battery(job.battery)
        figures = row_figures(battery, {job.battery_run: result})
        metrics = battery_metrics(battery, figures)
        # this job's rows record their own settings (`<battery>/<row>/<setting>`): the other jobs' rows theirs
        settings = rows_settings({f"{battery.name}/{metric_name(f.row)}": result for f in figures
                                  if f.row.run == job.battery_run})
    # never raises: a failing dashboard warns once
    dashboards.log(cfg, load_run(result.run_dir) if result.view else result, job.step, metrics, settings)
    return bool(result.complete)


def _several_training_runs(jobs: Sequence[Job]) -> bool:
    """Whether the jobs are checkpoints of more than one training run (a model path's folder): each then gets its own
    dashboard run (dashboards.Dashboards, by_training_run)."""
    from reasoneval.report.dashboards import checkpoint_of

    runs = {checkpoint_of(str(j.config.engine_args.get("model_path") or j.config.model or "")).training_run
            for j in jobs}
    return len(runs - {""}) > 1


def _run_key(job: Job) -> tuple[str, str]:
    """Jobs of one model write one run directory (its tasks accumulate there, as with `reasoneval run`):
    they must not generate at the same time (the store has one writer)."""
    return str(job.config.model), str(job.config.output_dir)


# ---- the loop ----------------------------------------------------------------------------------

# How often Ray starts a job again whose worker died (--job-retries), by default.
JOB_RETRIES = 2


def run_jobs(jobs: Sequence[Job], state_file: Path, *, job_retries: int = JOB_RETRIES, grading_workers: int | None = 1,
             on_change: Callable[[], object] | None = None, dashboards: Any = None) -> SweepState:
    """Run the jobs that are not finished on the connected Ray cluster; returns the state (also on disk).

    job_retries: how often Ray starts a job again whose worker died.
    dashboards: a dashboards.Dashboards each scored job is logged to (the jobs' log_to), kept open by the
    caller across calls (`watch`); default: one for this call, named after the state file."""
    from reasoneval.engines.ray import import_ray
    from reasoneval.report.dashboards import Dashboards

    if dashboards is None:
        with Dashboards(state_file.name.split(".")[0] or None, by_training_run=_several_training_runs(jobs)) as own:
            return run_jobs(jobs, state_file, job_retries=job_retries, grading_workers=grading_workers,
                            on_change=on_change, dashboards=own)

    ray = import_ray()
    state = read_state(state_file)
    gpus_total = float(ray.cluster_resources().get("GPU", 0))
    cpus_total = float(ray.cluster_resources().get("CPU", 0))
    remote = ray.remote(generate_job)
    inflight: dict[Any, Job] = {}
    scoring: dict[concurrent.futures.Future[bool], Job] = {}
    pending: list[tuple[Job, str | None]] = []
    previous: str | None = None
    for job in jobs:
        entry = state.get(job.name) or JobState()
        if entry.state == "done" and entry.fingerprint == job.fingerprint() and entry.run_dir \
                and (Path(entry.run_dir) / SUMMARY_FILE).exists():
            log.info("sweep: %s is finished: skipped", job.name)
            previous = entry.run_dir
            continue
        # A job no node can hold would wait forever: say so instead.
        if gpus_total and job.gpus_per_job > gpus_total:
            raise UserError(f"job {job.name} asks for {job.gpus_per_job:g} GPUs; the Ray cluster has {gpus_total:g}")
        if job.cpus_per_job > cpus_total:
            raise UserError(f"job {job.name} asks for {job.cpus_per_job:g} CPUs; the Ray cluster has {cpus_total:g} "
                            "(set cpus_per_job in the jobs file)")
        # The previous checkpoint's finished lengths order this job's samples (longest expected first).
        pending.append((job, previous))
        state[job.name] = dataclasses.replace(entry, state="queued", fingerprint=job.fingerprint(), error=None)
        previous = entry.run_dir or previous
    write_state(state_file, state)
    busy_keys: set[tuple[str, str]] = set()

    def submit() -> None:
        # Every job whose run directory is free is handed to Ray at once; Ray queues them for GPUs.
        for item in list(pending):
            job, prior = item
            if _run_key(job) in busy_keys:
                continue
            pending.remove(item)
            busy_keys.add(_run_key(job))
            gpus = job.gpus_per_job if gpus_total else 0.0
            ref = remote.options(num_gpus=gpus, num_cpus=job.cpus_per_job, max_retries=job_retries,
                                 retry_exceptions=False, name=f"reasoneval-sweep:{job.name}").remote(
                                     job.config, prior)
            inflight[ref] = job

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-score")
    try:
        submit()
        while inflight or scoring or pending:
            if inflight:
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.2)
            else:
                ready = []
                concurrent.futures.wait(list(scoring), timeout=0.2)
            for ref in ready:
                job = inflight.pop(ref)
                busy_keys.discard(_run_key(job))
                entry = state[job.name]
                try:
                    out = ray.get(ref)
                except Exception as e:
                    entry.state, entry.error = "failed", _job_error(e, job_retries)
                    log.warning("sweep: %s failed: %s", job.name, entry.error)
                    continue
                entry.state, entry.run_dir, entry.gpu_ids = "scoring", out["run_dir"], out["gpu_ids"]
                entry.generated, entry.wall_s = out["generated"], round(out["finished"] - out["started"], 3)
                fut = pool.submit(_score, job, out["run_dir"], out.get("command"), grading_workers, dashboards)
                scoring[fut] = job
            if ready:
                submit()
                write_state(state_file, state)
            for fut in [f for f in scoring if f.done()]:
                job = scoring.pop(fut)
                entry = state[job.name]
                try:
                    entry.state = "done" if fut.result() else "incomplete"
                except Exception as e:
                    entry.state, entry.error = "failed", f"scoring: {' '.join(str(e).split())}"
                write_state(state_file, state)
                if on_change is not None:
                    on_change()
    finally:
        for ref in inflight:
            ray.cancel(ref, force=True)
        pool.shutdown(wait=True, cancel_futures=True)
        write_state(state_file, state)
    return state


def _job_error(e: BaseException, job_retries: int) -> str:
    cause = getattr(e, "cause", None) or e
    text = " ".join(str(cause).splitlines()[-1:] if isinstance(cause, (UserError, EngineDown)) else str(cause).split())
    if isinstance(cause, (UserError, EngineDown)):
        return f"{type(cause).__name__}: {text}"
    return f"worker died ({job_retries} retries used): {type(cause).__name__}: {text[:300]}"


# ---- the command ---------------------------------------------------------------------------------

def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _gpu_list(text: str) -> list[int]:
    import argparse

    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of GPU indices: {text!r}") from None


CLUSTER = "cluster"


@dataclass
class SweepOptions:
    """sweep's (and watch's) own flags, declared like `run`'s (reasoneval.run.options)."""

    job_retries: int = run_option(JOB_RETRIES, group=CLUSTER, parse=int, aliases=("--max-retries",),
                                  help="retries of a job whose worker died (default %(default)s)")
    ray_address: str | None = run_option(
        None, group=CLUSTER, help="Ray cluster to join (`auto`: the running one); default: start a local one")
    num_gpus: int | None = run_option(None, group=CLUSTER, parse=int,
                                      help="GPUs of a locally started cluster (default: NVML's count, else 0)")
    num_cpus: int | None = run_option(None, group=CLUSTER, parse=int,
                                      help="CPUs of a locally started cluster (default: detected)")
    busy_gpus: Sequence[int] = run_option((), group=CLUSTER, parse=_gpu_list, metavar="I,J",
                                          help="GPUs to leave alone besides those NVML reports busy (local cluster)")
    grading_workers: int | None = run_option(1, group=CLUSTER, parse=int,
                                             help="grading processes in the driver (default 1)")
    # Options over the jobs file's defaults (--log-to and the dashboards' settings); no flag of its own.
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def sweep(jobs_path: Path, opts: SweepOptions) -> bool:
    """Run a jobs file; True when every job is done."""
    from reasoneval.engines.ray import import_ray

    jobs = load_jobs(jobs_path, opts.defaults)
    ray = import_ray()
    started, notes = start_cluster(opts.ray_address, num_gpus=opts.num_gpus, num_cpus=opts.num_cpus,
                                   busy_gpus=opts.busy_gpus)
    for note in notes:
        (log.warning if "busy" in note else log.info)("sweep: %s", note)  # the cluster's size is routine
    # SIGTERM (a scheduler stopping the sweep) ends it like Ctrl-C: Ray is shut down, nothing is left running.
    old = signal.signal(signal.SIGTERM, _interrupt)
    try:
        run_jobs(jobs, state_path(jobs_path), job_retries=opts.job_retries, grading_workers=opts.grading_workers,
                 on_change=lambda: show_status(jobs_path, jobs))
    finally:
        signal.signal(signal.SIGTERM, old)
        if started:
            ray.shutdown()
    return show_status(jobs_path, jobs)


__all__ = ["SweepOptions", "generate_job", "run_jobs", "sweep"]
