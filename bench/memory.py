#!/usr/bin/env python3
"""Peak RSS of `reasoneval report`, `score` and `export` on a synthetic 2 GB store (500 problems x 64
samples x ~64 KB responses). Target: < 300 MB for the main process; the grading workers are reported
separately. Each command runs in a fresh interpreter that prints its own ru_maxrss (and its children's)
at exit, beside a baseline interpreter that only imports reasoneval.

    PYTHONPATH=src python bench/memory.py                  # builds the store in a temp dir (~2.1 GB)
    PYTHONPATH=src python bench/memory.py --keep /data/x   # build once, keep it for re-runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT
from reasoneval.atomic import atomic_write_json
from reasoneval.records import Problem, SampleRecord
from reasoneval.results.identity import sample_seed
from reasoneval.results.store import SampleStore, add_problems
from reasoneval.tasks import problem_key

WORDS = ("so we have the sum of the squares which gives therefore let x be an integer note that "
         "substituting back into equation yields factor both sides and simplify to obtain wait").split()

MEASURE = """
import json, resource, sys
from reasoneval.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "self_mb": me.ru_maxrss / 1024, "children_mb": kids.ru_maxrss / 1024}),
      file=sys.stderr)
"""


def build_store(run_dir: Path, problems: int, samples: int, response_kb: int) -> int:
    """A run directory as `reasoneval run` leaves it; returns the journal's size in bytes."""
    rng = random.Random(0)
    pool = " ".join(rng.choice(WORDS) for _ in range(60_000))  # ~400 KB of text to cut responses from
    size = response_kb * 1024
    probs = []
    for i in range(problems):
        q, a = f"Find the value of {i} + {i}.", str(2 * i)
        probs.append(Problem(task="synthetic", id=f"p{i}", problem=q, answer=a, key=problem_key(q, a)))
    run_dir.mkdir(parents=True, exist_ok=True)
    add_problems(run_dir, probs)
    with SampleStore(run_dir) as store:
        for j in range(samples):
            for p in probs:
                start = rng.randrange(0, len(pool) - size)
                answer = int(p.answer) + (0 if rng.random() < 0.6 else rng.randrange(1, 5))
                text = pool[start:start + size - 40] + f" The answer is \\boxed{{{answer}}}."
                store.append(SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=j,
                                          seed=sample_seed(42, p.task, p.key, j), status="ok", text=text,
                                          finish_reason="stop", completion_tokens=len(text) // 4))
    atomic_write_json(run_dir / "config.json", {
        "run_id": run_dir.name, "settings": {"model": "synthetic"}, "engine": "openai", "n": samples,
        "tasks": ["synthetic"], "problem_keys": {"synthetic": [p.key for p in probs]}})
    return (run_dir / "samples.jsonl").stat().st_size


def measure(*argv: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, env=env, cwd=ROOT)
    out = json.loads(r.stderr.strip().splitlines()[-1])
    if out["code"] not in (0, None):
        raise SystemExit(f"{' '.join(argv)} failed: {r.stderr[-2000:]}")
    out["wall_s"] = time.monotonic() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description="peak RSS of report / score on a large synthetic store")
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--response-kb", type=int, default=64)
    ap.add_argument("--grading-workers", type=int, default=2)
    ap.add_argument("--keep", help="build the store here (reused when it is already there)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="reasoneval-mem-") as tmp:
        run_dir = Path(a.keep) if a.keep else Path(tmp) / "run"
        if (run_dir / "config.json").exists():
            size = (run_dir / "samples.jsonl").stat().st_size
        else:
            t0 = time.monotonic()
            size = build_store(run_dir, a.problems, a.samples, a.response_kb)
            print(f"built {run_dir}: {size / 1e9:.2f} GB journal in {time.monotonic() - t0:.0f} s", flush=True)
        base = measure("--version")
        print(f"baseline (import, --version): {base['self_mb']:.0f} MB", flush=True)
        (run_dir / "grades.jsonl").unlink(missing_ok=True)
        rep = measure("report", str(run_dir), "--json", "--grading-workers", str(a.grading_workers))
        print(f"reasoneval report (cold grade cache): main {rep['self_mb']:.0f} MB, grading workers "
              f"{rep['children_mb']:.0f} MB each at most, {rep['wall_s']:.0f} s", flush=True)
        (run_dir / "grades.jsonl").unlink(missing_ok=True)
        sc = measure("score", str(run_dir), "--json", "--grading-workers", str(a.grading_workers))
        print(f"reasoneval score (cold grade cache):  main {sc['self_mb']:.0f} MB, grading workers "
              f"{sc['children_mb']:.0f} MB each at most, {sc['wall_s']:.0f} s", flush=True)
        exports = []
        for fmt in ("jsonl", "parquet"):  # streams the journal: memory must not follow the store's size
            out = Path(tmp) / f"export.{fmt}"
            ex = measure("export", str(run_dir), "-o", str(out))
            exports.append(ex["self_mb"])
            print(f"reasoneval export -o export.{fmt}: {ex['self_mb']:.0f} MB ({ex['self_mb'] / base['self_mb']:.2f}x the "
                  f"baseline), {out.stat().st_size / 1e9:.2f} GB written in {ex['wall_s']:.0f} s", flush=True)
            out.unlink()
    peak = max(rep["self_mb"], sc["self_mb"], *exports)
    ok = peak < 300
    print(f"{a.problems} problems x {a.samples} samples, {size / 1e9:.2f} GB store: peak RSS of the main "
          f"process {peak:.0f} MB (target < 300 MB: {'met' if ok else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
