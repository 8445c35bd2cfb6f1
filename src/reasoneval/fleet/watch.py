"""`reasoneval watch DIR --settings FILE`: evaluate every checkpoint that appears under DIR, once complete.

A checkpoint is a folder directly under DIR with a config (config.json) and weights (*.safetensors,
*.bin, *.pt, *.pth, *.gguf). It is complete when a marker file appears in it (--marker, default
`COMPLETE`) or when its files stopped changing (same names, sizes and modification times) for
--stable-s seconds. Each complete checkpoint becomes a job of the sweep machinery
(`reasoneval sweep`), with the options of the settings file (a jobs file's `defaults:`), on the Ray
cluster. A state file (default DIR/.reasoneval-watch.json, with the sweep's state beside it) keeps
what was seen and evaluated, so a restarted watcher redoes nothing. After each checkpoint the
table of all so far is printed (pass@1 ± SE per task, by step). This is what runs beside training.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reasoneval.engines.checkpoint import WEIGHT_SUFFIXES
from reasoneval.fleet.jobs import Job, battery_jobs, make_job
from reasoneval.fleet.loop import JOB_RETRIES, run_jobs
from reasoneval.fleet.state import SeenCheckpoint, WatchState, read_state
from reasoneval.fleet.status import print_status, status_rows, write_battery_matrices, write_checkpoint_table, write_status

log = logging.getLogger("reasoneval")

CONFIG_FILES = ("config.json",)


@dataclass
class WatchOptions:
    settings: Mapping[str, Any]
    state_file: Path
    marker: str = "COMPLETE"
    stable_s: float = 60.0
    job_retries: int = JOB_RETRIES
    grading_workers: int | None = 1
    # A dashboards.Dashboards kept open across checkpoints (--log-to): one dashboard run, each checkpoint
    # at its step. None: one per checkpoint.
    dashboards: Any = None


def signature(folder: Path) -> list[list[Any]]:
    """What changes while a checkpoint is being written: each file's name, size and mtime."""
    out = []
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            st = f.stat()
            out.append([str(f.relative_to(folder)), st.st_size, st.st_mtime_ns])
    return out


def looks_like_checkpoint(folder: Path) -> bool:
    names = [f.name for f in folder.iterdir() if f.is_file()]
    return any(n in CONFIG_FILES for n in names) and any(n.endswith(WEIGHT_SUFFIXES) for n in names)


def step_of(name: str) -> tuple[int, str]:
    """Sort key: the last number in the name (checkpoint-1200 -> 1200), then the name."""
    numbers = re.findall(r"\d+", name)
    return (int(numbers[-1]) if numbers else -1, name)


def scan(root: Path, opts: WatchOptions, now: float | None = None) -> list[Path]:
    """Checkpoints under root that are complete and not yet handed out, oldest step first; records what it saw."""
    now = time.time() if now is None else now
    state = WatchState.read(opts.state_file)
    ready = []
    for folder in sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                         key=lambda p: step_of(p.name)):
        entry = state.seen.get(folder.name) or SeenCheckpoint()
        if entry.complete:
            continue
        if not looks_like_checkpoint(folder):
            continue
        sig = signature(folder)
        if entry.signature != sig or entry.since is None:
            entry = SeenCheckpoint(signature=sig, since=now)
        marked = (folder / opts.marker).exists()
        if marked or now - float(entry.since or now) >= opts.stable_s:
            entry = SeenCheckpoint(complete=True, at=now, why="marker" if marked else f"unchanged {opts.stable_s:g} s")
            ready.append(folder)
        state.seen[folder.name] = entry
    state.write(opts.state_file)
    return ready


def jobs_state_file(opts: WatchOptions) -> Path:
    return opts.state_file.with_name(opts.state_file.name + ".jobs.json")


def all_jobs(root: Path, opts: WatchOptions) -> list[Job]:
    seen = WatchState.read(opts.state_file).seen
    names = sorted((n for n, e in seen.items() if e.complete), key=step_of)
    return [j for n in names
            for j in battery_jobs(make_job({"model": str(root / n), "name": n}, opts.settings, root, where=f"watch {root / n}"))]


def watch_once(root: Path, opts: WatchOptions) -> list[str]:
    """One pass: evaluate the checkpoints that became complete; returns their names (`failed_checkpoints` says
    which of them did not finish)."""
    ready = scan(root, opts)
    if not ready:
        return []
    jobs = all_jobs(root, opts)
    state_file = jobs_state_file(opts)
    for folder in ready:
        mine = [j for j in jobs if (j.checkpoint or j.name) == folder.name]  # (a battery: one job per run)
        log.info("watch: %s is complete: evaluating", folder)
        run_jobs(mine, state_file, job_retries=opts.job_retries, grading_workers=opts.grading_workers,
                 dashboards=opts.dashboards)
        header, rows = status_rows(jobs, read_state(state_file))
        write_status(opts.state_file, header, rows)
        write_checkpoint_table(opts.state_file, jobs, read_state(state_file))
        write_battery_matrices(opts.state_file, jobs, read_state(state_file))
        print_status(header, rows, f"checkpoints under {root}")
    return [f.name for f in ready]


def failed_checkpoints(root: Path, opts: WatchOptions, names: list[str]) -> list[str]:
    """Of the checkpoints `names`, those with a job that did not end "done" (failed, or samples missing)."""
    state = read_state(jobs_state_file(opts))
    jobs = all_jobs(root, opts)
    return [n for n in names if any(state[j.name].state != "done" if j.name in state else True
                                    for j in jobs if (j.checkpoint or j.name) == n)]


__all__ = ["WatchOptions", "all_jobs", "failed_checkpoints", "scan", "signature", "watch_once"]
