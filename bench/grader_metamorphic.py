"""Metamorphic check of the grader: equal rewrites and near-misses of the benchmarks' reference answers.

    REASONEVAL_DATA_DIR=../shared/datasets PYTHONPATH=src python bench/grader_metamorphic.py [--sample N] [--seed S]

Prints the false-negative rate (equal rewrites judged different), the false-positive rate (near-misses judged
equal) and a per-rewrite table; --show-wrong lists the cases judged wrongly. The generator is
tests/scoring/maths/metamorphic.py (labels by construction, values checked exactly); targets FN <= 1%, FP <= 0.1%.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from tests.scoring.maths.metamorphic import data_dir, generate, references, table

from reasoneval.scoring.maths import GradingPool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=0, help="references sampled (0 = all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--show-wrong", action="store_true")
    a = ap.parse_args()
    d = data_dir()
    if d is None:
        sys.exit("error: set REASONEVAL_DATA_DIR to the benchmark datasets folder")
    refs = references(d)
    cases = generate(refs, seed=a.seed, sample=a.sample or None)
    t = time.perf_counter()
    with GradingPool(workers=a.workers, timeout_s=10.0) as pool:
        res = pool.equivalent_many([(c.pred, c.ref, "math", None) for c in cases])
    elapsed = time.perf_counter() - t
    verdicts = [eq for eq, _ in res]
    text, fn, fp, npos, nneg = table(cases, verdicts)
    bad = sum(st != "ok" for _, st in res)
    print(f"{len(refs)} distinct references, {len(cases)} cases ({npos} equal, {nneg} not equal), "
          f"graded in {elapsed:.1f} s; timeouts/errors: {bad}")
    print(f"false negatives: {fn:.2%} (target <= 1%)   false positives: {fp:.2%} (target <= 0.1%)")
    print(text)
    if a.show_wrong:
        for c, v in zip(cases, verdicts):
            if v != c.equal:
                print(f"  {c.kind}: {c.pred!r} vs {c.ref!r} label={c.equal} ours={v}")


if __name__ == "__main__":
    main()
