"""`reasoneval watch DIR --settings FILE`: evaluate every checkpoint that appears under DIR, once complete.

A checkpoint is a folder directly under DIR with a config (config.json) and weights (*.safetensors,
*.bin, *.pt, *.gguf). It is complete when a marker file appears in it (--marker, default
`COMPLETE`) or when its files stopped changing (same names, sizes and modification times) for
--stable-s seconds. Each complete checkpoint becomes a job of the sweep machinery
(`reasoneval sweep`), with the options of the settings file (a jobs file's `defaults:`), on the Ray
cluster. A state file (default DIR/.reasoneval-watch.json, with the sweep's state beside it) keeps
what was seen and evaluated, so a restarted watcher redoes nothing. After each checkpoint the
table of all so far is printed (pass@1 ± SE per task, by step). This is what runs beside training.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reasoneval.errors import UserError
from reasoneval.fleet.sweep import (
    Job,
    add_cluster_args,
    make_job,
    print_status,
    read_state,
    run_jobs,
    start_cluster,
    status_rows,
    write_checkpoint_table,
    write_state,
    write_status,
)

log = logging.getLogger("reasoneval")

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
CONFIG_FILES = ("config.json",)


@dataclass
class WatchOptions:
    settings: Mapping[str, Any]
    state_file: Path
    marker: str = "COMPLETE"
    stable_s: float = 60.0
    max_retries: int = 2
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
    state = read_state(opts.state_file)
    seen: dict[str, Any] = state.setdefault("seen", {})
    ready = []
    for folder in sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                         key=lambda p: step_of(p.name)):
        entry = seen.get(folder.name) or {}
        if entry.get("complete"):
            continue
        if not looks_like_checkpoint(folder):
            continue
        sig = signature(folder)
        if entry.get("signature") != sig:
            entry = {"signature": sig, "since": now}
        marked = (folder / opts.marker).exists()
        if marked or now - float(entry["since"]) >= opts.stable_s:
            entry = {"complete": True, "at": now, "why": "marker" if marked else f"unchanged {opts.stable_s:g} s"}
            ready.append(folder)
        seen[folder.name] = entry
    write_state(opts.state_file, state)
    return ready


def jobs_state_file(opts: WatchOptions) -> Path:
    return opts.state_file.with_name(opts.state_file.name + ".jobs.json")


def all_jobs(root: Path, opts: WatchOptions) -> list[Job]:
    seen = read_state(opts.state_file).get("seen", {})
    names = sorted((n for n, e in seen.items() if e.get("complete")), key=step_of)
    return [make_job({"model": str(root / n), "name": n}, opts.settings, root, where=f"watch {root / n}") for n in names]


def watch_once(root: Path, opts: WatchOptions) -> list[str]:
    """One pass: evaluate the checkpoints that became complete; returns their names."""
    ready = scan(root, opts)
    if not ready:
        return []
    jobs = all_jobs(root, opts)
    state_file = jobs_state_file(opts)
    for folder in ready:
        job = next(j for j in jobs if j.name == folder.name)
        log.warning("watch: %s is complete: evaluating", folder)
        run_jobs([job], state_file, max_retries=opts.max_retries, grading_workers=opts.grading_workers,
                 dashboards=opts.dashboards)
        header, rows = status_rows(jobs, read_state(state_file))
        write_status(opts.state_file, header, rows)
        write_checkpoint_table(opts.state_file, jobs, read_state(state_file))
        print_status(header, rows, f"checkpoints under {root}")
    return [f.name for f in ready]


def load_settings(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise UserError(f"cannot read the settings file {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise UserError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None
    if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
        data = data["defaults"]
    if not isinstance(data, dict):
        raise UserError(f"{path}: the settings are a mapping of `reasoneval run` options (tasks, n, engine, ...)")
    # Paths in the settings are relative to the settings file.
    for key in ("output_dir", "data_dir", "data", "prompt_template"):
        if data.get(key) is not None and not Path(str(data[key])).is_absolute():
            data[key] = str(path.parent / str(data[key]))
    data.setdefault("output_dir", str(path.parent / "results"))
    return data


def add_watch_parser(sub: Any, fmt: Any) -> None:
    p = sub.add_parser("watch", help="evaluate every checkpoint that appears under a folder, once complete",
                       formatter_class=fmt, description=(__doc__ or "").split("\n\n")[0],
                       epilog=(__doc__ or "").split("\n\n")[1] + "\n\nexample:\n"
                       "  reasoneval watch /ckpt/run7 --settings eval.yaml   # eval.yaml: tasks: [aime24], n: 16, ...")
    p.add_argument("dir")
    p.add_argument("--settings", required=True, help="YAML of `reasoneval run` options (a jobs file's defaults)")
    p.add_argument("--marker", default="COMPLETE", help="a file whose presence marks a checkpoint complete")
    p.add_argument("--stable-s", type=float, default=60.0, help="seconds without change that mark a checkpoint complete")
    p.add_argument("--interval", type=float, default=30.0, help="seconds between scans")
    p.add_argument("--state", help="state file (default DIR/.reasoneval-watch.json)")
    p.add_argument("--once", action="store_true", help="one scan: evaluate what is complete now, then exit")
    add_cluster_args(p)
    from reasoneval.report.dashboards import add_dashboard_args

    add_dashboard_args(p)
    p.set_defaults(func=_cmd_watch)


def _cmd_watch(a: argparse.Namespace) -> int:
    from reasoneval.engines.ray import import_ray

    root = Path(a.dir)
    if not root.is_dir():
        raise UserError(f"{root} is not a folder (watch a folder that checkpoints appear in)")
    from reasoneval.fleet.sweep import dashboard_defaults, over_defaults
    from reasoneval.report.dashboards import Dashboards, check_backends

    settings = over_defaults(load_settings(Path(a.settings)), dashboard_defaults(a))
    check_backends(settings.get("log_to"), settings.get("log_args"))
    opts = WatchOptions(settings=settings, dashboards=Dashboards(root.resolve().name),
                        state_file=Path(a.state) if a.state else root / ".reasoneval-watch.json", marker=a.marker,
                        stable_s=a.stable_s, max_retries=a.max_retries, grading_workers=a.grading_workers)
    started, notes = start_cluster(a.ray_address, num_gpus=a.num_gpus, num_cpus=a.num_cpus, busy_gpus=a.busy_gpus)
    for note in notes:
        log.warning("watch: %s", note)
    try:
        while True:
            watch_once(root, opts)
            if a.once:
                return 0
            time.sleep(a.interval)
    finally:
        opts.dashboards.close()
        if started:
            import_ray().shutdown()


__all__ = ["WatchOptions", "all_jobs", "scan", "signature", "watch_once"]
