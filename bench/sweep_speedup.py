#!/usr/bin/env python3
"""`reasoneval sweep` on 2 declared GPUs against the same jobs one after another: wall-time ratio.

Six jobs (3 models x 2 tasks, one task each) against the loopback OpenAI server, whose answers take
--delay seconds each (4 in flight per job): every job waits on "its GPU" the same way, so the ideal
ratio is 0.5 (3 rounds of 2 jobs against 6 jobs in a row). Sequential: `reasoneval.evaluate` per job
in this process, no Ray. Sweep: a local Ray cluster with 2 declared GPUs (num_gpus 1 per job), the
same jobs file machinery as the CLI; Ray's start-up (ray.init) and shutdown are timed separately.

    PYTHONPATH=src python bench/sweep_speedup.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts src/ on the path)
import reasoneval
from reasoneval.fleet.cluster import start_cluster
from reasoneval.fleet.jobs import load_jobs
from reasoneval.fleet.loop import run_jobs
from reasoneval.fleet.state import state_path

MODELS = ("m1", "m2", "m3")
TASKS = ("arith", "aime24")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--n", type=int, default=8)
    a = ap.parse_args()
    from tests.fixtures.openai_server import OpenAIServer  # the checkout's root is on the path via _common

    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(model=list(MODELS), delay_s=a.delay) as server:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        with open(data / "aime24.jsonl", "w") as f:
            for i in range(a.limit):
                f.write(json.dumps({"id": f"p{i}", "problem": f"Problem {i}?", "answer": "42"}) + "\n")
        common = dict(limit=a.limit, n=a.n, base_url=server.base_url, data_dir=str(data), concurrency=4)
        t0 = time.monotonic()
        for m in MODELS:
            for t in TASKS:
                reasoneval.evaluate(model=m, tasks=[t], output_dir=str(root / "seq"), grading_workers=1,
                                    progress=False, print_table=False, **common)
        sequential = time.monotonic() - t0

        jobs = root / "jobs.yaml"
        entries = "\n".join(f"  - {{model: {m}, name: {m}-{t}, tasks: [{t}]}}" for m in MODELS for t in TASKS)
        jobs.write_text("defaults:\n" + "".join(f"  {k}: {v}\n" for k, v in common.items())
                        + "  output_dir: sweep\nmodels:\n" + entries + "\n")
        t0 = time.monotonic()
        started, _ = start_cluster(None, num_gpus=2, num_cpus=2)
        t1 = time.monotonic()
        state = run_jobs(load_jobs(jobs), state_path(jobs))
        t2 = time.monotonic()
        import ray

        ray.shutdown()
        t3 = time.monotonic()
        assert started and all(e.state == "done" for e in state.values()), state
    sweep = t2 - t1
    print(f"sequential {sequential:.1f} s; sweep on 2 GPUs {sweep:.1f} s + Ray start-up {t1 - t0:.1f} s + shutdown "
          f"{t3 - t2:.1f} s")
    print(f"wall-time ratio sweep / sequential: {sweep / sequential:.3f} without Ray start-up and shutdown, "
          f"{(t3 - t0) / sequential:.3f} with them (ideal 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
