"""Grading speed: the batch API vs a plain per-response math-verify loop (see docs/benchmarks.md, "Grading").

Synthetic run shaped like 500 problems x 64 samples on the MATH-500 references: per problem, a sample is
right with probability p ~ Beta(2, 2), else one of three wrong answers (weights 0.6 / 0.3 / 0.1); a third
of the right ones are written in an equivalent but different form (\\dfrac, decimals, reordered sums);
5% have no answer (cut off), 2% are 20,000 characters long, the rest carry 2-8k characters of reasoning.

    REASONEVAL_DATA_DIR=../shared/datasets PYTHONPATH=src python bench/grading_speed.py
    ... --problems 100 --samples 16 --baseline-sample 300      # a quick run

The baseline (math-verify parse + verify, one response at a time, in this process) is timed on a random
subset of `--baseline-sample` responses and scaled to the whole run (`--baseline-sample 0`: all of them).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import sys
import tempfile
import time

from reasoneval.scoring.maths import GradeItem, GradingPool

_WORDS = ("we", "consider", "the", "sum", "so", "then", "therefore", "note", "that", "each", "term", "is",
          "equal", "to", "and", "by", "symmetry", "substituting", "gives", "check", "case", "where", "let")


def _reasoning(rng: random.Random, n_chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < n_chars:
        r = rng.random()
        if r < 0.15:
            s = f"$x_{{{rng.randint(1, 9)}}} = \\frac{{{rng.randint(1, 99)}}}{{{rng.randint(2, 99)}}}$"
        elif r < 0.3:
            s = f"{rng.randint(2, 999)} + {rng.randint(2, 999)} = {rng.randint(2, 2000)}"
        else:
            s = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 14))) + "."
        parts.append(s)
        size += len(s) + 1
    return " ".join(parts)[:n_chars]


def _equivalent_form(ans: str, rng: random.Random) -> str:
    """An equivalent but differently written answer (what a third of the right samples look like)."""
    m = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", ans)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        opts = [f"\\dfrac{{{a}}}{{{b}}}", f"{a}/{b}"]
        if len(str(a)) == 1 and len(str(b)) == 1:
            opts.append(f"\\dfrac{a}{b}")
        if b in (2, 4, 5, 8, 10, 20, 25):
            opts.append(repr(a / b))
        return rng.choice(opts)
    if re.fullmatch(r"-?\d+", ans):
        return rng.choice([f"{ans}.0", f"\\dfrac{{{2 * int(ans)}}}{{2}}", f"{int(ans):,}", f"x = {ans}"])
    depth = 0
    for i, c in enumerate(ans if not re.search(r"[=,\\]", ans.replace("\\pi", "")) else ""):  # reorder a top-level sum: a+b -> b+a
        depth += c in "({[" and 1 or 0
        depth -= c in ")}]" and 1 or 0
        if c == "+" and depth == 0 and 0 < i < len(ans) - 1:
            return ans[i + 1:] + "+" + ans[:i]
    if "\\frac" in ans:
        return ans.replace("\\frac", "\\dfrac")
    return "\\displaystyle " + ans


def _wrong_answers(ans: str) -> list[str]:
    if re.fullmatch(r"-?\d+", ans):
        n = int(ans)
        return [str(n + 1), str(2 * n + 3), str(n - 7)]
    m = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", ans)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return [f"\\frac{{{a + 1}}}{{{b}}}", f"\\frac{{{b}}}{{{a}}}", f"\\frac{{{a}}}{{{b + 2}}}"]
    return [f"2\\left({ans}\\right)", f"{ans}+1", f"-\\left({ans}\\right)"]


def build_run(refs: list[str], samples: int, seed: int) -> list[GradeItem]:
    rng = random.Random(seed)
    items: list[GradeItem] = []
    for ref in refs:
        p = rng.betavariate(2, 2)
        wrong = _wrong_answers(ref)
        for _ in range(samples):
            u = rng.random()
            if u < 0.02:
                n_chars = 20_000
            else:
                n_chars = rng.randint(2_000, 8_000)
            text = _reasoning(rng, n_chars)
            if rng.random() < 0.05:  # cut off before any answer
                items.append(GradeItem(text, ref, finish_reason="length"))
                continue
            if rng.random() < p:
                ans = _equivalent_form(ref, rng) if rng.random() < 1 / 3 else ref
            else:
                ans = rng.choices(wrong, weights=(0.6, 0.3, 0.1))[0]
            items.append(GradeItem(f"{text}\n\nTherefore, the final answer is $\\boxed{{{ans}}}$.", ref, finish_reason="stop"))
    return items


def _baseline(items: list[GradeItem]) -> tuple[float, list[bool]]:
    from math_verify import parse, verify

    out = []
    t = time.perf_counter()
    for it in items:
        gold = parse("\\boxed{" + it.reference + "}")
        out.append(bool(verify(gold, parse(it.response))))
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=pathlib.Path, default=None, help="math500.jsonl (default: $REASONEVAL_DATA_DIR/math500.jsonl)")
    ap.add_argument("--problems", type=int, default=500)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--baseline-sample", type=int, default=2000, help="responses timed for the baseline (0 = all)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    data = a.data or pathlib.Path(os.environ.get("REASONEVAL_DATA_DIR", "../shared/datasets")) / "math500.jsonl"
    if not data.exists():
        sys.exit(f"error: {data} not found: pass --data or set REASONEVAL_DATA_DIR")
    refs = [json.loads(line)["answer"] for line in data.open()][: a.problems]
    items = build_run(refs, a.samples, a.seed)
    n = len(items)
    print(f"{n} responses ({len(refs)} problems x {a.samples}), mean length "
          f"{sum(len(i.response) for i in items) / n:.0f} chars, cpus={os.cpu_count()}")

    with tempfile.TemporaryDirectory() as tmp:
        cache = pathlib.Path(tmp) / "grades.jsonl"
        t = time.perf_counter()
        with GradingPool(workers=a.workers, cache_path=cache) as pool:
            grades = pool.grade_many(items)
            stats = dict(pool.stats)
        batch_s = time.perf_counter() - t
        t = time.perf_counter()
        with GradingPool(workers=a.workers, cache_path=cache) as pool:
            regrade = pool.grade_many(items)
        regrade_s = time.perf_counter() - t
    assert regrade == grades
    acc = sum(g.correct for g in grades) / n
    statuses = {s: sum(g.status == s for g in grades) for s in ("ok", "no_answer", "timeout", "error")}
    print(f"batch API: {batch_s:.1f} s (pool start-up included), accuracy {acc:.3f}, {statuses}")
    print(f"  distinct pairs sent to workers: {stats['symbolic']}, decided in the parent: {stats['cheap']}, "
          f"cache hits: {stats['cache_hits']}")
    print(f"re-grade with the on-disk cache: {regrade_s:.1f} s")

    rng = random.Random(a.seed + 1)
    idx = list(range(n)) if a.baseline_sample <= 0 or a.baseline_sample >= n else sorted(rng.sample(range(n), a.baseline_sample))
    base_s, base = _baseline([items[i] for i in idx])
    est = base_s * n / len(idx)
    agree = sum(base[k] == grades[i].correct for k, i in enumerate(idx)) / len(idx)
    what = "measured" if len(idx) == n else f"timed on {len(idx)} random responses, scaled to {n}"
    print(f"plain math-verify loop: {est:.1f} s ({what}); verdicts agree with the batch API on {agree:.1%}")
    print(f"speed-up: {est / batch_s:.1f}x")


if __name__ == "__main__":
    main()
