#!/usr/bin/env python3
"""Requests/s the harness sustains against a zero-latency loopback server, beside a minimal raw async HTTP
loop against the same server in the same run (target: the harness >= 50% of the raw loop).

The server (tests/fixtures/openai_server.py) runs in its own process with no delay. The raw loop is C
aiohttp workers posting chat requests and decoding the JSON reply, nothing else. The harness is
`reasoneval.evaluate(..., concurrency=C)`: payload building, retries bookkeeping, the journal (one
write per sample, fsync once a second) and progress; its figure is timing.requests / timing.wall_s
(the generation phase; grading is not part of it). Runs alternate raw / harness, the median is reported.

    PYTHONPATH=src python bench/client_overhead.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

import reasoneval
from _common import ServerProcess, write_problems


async def raw_loop(base_url: str, count: int, concurrency: int) -> float:
    url = f"{base_url}/chat/completions"
    todo = iter(range(count))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def worker() -> None:
            for i in todo:
                body = {"model": "test-model", "messages": [{"role": "user", "content": f"What is {i} + {i}?"}],
                        "seed": i, "max_tokens": 64, "temperature": 0.6, "top_p": 0.95, "n": 1}
                async with session.post(url, json=body) as r:
                    (await r.json())["choices"][0]["message"]["content"]

        t0 = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return count / (time.monotonic() - t0)


def harness(base_url: str, work: Path, problems: int, samples: int, concurrency: int, rep: int) -> float:
    s = reasoneval.evaluate(tasks=["aime24"], model="test-model", base_url=base_url,
                            data_dir=str(write_problems(work / "data", "aime24", problems)),
                            output_dir=str(work / f"results-{rep}"), n=samples, concurrency=concurrency,
                            max_tokens=64, grading_workers=1, progress=False, print_table=False)
    assert s.timing.requests == problems * samples
    return float(s.timing.requests) / float(s.timing.wall_s)


def main() -> int:
    ap = argparse.ArgumentParser(description="harness requests/s vs a raw aiohttp loop")
    ap.add_argument("--problems", type=int, default=50)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    count = a.problems * a.samples
    raws, ours = [], []
    with tempfile.TemporaryDirectory() as tmp, ServerProcess() as server:
        asyncio.run(raw_loop(server.base_url, 500, a.concurrency))  # warm-up
        for rep in range(a.reps):
            raws.append(asyncio.run(raw_loop(server.base_url, count, a.concurrency)))
            ours.append(harness(server.base_url, Path(tmp), a.problems, a.samples, a.concurrency, rep))
            print(f"rep {rep}: raw loop {raws[-1]:,.0f} req/s, harness {ours[-1]:,.0f} req/s", flush=True)
    r, h = statistics.median(raws), statistics.median(ours)
    ok = h >= 0.5 * r
    print(f"{count} requests at concurrency {a.concurrency}, median of {a.reps}: harness {h:,.0f} req/s = "
          f"{h / r:.0%} of the raw loop's {r:,.0f} req/s (target >= 50%: {'met' if ok else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
