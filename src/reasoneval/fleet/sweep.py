"""`reasoneval sweep JOBS.yaml`: every (model, tasks) job of a jobs file on a Ray cluster, one per GPU.

    defaults:                  # any `reasoneval run` option (EvalConfig field), plus num_gpus / num_cpus
      tasks: [aime24, math500]
      n: 16
      engine: vllm
      engine_args: {max_model_len: 32768}
    models:
      - /ckpt/step-1000                    # a path or a served name
      - model: /ckpt/step-2000
        name: step-2000                    # the row's name (default: the path's last part)
        n: 32                              # any option, for this job only
        step: 2000                         # training step for --log-to (default: from the name)

Each job's generation is a Ray task asking for `num_gpus` (default 1: one job per GPU, no tensor
parallelism unless a job asks for more) and `num_cpus` (default 1); Ray queues the jobs until
resources free up. A job's run directory is the one `reasoneval run` with the same options writes,
so a re-run sweep resumes unfinished jobs and skips finished ones. Scoring happens in the driver
while the next jobs generate (checkpoint i is graded while i + 1 generates). A job whose worker dies
is retried by Ray up to --max-retries times, then marked failed; the others go on.

On a locally started cluster, GPUs that are busy outside Ray (memory in use, via NVML when pynvml is
installed, or named with --busy-gpus) are left out of the cluster (CUDA_VISIBLE_DEVICES) and reported.
State: `<JOBS>.state.json` beside the jobs file; the table: `<JOBS>.status.csv` and `.status.md`; jobs by
training step x (task, metric) with lm-eval's metric names: `<JOBS>.checkpoints.csv` and `.checkpoints.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import csv
import dataclasses
import hashlib
import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from reasoneval.errors import EngineDown, UserError

log = logging.getLogger("reasoneval")

# Job keys that are not EvalConfig fields. `test_crash_log` is a test hook: the job's worker appends a line
# to that file and dies (os._exit) on every attempt, as a worker lost to an OOM kill or a node failure.
JOB_KEYS = ("name", "num_gpus", "num_cpus", "step", "test_crash_log")
# GPU memory in use (MiB) above which NVML reports a GPU busy.
BUSY_MIB = 1024


@dataclass(frozen=True)
class Job:
    name: str
    config: Any  # pipeline.EvalConfig (imported lazily: the CLI stays light)
    num_gpus: float = 1.0
    num_cpus: float = 1.0
    test_crash_log: str | None = None
    # The training step its results are logged at (--log-to): `step:` in the jobs file, else from the
    # checkpoint's name (dashboards.checkpoint_step); None when neither has one.
    step: int | None = None

    def fingerprint(self) -> str:
        """Changes when the job's options change (then a finished job runs again, e.g. with a larger n)."""
        d = dataclasses.asdict(self.config)
        for key in ("log_to", "log_args"):  # where results are logged is not what the job computes
            d.pop(key, None)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_jobs(path: Path, extra_defaults: Mapping[str, Any] | None = None) -> list[Job]:
    """The jobs of a jobs file; an unknown key or bad value is a one-line error naming it."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read the jobs file {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise UserError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), list) or not data["models"]:
        raise UserError(f"{path}: a jobs file needs `models:` (a list of model paths or names), optionally "
                        "`defaults:`; see `reasoneval sweep --help`")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise UserError(f"{path}: `defaults:` must be a mapping of options")
    unknown_top = sorted(set(data) - {"defaults", "models"})
    if unknown_top:
        raise UserError(f"{path}: unknown top-level key(s) {', '.join(unknown_top)}; use `defaults:` and `models:`")
    jobs = [make_job(entry, over_defaults(defaults, extra_defaults), path.parent, where=f"{path}: models[{i}]")
            for i, entry in enumerate(data["models"])]
    names = [j.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"{path}: job name(s) {', '.join(dup)} appear twice; give each a distinct `name:`")
    return jobs


def over_defaults(defaults: Mapping[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """`extra` (command-line options) over a jobs or settings file's defaults; the dashboards' settings
    (`log_args`) merge key by key, so `--tensorboard-dir` keeps the file's MLflow tracking URI."""
    out = {**defaults, **(extra or {})}
    if isinstance(defaults.get("log_args"), Mapping) and isinstance((extra or {}).get("log_args"), Mapping):
        out["log_args"] = {**defaults["log_args"], **(extra or {})["log_args"]}
    return out


