"""`reasoneval sweep` and `reasoneval watch`: their flags and commands (the work is in reasoneval.fleet).

The cluster flags are fleet.loop.SweepOptions' fields and the dashboard flags EvalConfig's, both generated
(reasoneval.run.options); the jobs and settings files are checked against EvalConfig's schema.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from reasoneval.errors import UserError

log = logging.getLogger("reasoneval")

DASHBOARD_OPTIONS = ("log_to", "log_args")


def _doc_part(module_doc: str | None, i: int) -> str:
    return (module_doc or "").split("\n\n")[i]


def _add_cluster_and_dashboards(p: Any) -> None:
    from reasoneval.fleet.loop import SweepOptions
    from reasoneval.run.flags import add_options
    from reasoneval.run.options import EvalConfig

    add_options(p, SweepOptions)
    add_options(p, EvalConfig, DASHBOARD_OPTIONS)


def dashboard_defaults(a: argparse.Namespace) -> dict[str, Any]:
    """--log-to and the dashboards' flags as job options (over the jobs file's or settings file's)."""
    from reasoneval.run.flags import options_from_args
    from reasoneval.run.options import EvalConfig

    given = options_from_args(EvalConfig, a, DASHBOARD_OPTIONS)
    return {k: v for k, v in given.items() if v}


def add_sweep_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.fleet import jobs, loop

    p.description = _doc_part(loop.__doc__, 0)
    p.epilog = ("jobs file:\n" + _doc_part(jobs.__doc__, 1) + "\n\n" + _doc_part(loop.__doc__, 1)
                       + "\n\nexamples:\n"
                       "  reasoneval sweep jobs.yaml                      # a local cluster of this machine's GPUs\n"
                       "  reasoneval sweep jobs.yaml --ray-address auto   # on the head of a running cluster\n"
                       "  reasoneval sweep --status jobs.yaml             # the table so far\n"
                       "Re-running resumes: finished jobs are skipped. Exit status 0 when every job is done, 3 otherwise.")
    p.add_argument("jobs")
    p.add_argument("--status", action="store_true", help="print the table of jobs x tasks and exit")
    _add_cluster_and_dashboards(p)
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(a: argparse.Namespace) -> int:
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.loop import SweepOptions, sweep
    from reasoneval.fleet.status import show_status
    from reasoneval.run.flags import options_from_args

    path = Path(a.jobs)
    if a.status:
        return 0 if show_status(path, load_jobs(path)) else 3
    opts = SweepOptions(**options_from_args(SweepOptions, a), defaults=dashboard_defaults(a))
    return 0 if sweep(path, opts) else 3


def add_watch_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.fleet import watch

    p.description = _doc_part(watch.__doc__, 0)
    p.epilog = (_doc_part(watch.__doc__, 1) + "\n\nexample:\n"
                "  reasoneval watch /ckpt/run7 --settings eval.yaml   # eval.yaml: tasks: [aime24], n: 16, ...")
    p.add_argument("dir")
    p.add_argument("--settings", required=True, help="YAML of `reasoneval run` options (a jobs file's defaults)")
    p.add_argument("--marker", default="COMPLETE", help="a file whose presence marks a checkpoint complete")
    p.add_argument("--stable-s", type=float, default=60.0, help="seconds without change that mark a checkpoint complete")
    p.add_argument("--interval", type=float, default=30.0, help="seconds between scans")
    p.add_argument("--state", help="state file (default DIR/.reasoneval-watch.json)")
    p.add_argument("--once", action="store_true", help="one scan: evaluate what is complete now, then exit")
    _add_cluster_and_dashboards(p)
    p.set_defaults(func=_cmd_watch)


def _cmd_watch(a: argparse.Namespace) -> int:
    from reasoneval.engines.ray import import_ray
    from reasoneval.fleet.cluster import start_cluster
    from reasoneval.fleet.jobs import load_settings, over_defaults
    from reasoneval.fleet.watch import WatchOptions, failed_checkpoints, watch_once
    from reasoneval.report.dashboards import Dashboards, check_backends

    root = Path(a.dir)
    if not root.is_dir():
        raise UserError(f"{root} is not a folder (watch a folder that checkpoints appear in)")
    settings = over_defaults(load_settings(Path(a.settings)), dashboard_defaults(a))
    out = Path(str(settings.get("output_dir"))).resolve()
    if out == root.resolve() or root.resolve() in out.parents:  # (issue 41.8: results/ among the checkpoints)
        raise UserError(f"the results would go inside the watched folder ({out}), among the checkpoints training "
                        f"writes: set output_dir in {a.settings} to a folder outside {root}")
    check_backends(settings.get("log_to"), settings.get("log_args"))
    opts = WatchOptions(settings=settings, dashboards=Dashboards(root.resolve().name),
                        state_file=Path(a.state) if a.state else root / ".reasoneval-watch.json", marker=a.marker,
                        stable_s=a.stable_s, job_retries=a.job_retries, grading_workers=a.grading_workers)
    started, notes = start_cluster(a.ray_address, num_gpus=a.num_gpus, num_cpus=a.num_cpus, busy_gpus=a.busy_gpus)
    for note in notes:  # a busy GPU left alone is worth a warning; the cluster's size is routine
        (log.warning if "busy" in note else log.info)("watch: %s", note)
    try:
        while True:
            done = watch_once(root, opts)
            if a.once:
                # exit 3 when a checkpoint of this pass did not finish (as `sweep` does), 0 otherwise
                failed = failed_checkpoints(root, opts, done)
                for name in failed:
                    log.error("watch: %s did not finish (see %s)", name, opts.state_file)
                return 3 if failed else 0
            time.sleep(a.interval)
    finally:
        opts.dashboards.close()
        if started:
            import_ray().shutdown()
