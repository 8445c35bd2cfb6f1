"""lcb_runner's own grader on a file of problems and programs: run with the python of an environment holding the
PyPI package `nvidia-livecodebench` (LiveCodeBench packaged by NVIDIA), never reasoneval's. bench/contest_agreement.py
writes the input and reads the output.

    /tmp/lcbvenv/bin/python bench/lcb_grade.py IN.json OUT.json [--workers 2] [--timeout 6] [--warm]

IN: {"problems": [{"input_output": JSON text}], "programs": [[problem index, response text], ...]}. Each program is
graded as lcb_runner grades a generation: its `extract_code` (the last fenced block), then `check_correctness`
(one process per program, tests in order, 6 s per test, stop at the first failure), run over a
ProcessPoolExecutor of `--workers` processes as its `evaluate_generations` does. OUT: per program the result list
(True, or an error code: -1 global timeout, -2 wrong answer / compile error, -3 time limit, -4 runtime error) and
the wall time of the whole grading, and its CPU time (the grading process and every process it reaped: pool
workers, managers, test processes).
"""

# own-environment: livecodebench (nvidia-livecodebench in a venv of its own, as the docstring says)
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def _grade(args: tuple[dict, str, int]) -> list:
    from livecodebench.evaluation.compute_code_generation_metrics import check_correctness
    from livecodebench.utils.extraction_utils import extract_code

    sample, response, timeout = args
    code = extract_code(response, None)
    try:
        res, _ = check_correctness(sample, code, timeout=timeout, debug=False)
    except Exception:
        res = [-5]
    return [bool(x) if x is True or x is False else int(x) for x in res]


def _warm(_: int) -> None:
    """A worker's start: import the grader (what its first program would pay), then hold the worker a moment so
    that each warm-up job lands on another worker."""
    from livecodebench.evaluation.compute_code_generation_metrics import check_correctness  # noqa: F401
    from livecodebench.utils.extraction_utils import extract_code  # noqa: F401

    time.sleep(0.3)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=6)
    ap.add_argument("--warm", action="store_true", help="start the workers and import the grader before the clock "
                    "starts (a once-per-run cost, like our calibration)")
    a = ap.parse_args()
    data = json.load(open(a.inp))
    jobs = [(data["problems"][i], text, a.timeout) for i, text in data["programs"]]
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        if a.warm:
            list(ex.map(_warm, range(a.workers)))
        t0 = os.times()
        start = time.perf_counter()
        results = list(ex.map(_grade, jobs))
    wall = time.perf_counter() - start  # the pool's shutdown included, as before
    t1 = os.times()
    cpu = sum(t1[:4]) - sum(t0[:4])
    json.dump({"results": results, "wall_s": wall, "cpu_s": cpu}, open(a.out, "w"))
    print(f"lcb_runner graded {len(jobs)} programs in {wall:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
