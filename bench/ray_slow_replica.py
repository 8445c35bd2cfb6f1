#!/usr/bin/env python3
"""`--engine ray` with one slow replica: makespan over the ideal for the capacity that is there.

Two replicas of an echo engine with 2 slots each: one answers in --delay seconds, the other --slow seconds
later (the test-only inner engine `slow_first_echo`, tests/plugins/slow_echo.py: the replica that starts
first is the slow one). The
ideal makespan of N requests is N / (total service rate) = N / (2 / (delay + slow) + 2 / delay): what a
perfect dispatcher reaches with both replicas busy to the end. Round robin would take about
N / 2 x (delay + slow) / 2. The figure is generation wall time (the run's own timing) over the ideal.

    PYTHONPATH=src python bench/ray_slow_replica.py            # target <= 1.15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

import _common  # puts src/ and the checkout (for tests.plugins) on the path
from reasoneval.engines import ENGINES, create_engine
from reasoneval.engines.ray import init_ray
from reasoneval.run.generation import generate_run, load_tasks
from reasoneval.run.options import EvalConfig


async def one(cfg: EvalConfig) -> tuple[float, list[int]]:
    engine = create_engine("ray", cfg.common_options(), cfg.engine_args)
    info = await engine.start()
    try:
        _, _, stats = await generate_run(cfg, load_tasks(cfg), engine, info)
        return stats.wall_s, engine.served()  # type: ignore[attr-defined]
    finally:
        await engine.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--slow", type=float, default=0.45)
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import ray

    # The replicas import the test-only engine by the registry's reference: the checkout must be on their path.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(_common.ROOT / "src"), str(_common.ROOT),
                                                *filter(None, [os.environ.get("PYTHONPATH")])])
    ENGINES.add_lazy("slow_first_echo", "tests.plugins.slow_echo")
    init_ray(None, num_cpus=2, num_gpus=0)
    ratios = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.repeats):
                cfg = EvalConfig(tasks=["arith"], limit=a.limit, n=a.n, engine="ray", output_dir=str(Path(tmp) / str(i)),
                                 progress=False, print_table=False, engine_args={
                                     "replicas": 2, "inner": "slow_first_echo", "inner_args": (
                                         f"claim={Path(tmp) / f'slow-{i}'}", f"slow_s={a.slow}", f"delay_s={a.delay}",
                                         "slots=2")})
                wall, served = asyncio.run(one(cfg))
                count = a.limit * a.n
                ideal = count / (2 / (a.delay + a.slow) + 2 / a.delay)
                ratios.append(wall / ideal)
                print(f"makespan {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.3f}; served per replica "
                      f"{served}; round robin would take ~{count / 4 * (a.delay + a.slow):.1f} s",
                      flush=True)
    finally:
        ray.shutdown()
    ratio = statistics.median(ratios)
    print(f"slow replica: makespan / ideal for the remaining capacity = {ratio:.3f} (median of {len(ratios)}; "
          f"target <= 1.15: {'met' if ratio <= 1.15 else 'MISSED'})")
    return 0 if ratio <= 1.15 else 1


if __name__ == "__main__":
    sys.exit(main())
