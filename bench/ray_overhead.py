#!/usr/bin/env python3
"""Driver overhead of `--engine ray`: requests/s through Ray replicas with zero-cost actors, against the
in-process runner with the same zero-cost engine, in the same run.

Both generate the same requests (arith, --n N) with the `echo` engine (no model, no delay): in process
(`--engine echo`), and as the inner engine of `--engine ray --replicas R` (echo actors on a local Ray
cluster started by the engine; its start-up is timed separately and not counted in requests/s, which
is generation wall time from the run's own timing). The ratio is ray / in-process requests/s.

    PYTHONPATH=src python bench/ray_overhead.py              # 2 replicas, 2000 requests
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts src/ on the path)
import reasoneval


def one(engine: str, engine_args: dict, n: int, limit: int, out: Path) -> tuple[float, float]:
    t0 = time.monotonic()
    r = reasoneval.evaluate(tasks=["arith"], limit=limit, n=n, engine=engine, engine_args=engine_args,
                            output_dir=str(out), concurrency=64, grading_workers=1, progress=False, print_table=False)
    total = time.monotonic() - t0
    assert r.timing.generated == n * limit, r.timing
    return r.timing.generated / r.timing.wall_s, total - r.timing.wall_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for i in range(a.repeats):
            local, _ = one("echo", {}, a.n, a.limit, Path(tmp) / f"echo{i}")
            ray_rps, ray_rest = one("ray", {"replicas": a.replicas, "inner": "echo", "num_cpus": 2, "num_gpus": 0},
                                    a.n, a.limit, Path(tmp) / f"ray{i}")
            rows.append((local, ray_rps, ray_rest))
            print(f"in-process {local:8.0f} req/s   ray ({a.replicas} echo replicas) {ray_rps:8.0f} req/s   "
                  f"ratio {ray_rps / local:.3f}   ray start-up + scoring + shutdown {ray_rest:.1f} s", flush=True)
    ratio = statistics.median(r[1] / r[0] for r in rows)
    ray_rps = statistics.median(r[1] for r in rows)
    print(f"driver overhead: ray / in-process requests/s = {ratio:.3f} (median of {len(rows)}; ray {ray_rps:.0f} "
          f"req/s = {1000 / ray_rps:.2f} ms per request; {a.n * a.limit} requests, {a.replicas} zero-cost replicas)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