def make_job(entry: Any, defaults: Mapping[str, Any], base: Path, *, where: str) -> Job:
    from reasoneval.run.pipeline import EvalConfig

    if isinstance(entry, str):
        entry = {"model": entry}
    if not isinstance(entry, dict) or not entry.get("model"):
        raise UserError(f"{where}: each model is a path/name or a mapping with `model:`")
    merged = {k.replace("-", "_"): v for k, v in {**defaults, **entry}.items()}
    fields = {f.name for f in dataclasses.fields(EvalConfig)}
    # The engine's own options (model_path, replicas, ...) may be given at the top level, as on the
    # command line (--model-path); they go into engine_args, where a job's own engine_args win.
    from reasoneval.engines import ENGINES, options_class

    engine = str(merged.get("engine") or ("openai" if merged.get("model") or merged.get("base_url") else "local"))
    if engine in ENGINES:
        own = {f.name for f in dataclasses.fields(options_class(engine))}
        moved = {k: merged.pop(k) for k in sorted(set(merged) & own - fields)}
        if moved:
            merged["engine_args"] = {**moved, **dict(merged.get("engine_args") or {})}
    engine_args = dict(merged.get("engine_args") or {})
    if engine_args.get("model_path") and not Path(str(engine_args["model_path"])).is_absolute():
        engine_args["model_path"] = str(base / str(engine_args["model_path"]))
        merged["engine_args"] = engine_args
    unknown = sorted(set(merged) - fields - set(JOB_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown option(s) {', '.join(unknown)}; options are the `reasoneval run` flags "
                        "(tasks, n, engine, engine_args, log_to, ...) and name, num_gpus, num_cpus, step")
    options = {k: v for k, v in merged.items() if k in fields}
    if isinstance(options.get("tasks"), str):
        options["tasks"] = [t.strip() for t in options["tasks"].split(",") if t.strip()]
    for key in ("output_dir", "data_dir", "data", "prompt_template"):
        if options.get(key) is not None and not Path(str(options[key])).is_absolute():
            options[key] = str(base / str(options[key]))
    options.setdefault("output_dir", str(base / "results"))
    options.update(progress=False, print_table=False)
    try:
        cfg = EvalConfig(**options)
        cfg.validate()
    except TypeError as e:
        raise UserError(f"{where}: {e}") from None
    name = str(merged.get("name") or Path(str(cfg.model)).name or cfg.model)
    try:
        num_gpus, num_cpus = float(merged.get("num_gpus", 1)), float(merged.get("num_cpus", 1))
    except (TypeError, ValueError):
        raise UserError(f"{where}: num_gpus and num_cpus must be numbers") from None
    crash = merged.get("test_crash_log")
    from reasoneval.report.dashboards import checkpoint_step

    try:
        step = int(merged["step"]) if merged.get("step") is not None else (
            checkpoint_step(name) if checkpoint_step(name) is not None else checkpoint_step(str(cfg.model)))
    except (TypeError, ValueError):
        raise UserError(f"{where}: step must be an integer (the training step), got {merged.get('step')!r}") from None
    return Job(name=name, config=cfg, num_gpus=num_gpus, num_cpus=num_cpus, test_crash_log=str(crash) if crash else None,
               step=step)


# ---- state ------------------------------------------------------------------------------------

def state_path(jobs_path: Path) -> Path:
    return jobs_path.with_name(jobs_path.name + ".state.json")


def read_state(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the sweep state {path} ({e}); delete it to start the bookkeeping afresh "
                        "(finished samples are in the run directories and are kept)") from None
    return data if isinstance(data, dict) else {}


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


# ---- GPUs -------------------------------------------------------------------------------------

def nvml_gpus(busy_mib: int = BUSY_MIB) -> tuple[int, dict[int, str]]:
    """(GPU count, {busy GPU index: why}) from NVML; (0, {}) without pynvml or NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return 0, {}
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver: no GPUs to manage
        return 0, {}
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        busy = {}
        for i in range(count):
            used = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used >> 20
            if used > busy_mib:
                busy[i] = f"{used} MiB in use outside this sweep"
        return count, busy
    finally:
        pynvml.nvmlShutdown()


def start_cluster(ray_address: str | None, *, num_gpus: int | None, num_cpus: int | None,
                  busy_gpus: Sequence[int] = ()) -> tuple[bool, list[str]]:
    """Join `ray_address`, or start a local cluster of the free GPUs. Returns (started here, report lines)."""
    from reasoneval.engines.ray import import_ray, init_ray

    ray = import_ray()
    notes: list[str] = []
    if ray.is_initialized() or ray_address:
        return init_ray(ray_address), notes
    detected, busy = nvml_gpus()
    total = detected if num_gpus is None else num_gpus
    for i in busy_gpus:
        busy.setdefault(int(i), "marked busy (--busy-gpus)")
    free = [i for i in range(total) if i not in busy]
    for i, why in sorted(busy.items()):
        if i < total:
            notes.append(f"GPU {i} is busy ({why}): left alone")
    if total:
        # Ray hands out the ids in CUDA_VISIBLE_DEVICES: a busy GPU is never given to a job.
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, free))
    started = init_ray(None, num_cpus=num_cpus, num_gpus=len(free))
    notes.append(f"local Ray cluster: {len(free)} GPU(s) {free if total else ''}".rstrip())
    return started, notes


# ---- one job ----------------------------------------------------------------------------------

def generate_job(cfg: Any, prior_run_dir: str | None, crash_log: str | None = None) -> dict[str, Any]:
    """A job's generation, in a Ray worker holding the job's GPUs: the run directory and the GPUs it had.

    prior_run_dir: the previous checkpoint's run, whose finished lengths order this one's samples."""
    import ray

    if crash_log:  # the test hook (JOB_KEYS)
        with open(crash_log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        os._exit(1)

    from reasoneval.results.store import SampleStore
    from reasoneval.run.pipeline import generate_run, load_tasks, started_engine

    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    expected = SampleStore(Path(prior_run_dir)).scan().lengths if prior_run_dir else None

    async def go() -> tuple[Path, int]:
        tasks = load_tasks(cfg)
        async with started_engine(cfg) as (engine, info):
            run_dir, _, stats = await generate_run(cfg, tasks, engine, info, expected=expected)
        return run_dir, stats.done

    t0 = time.time()
    run_dir, generated = asyncio.run(go())
    return {"run_dir": str(run_dir), "gpu_ids": gpu_ids, "pid": os.getpid(), "generated": generated,
            "started": t0, "finished": time.time()}


def _score(job: Job, run_dir: str, tasks: list[str] | None, workers: int | None, dashboards: Any) -> bool:
    from reasoneval.run.pipeline import score_run

    cfg = job.config
    result = score_run(Path(run_dir), n=cfg.samples_per_problem(), tasks=tasks, workers=workers,
                       grading_timeout=cfg.grading_timeout,
                       print_table=False)
    dashboards.log(cfg, result, job.step)  # never raises: a failing dashboard warns once
    return bool(result.complete)


def _run_key(job: Job) -> tuple[str, str]:
    """Jobs of one model write one run directory (its tasks accumulate there, as with `reasoneval run`):
    they must not generate at the same time (the store has one writer)."""
    return str(job.config.model), str(job.config.output_dir)


def _job_tasks(job: Job) -> list[str] | None:
    """The job's task names (groups expanded); None for user data (its name comes from the file)."""
    from reasoneval.tasks import resolve_task_names

    if job.config.data:
        return None
    return resolve_task_names(list(job.config.tasks)) if job.config.tasks else ["arith"]


# ---- the sweep ----------------------------------------------------------------------------------

def run_jobs(jobs: Sequence[Job], state_file: Path, *, max_retries: int = 2, grading_workers: int | None = 1,
             on_change: Callable[[], object] | None = None, dashboards: Any = None) -> dict[str, dict[str, Any]]:
    """Run the jobs that are not finished on the connected Ray cluster; returns the state (also on disk).

    dashboards: a dashboards.Dashboards each scored job is logged to (the jobs' log_to), kept open by the
    caller across calls (`watch`); default: one for this call, named after the state file."""
    from reasoneval.engines.ray import import_ray
    from reasoneval.report.dashboards import Dashboards

    if dashboards is None:
        with Dashboards(state_file.name.split(".")[0] or None) as own:
            return run_jobs(jobs, state_file, max_retries=max_retries, grading_workers=grading_workers,
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
        entry = state.get(job.name) or {}
        if entry.get("state") == "done" and entry.get("fingerprint") == job.fingerprint() and entry.get("run_dir") \
                and (Path(entry["run_dir"]) / "summary.json").exists():
            log.info("sweep: %s is finished: skipped", job.name)
            previous = entry["run_dir"]
            continue
        # A job no node can hold would wait forever: say so instead.
        if gpus_total and job.num_gpus > gpus_total:
            raise UserError(f"job {job.name} asks for {job.num_gpus:g} GPUs; the Ray cluster has {gpus_total:g}")
        if job.num_cpus > cpus_total:
            raise UserError(f"job {job.name} asks for {job.num_cpus:g} CPUs; the Ray cluster has {cpus_total:g} "
                            "(set num_cpus in the jobs file)")
        # The previous checkpoint's finished lengths order this job's samples (longest expected first).
        pending.append((job, previous))
        state[job.name] = {**entry, "state": "queued", "fingerprint": job.fingerprint(), "error": None}
        previous = entry.get("run_dir") or previous
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
            gpus = job.num_gpus if gpus_total else 0.0
            ref = remote.options(num_gpus=gpus, num_cpus=job.num_cpus, max_retries=max_retries,
                                 retry_exceptions=False, name=f"reasoneval-sweep:{job.name}").remote(
                                     job.config, prior, job.test_crash_log)
            inflight[ref] = job

    def scored_tasks(job: Job, run_dir: str) -> list[str] | None:
        # A run directory shared by jobs of one model: score every task of those jobs that generated there.
        sharing = [j for j in jobs if j is job or (state.get(j.name) or {}).get("run_dir") == run_dir]
        names = [_job_tasks(j) for j in sharing]
        if any(n is None for n in names):
            return None
        return list(dict.fromkeys(t for n in names for t in n or []))

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
                try:
                    out = ray.get(ref)
                except Exception as e:
                    state[job.name].update(state="failed", error=_job_error(e, max_retries))
                    log.warning("sweep: %s failed: %s", job.name, state[job.name]["error"])
                    continue
                state[job.name].update(state="scoring", run_dir=out["run_dir"], gpu_ids=out["gpu_ids"],
                                       generated=out["generated"], wall_s=round(out["finished"] - out["started"], 3))
                fut = pool.submit(_score, job, out["run_dir"], scored_tasks(job, out["run_dir"]), grading_workers,
                                  dashboards)
                scoring[fut] = job
            if ready:
                submit()
                write_state(state_file, state)
            for fut in [f for f in scoring if f.done()]:
                job = scoring.pop(fut)
                try:
                    complete = fut.result()
                    state[job.name]["state"] = "done" if complete else "incomplete"
                except Exception as e:
                    state[job.name].update(state="failed", error=f"scoring: {' '.join(str(e).split())}")
                write_state(state_file, state)
                if on_change is not None:
                    on_change()
    finally:
        for ref in inflight:
            ray.cancel(ref, force=True)
        pool.shutdown(wait=True, cancel_futures=True)
        write_state(state_file, state)
    return state


def _job_error(e: BaseException, max_retries: int) -> str:
    cause = getattr(e, "cause", None) or e
    text = " ".join(str(cause).splitlines()[-1:] if isinstance(cause, (UserError, EngineDown)) else str(cause).split())
    if isinstance(cause, (UserError, EngineDown)):
        return f"{type(cause).__name__}: {text}"
    return f"worker died ({max_retries} retries used): {type(cause).__name__}: {text[:300]}"


# ---- the table --------------------------------------------------------------------------------

def status_rows(jobs: Sequence[Job], state: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: job, state, then pass@1 ± SE per task (the jobs' tasks, in order)."""
    from reasoneval.results.schema import load_run

    tasks: list[str] = []
    results: dict[str, Any] = {}
    for job in jobs:
        entry = state.get(job.name) or {}
        run_dir = entry.get("run_dir")
        if run_dir and (Path(run_dir) / "summary.json").exists():
            try:
                results[job.name] = load_run(Path(run_dir))
            except UserError:
                pass
        names = list(results[job.name].tasks) if job.name in results else list(job.config.tasks)
        tasks.extend(t for t in names if t not in tasks)
    header = ["job", "state", *tasks]
    rows = []
    for job in jobs:
        entry = state.get(job.name) or {}
        row = [job.name, str(entry.get("state") or "pending")]
        r = results.get(job.name)
        for t in tasks:
            m = r.tasks.get(t) if r is not None else None
            if m is None or m.mean is None:
                row.append("")
            else:
                se = f" ± {100 * m.stderr:.1f}" if m.stderr is not None else ""
                row.append(f"{100 * m.mean:.1f}{se}")
        rows.append(row)
    return header, rows


def write_status(jobs_path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> tuple[Path, Path]:
    csv_path = jobs_path.with_name(jobs_path.name + ".status.csv")
    md_path = jobs_path.with_name(jobs_path.name + ".status.md")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    md_path.write_text("pass@1 (%) ± SE per task\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return csv_path, md_path


def write_checkpoint_table(path: Path, jobs: Sequence[Job], state: Mapping[str, Mapping[str, Any]]) -> tuple[Path, Path]:
    """`<path>.checkpoints.csv` and `.md`: the scored jobs by training step x (task, metric), lm-eval's metric
    names (analysis.runs.checkpoint_table; the same as `reasoneval runs --by-checkpoint`)."""
    from reasoneval.analysis.runs import checkpoint_table
    from reasoneval.report.text import csv_text, markdown_table
    from reasoneval.results.schema import load_run

    items = []
    for job in jobs:
        run_dir = (state.get(job.name) or {}).get("run_dir")
        if run_dir and (Path(run_dir) / "summary.json").exists():
            try:
                items.append((job.name, job.step, load_run(Path(run_dir))))
            except UserError:
                pass
    head, cells, records = checkpoint_table(items)
    csv_path = path.with_name(path.name + ".checkpoints.csv")
    md_path = path.with_name(path.name + ".checkpoints.md")
    csv_path.write_text(csv_text(records) if records else ",".join(head) + "\n", encoding="utf-8")
    md_path.write_text(markdown_table(head, cells, left=2), encoding="utf-8")
    return csv_path, md_path


def print_status(header: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h if i < 2 else f"{h} pass@1 ± SE", justify="left" if i < 2 else "right")
    for r in rows:
        table.add_row(*r)
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    console.print(table)


def show_status(jobs_path: Path, jobs: Sequence[Job]) -> bool:
    """Print the table and write it beside the jobs file; True when every job is done."""
    state = read_state(state_path(jobs_path))
    header, rows = status_rows(jobs, state)
    write_status(jobs_path, header, rows)
    write_checkpoint_table(jobs_path, jobs, state)
    print_status(header, rows, f"sweep {jobs_path.name}")
    return all((state.get(j.name) or {}).get("state") == "done" for j in jobs)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@dataclass
class SweepOptions:
    max_retries: int = 2
    ray_address: str | None = None
    num_gpus: int | None = None
    num_cpus: int | None = None
    busy_gpus: Sequence[int] = ()
    grading_workers: int | None = 1
    # Options over the jobs file's defaults (--log-to and the dashboards' settings).
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def sweep(jobs_path: Path, opts: SweepOptions) -> bool:
    """Run a jobs file; True when every job is done."""
    from reasoneval.engines.ray import import_ray

    jobs = load_jobs(jobs_path, opts.defaults)
    ray = import_ray()
    started, notes = start_cluster(opts.ray_address, num_gpus=opts.num_gpus, num_cpus=opts.num_cpus,
                                   busy_gpus=opts.busy_gpus)
    for note in notes:
        log.warning("sweep: %s", note)
    # SIGTERM (a scheduler stopping the sweep) ends it like Ctrl-C: Ray is shut down, nothing is left running.
    old = signal.signal(signal.SIGTERM, _interrupt)
    try:
        run_jobs(jobs, state_path(jobs_path), max_retries=opts.max_retries, grading_workers=opts.grading_workers,
                 on_change=lambda: show_status(jobs_path, jobs))
    finally:
        signal.signal(signal.SIGTERM, old)
        if started:
            ray.shutdown()
    return show_status(jobs_path, jobs)


# ---- command line ------------------------------------------------------------------------------

def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of GPU indices: {text!r}") from None


def add_cluster_args(p: Any) -> None:
    p.add_argument("--max-retries", type=int, default=2, help="retries of a job whose worker died (default 2)")
    p.add_argument("--ray-address", help="Ray cluster to join (`auto`: the running one); default: start a local one")
    p.add_argument("--num-gpus", type=int, help="GPUs of a locally started cluster (default: NVML's count, else 0)")
    p.add_argument("--num-cpus", type=int, help="CPUs of a locally started cluster (default: detected)")
    p.add_argument("--busy-gpus", type=_int_list, default=[], metavar="I,J",
                   help="GPUs to leave alone besides those NVML reports busy (local cluster)")
    p.add_argument("--grading-workers", type=int, default=1, help="grading processes in the driver (default 1)")


def add_sweep_parser(sub: Any, fmt: Any) -> None:
    p = sub.add_parser("sweep", help="evaluate every model/checkpoint of a jobs file on a Ray cluster, one job per GPU",
                       formatter_class=fmt, description=(__doc__ or "").split("\n\n")[0],
                       epilog="jobs file:\n" + (__doc__ or "").split("\n\n")[1] + "\n\nexamples:\n"
                       "  reasoneval sweep jobs.yaml                      # a local cluster of this machine's GPUs\n"
                       "  reasoneval sweep jobs.yaml --ray-address auto   # on the head of a running cluster\n"
                       "  reasoneval sweep --status jobs.yaml             # the table so far\n"
                       "Re-running resumes: finished jobs are skipped. Exit status 0 when every job is done, 3 otherwise.")
    p.add_argument("jobs")
    p.add_argument("--status", action="store_true", help="print the table of jobs x tasks and exit")
    add_cluster_args(p)
    from reasoneval.report.dashboards import add_dashboard_args

    add_dashboard_args(p)
    p.set_defaults(func=_cmd_sweep)


def dashboard_defaults(a: argparse.Namespace) -> dict[str, Any]:
    """--log-to and the dashboards' flags as job options (over the jobs file's or settings file's)."""
    from reasoneval.report.dashboards import dashboard_options

    log_to, log_args = dashboard_options(a)
    return {**({"log_to": log_to} if log_to else {}), **({"log_args": log_args} if log_args else {})}


def _cmd_sweep(a: argparse.Namespace) -> int:
    path = Path(a.jobs)
    if a.status:
        return 0 if show_status(path, load_jobs(path)) else 3
    done = sweep(path, SweepOptions(max_retries=a.max_retries, ray_address=a.ray_address, num_gpus=a.num_gpus,
                                    num_cpus=a.num_cpus, busy_gpus=a.busy_gpus, grading_workers=a.grading_workers,
                                    defaults=dashboard_defaults(a)))
    return 0 if done else 3
