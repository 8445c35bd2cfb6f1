#!/usr/bin/env python3
"""Makespan of the harness against a server that serves at most C requests at once, over the ideal.

The server (tests/fixtures/openai_server.py, its own process) has C = 16 slots and draws each request's
service time from a seeded lognormal (median 50 ms, sigma 1.0) in arrival order. The ideal is the
makespan of a zero-overhead greedy scheduler (C slots, the next request starts the instant a slot frees)
simulated in process on the same service times in the same order; the packing bound is
max(sum of service / C, longest request). The harness runs `reasoneval.evaluate(..., concurrency=16)` on
a 30-problem x 64-sample job and its generation wall time (summary timing.wall_s) is the makespan. The
reference is a batch-and-wait client (send C requests, wait for all, send the next C) on the same server.

    PYTHONPATH=src python bench/makespan.py            # 5 seeds, median; target <= 1.03

Problem-dependent lengths (`--profile problem`): the server's service time is a per-problem lognormal
factor (sigma 0.8) times per-sample noise (sigma 0.5), as on reasoning workloads where hard problems
think long; 40 problems x 32 samples over 16 slots. Each seed runs the harness twice on fresh servers
with the same service times: with the longest-expected-first schedule (the default: one pilot sample
per problem, then the samples of the longest problems first) and with the earlier sample-index-major
order. The figure is makespan / packing bound (max(sum of service / C, longest request), from the
server's own accounting), for each order in the same run:

    PYTHONPATH=src python bench/makespan.py --profile problem --seeds 3   # median 0.3 s; target <= 1.03, goal 1.02
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

import reasoneval
from _common import ServerProcess, write_problems


def service_times(seed: int, count: int, median_s: float, sigma: float) -> list[float]:
    # Exactly what tests/fixtures/openai_server.lognormal_delays draws, one per generation request.
    rng = random.Random(seed)
    mu = math.log(median_s)
    return [rng.lognormvariate(mu, sigma) for _ in range(count)]


def greedy_makespan(times: list[float], slots: int) -> float:
    free = [0.0] * slots
    end = 0.0
    for t in times:
        start = heapq.heappop(free)
        heapq.heappush(free, start + t)
        end = max(end, start + t)
    return end


def batch_makespan(times: list[float], slots: int) -> float:
    return sum(max(times[i:i + slots]) for i in range(0, len(times), slots))


async def batch_and_wait(base_url: str, count: int, slots: int) -> float:
    """The loop several evaluation harnesses use: C requests, wait for all, the next C."""
    url = f"{base_url}/chat/completions"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=slots)) as session:
        async def one(i: int) -> None:
            body = {"model": "test-model", "messages": [{"role": "user", "content": f"What is {i} + {i}?"}],
                    "seed": i, "max_tokens": 64}
            async with session.post(url, json=body) as r:
                await r.read()

        t0 = time.monotonic()
        for start in range(0, count, slots):
            await asyncio.gather(*(one(i) for i in range(start, min(count, start + slots))))
        return time.monotonic() - t0


def run_seed(seed: int, problems: int, samples: int, slots: int, median: float, sigma: float,
             work: Path) -> dict[str, float]:
    count = problems * samples
    times = service_times(seed, count, median, sigma)
    ideal = greedy_makespan(times, slots)
    server_args = ("--max-concurrent", str(slots), "--lognormal-delay", str(median), str(sigma), "--seed", str(seed))
    with ServerProcess(*server_args) as server:
        s = reasoneval.evaluate(tasks=["aime24"], model="test-model", base_url=server.base_url,
                                data_dir=str(write_problems(work / "data", "aime24", problems)),
                                output_dir=str(work / f"results-{seed}"), n=samples, concurrency=slots,
                                grading_workers=1, progress=False, print_table=False)
        stats = server.stats()
        assert stats["requests"] == count and s.timing.requests == count, (stats, s.timing)
        assert stats["peak_serving"] <= slots
    harness = float(s.timing.wall_s)
    with ServerProcess(*server_args) as server:
        batch = asyncio.run(batch_and_wait(server.base_url, count, slots))
    return {"ideal": ideal, "bound": max(sum(times) / slots, max(times)), "harness": harness,
            "batch": batch, "batch_sim": batch_makespan(times, slots)}


def simulate_schedules(seed: int, samples: int, slots: int, median: float, sigma_problem: float,
                       sigma_sample: float, data_dir: str) -> dict[str, float]:
    """The schedules alone: a zero-overhead event simulation of the runner's RequestQueue (C slots, the next
    request starts the instant one frees) on the service times the server draws for the same requests."""
    from tests.fixtures.openai_server import problem_lognormal

    from reasoneval.run.generation import load_tasks
    from reasoneval.run.options import EvalConfig
    from reasoneval.run.plan import plan

    cfg = EvalConfig(tasks=["aime24"], model="test-model", base_url="http://unused", data_dir=data_dir, n=samples)
    the_plan = plan(load_tasks(cfg), n=samples, seed=cfg.seed, sampling=cfg.sampling(), api="chat", prompt=cfg.prompt())
    respond = problem_lognormal(lambda body: "", median, sigma_problem, sigma_sample, seed=seed)
    times = {}
    for r in the_plan.requests:
        reply = respond({"messages": list(r.messages or ()), "seed": r.seed})
        assert not isinstance(reply, str)
        times[(r.problem_key, r.index)] = reply.delay_s
    bound = max(sum(times.values()) / slots, max(times.values()))
    out = {}
    for schedule in ("longest-first", "sample-major"):
        queue = the_plan.queue(schedule)
        running: list[tuple[float, int, object]] = []
        now, count = 0.0, 0
        while queue or running:
            while queue and len(running) < slots:
                r = queue.pop()
                heapq.heappush(running, (now + times[(r.problem_key, r.index)], count, r))
                count += 1
            now, _, done = heapq.heappop(running)
            queue.finished(done, times[(done.problem_key, done.index)])
        out[schedule] = now / bound
    return out


def run_problem_profile(seed: int, problems: int, samples: int, slots: int, median: float, sigma_problem: float,
                        sigma_sample: float, work: Path) -> dict[str, float]:
    count = problems * samples
    server_args = ("--max-concurrent", str(slots), "--problem-lognormal", str(median), str(sigma_problem),
                   str(sigma_sample), "--seed", str(seed))
    data_dir = str(write_problems(work / "data", "aime24", problems))
    out: dict[str, float] = {f"sim {k}": v for k, v in simulate_schedules(
        seed, samples, slots, median, sigma_problem, sigma_sample, data_dir).items()}
    for schedule in ("longest-first", "sample-major"):
        with ServerProcess(*server_args) as server:
            s = reasoneval.evaluate(tasks=["aime24"], model="test-model", base_url=server.base_url, data_dir=data_dir,
                                    output_dir=str(work / f"results-{seed}-{schedule}"), n=samples, concurrency=slots,
                                    schedule=schedule, grading_workers=1, progress=False, print_table=False)
            stats = server.stats()
        assert stats["requests"] == count and s.timing.requests == count, (stats, s.timing)
        assert stats["peak_serving"] <= slots
        bound = max(stats["service_total_s"] / slots, stats["service_max_s"])
        out[schedule] = float(s.timing.wall_s) / bound
        out["bound"] = bound
    return out


def main_problem_profile(a: argparse.Namespace) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'seed':>4} {'bound s':>8} {'longest-first':>14} {'sample-major':>13}   schedule alone (simulated): "
              f"{'longest-first':>14} {'sample-major':>13}")
        for seed in range(a.seeds):
            r = run_problem_profile(seed, a.problems, a.samples, a.slots, a.median, a.sigma_problem, a.sigma_sample,
                                    Path(tmp))
            rows.append(r)
            print(f"{seed:>4} {r['bound']:>8.2f} {r['longest-first']:>14.3f} {r['sample-major']:>13.3f}   "
                  f"{'':>28}{r['sim longest-first']:>14.3f} {r['sim sample-major']:>13.3f}", flush=True)
    new = statistics.median(r["longest-first"] for r in rows)
    old = statistics.median(r["sample-major"] for r in rows)
    ok = new <= 1.03
    print(f"makespan / packing bound, median of {len(rows)} seeds: longest-first {new:.3f} (target <= 1.03: "
          f"{'met' if ok else 'MISSED'}; goal 1.02), sample-major {old:.3f}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description="harness makespan / ideal (see the module docstring)")
    ap.add_argument("--profile", choices=["sample", "problem"], default="sample",
                    help="sample: i.i.d. service times; problem: per-problem x per-sample lognormal factors")
    ap.add_argument("--sigma-problem", type=float, default=0.8)
    ap.add_argument("--sigma-sample", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--problems", type=int, help="default 30 (sample profile), 40 (problem profile)")
    ap.add_argument("--samples", type=int, help="default 64 (sample profile), 32 (problem profile)")
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--median", type=float, help="median service time, s (default 0.05; problem profile 0.3)")
    ap.add_argument("--sigma", type=float, default=1.0)
    a = ap.parse_args()
    if a.profile == "problem":
        a.problems, a.samples, a.median = a.problems or 40, a.samples or 32, a.median or 0.3
        return main_problem_profile(a)
    a.problems, a.samples, a.median = a.problems or 30, a.samples or 64, a.median or 0.05
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'seed':>4} {'bound s':>8} {'ideal s':>8} {'harness s':>9} {'ratio':>6} {'batch s':>8} {'ratio':>6}")
        for seed in range(a.seeds):
            r = run_seed(seed, a.problems, a.samples, a.slots, a.median, a.sigma, Path(tmp))
            rows.append(r)
            print(f"{seed:>4} {r['bound']:>8.2f} {r['ideal']:>8.2f} {r['harness']:>9.2f} "
                  f"{r['harness'] / r['ideal']:>6.3f} {r['batch']:>8.2f} {r['batch'] / r['ideal']:>6.3f}", flush=True)
    h = statistics.median(r["harness"] / r["ideal"] for r in rows)
    b = statistics.median(r["batch"] / r["ideal"] for r in rows)
    ok = h <= 1.03
    print(f"makespan / ideal, median of {len(rows)} seeds: harness {h:.3f} (target <= 1.03: "
          f"{'met' if ok else 'MISSED'}), batch-and-wait {b:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
