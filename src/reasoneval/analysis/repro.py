"""What `reasoneval repro` concludes from a run's samples and the same samples generated again (pure functions).

Pairs are (task, problem, sample index): the same prompt and seed, generated once by the run and once by the repro.
Three questions, in order: are the texts the same byte for byte; where do the others first part (a token position,
or a word where no tokenizer is at hand); and does the score on the subset move beyond what sampling noise explains
(the paired difference of per-problem means, with its CI over problems). The verdict names the answer: bitwise
reproducible / texts drift but scores agree within noise / scores differ beyond noise. See docs/reproducibility.md.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from reasoneval.serial import JsonRecord

BITWISE = "bitwise reproducible"
DRIFT = "texts drift but scores agree within noise"
DIFFER = "scores differ beyond noise"
NOTHING = "nothing to compare: no sample was generated again"
# repro's subset by default: each task's first 30 problems, their samples 0 and 1 (60 pairs a task: enough for a
# paired CI of a few points on a 50% task, a few minutes of generation)
DEFAULT_PROBLEMS = 30
DEFAULT_SAMPLES = 2
# Two-sided 95% quantiles of Student's t by degrees of freedom (1..30); beyond, the normal's 1.96.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)

Tokenize = Callable[[str], Sequence[object]]


@dataclass(frozen=True)
class Pair:
    """One sample as the run has it (a) and as the repro generated it (b), with each one's grade."""

    task: str
    problem_key: str
    index: int
    text_a: str
    text_b: str
    correct_a: bool
    correct_b: bool


def first_divergence(a: Sequence[object], b: Sequence[object]) -> int | None:
    """The position of the first unit where two sequences differ (the shorter one's length when one is the other's
    prefix); None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.96


@dataclass(frozen=True)
class PairedDifference(JsonRecord):
    """The subset's score both ways (mean over problems of each problem's share of correct samples) and b - a with
    its SE and 95% CI over problems (Student's t)."""

    problems: int
    score_a: float
    score_b: float
    difference: float
    stderr: float
    ci_low: float
    ci_high: float


def paired_difference(pairs: Sequence[Pair]) -> PairedDifference:
    per_problem: dict[tuple[str, str], list[Pair]] = {}
    for p in pairs:
        per_problem.setdefault((p.task, p.problem_key), []).append(p)
    a = [sum(p.correct_a for p in ps) / len(ps) for ps in per_problem.values()]
    b = [sum(p.correct_b for p in ps) / len(ps) for ps in per_problem.values()]
    d = [y - x for x, y in zip(a, b)]
    n = len(d)
    if n == 0:
        return PairedDifference(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    mean = sum(d) / n
    se = statistics.stdev(d) / math.sqrt(n) if n > 1 else math.nan
    half = t95(n - 1) * se if n > 1 else math.nan
    return PairedDifference(n, sum(a) / n, sum(b) / n, mean, se, mean - half, mean + half)


@dataclass(frozen=True)
class Divergence(JsonRecord):
    """Where the texts that differ first part: the unit (tokens of the model's vocabulary, or words), and the
    positions' distribution."""

    unit: str
    positions: list[int] = field(default_factory=list)
    minimum: int | None = None
    median: float | None = None
    maximum: int | None = None
    # quartiles (25th, 75th) where there are at least 4 positions
    quartiles: list[float] = field(default_factory=list)
    # position buckets (a power of two's range: "0-1", "2-3", "4-7", ...) -> count
    histogram: dict[str, int] = field(default_factory=dict)


def divergence(pairs: Sequence[Pair], tokenize: Tokenize | None, unit: str) -> Divergence:
    split: Tokenize = tokenize or (lambda text: text.split())
    positions = []
    for p in pairs:
        if p.text_a == p.text_b:
            continue
        pos = first_divergence(split(p.text_a), split(p.text_b))
        # texts differing only in whitespace: equal words, different text
        positions.append(pos if pos is not None else 0)
    positions.sort()
    if not positions:
        return Divergence(unit)
    quartiles = [float(q) for q in statistics.quantiles(positions, n=4)[::2]] if len(positions) >= 4 else []
    hist: dict[str, int] = {}
    for pos in positions:
        lo = 0 if pos < 2 else 1 << (pos.bit_length() - 1)
        label = f"{lo}-{max(1, 2 * lo - 1)}"
        hist[label] = hist.get(label, 0) + 1
    return Divergence(unit, positions, positions[0], float(statistics.median(positions)), positions[-1], quartiles,
                      hist)


def verdict(identical: int, total: int, diff: PairedDifference) -> str:
    """bitwise reproducible (every text identical), else whether the paired difference's 95% CI holds 0."""
    if total == 0 or diff.problems == 0:
        return NOTHING
    if identical == total:
        return BITWISE
    if math.isnan(diff.stderr):  # one problem: no CI; any change of its score is beyond what can be told from noise
        return DRIFT if diff.difference == 0 else DIFFER
    return DRIFT if diff.ci_low <= 0.0 <= diff.ci_high else DIFFER


@dataclass(frozen=True)
class ReproReport(JsonRecord):
    """repro.json: what was regenerated, how, and what came out."""

    run_dir: str
    repro_dir: str
    varied: dict[str, str]
    pairs: int
    identical: int
    identical_share: float
    failed: int
    divergence: Divergence
    paired: PairedDifference
    verdict: str
    # the repro's fingerprint against the run's: key -> [run's value, repro's value]
    fingerprint_differences: dict[str, list[object]] = field(default_factory=dict)
    per_task: dict[str, dict[str, float]] = field(default_factory=dict)


def summarize(pairs: Sequence[Pair], *, failed: int, tokenize: Tokenize | None, unit: str, run_dir: str,
              repro_dir: str, varied: Mapping[str, str],
              fingerprint_differences: Mapping[str, list[object]] | None = None) -> ReproReport:
    identical = sum(p.text_a == p.text_b for p in pairs)
    diff = paired_difference(pairs)
    per_task = {}
    for task in dict.fromkeys(p.task for p in pairs):
        ps = [p for p in pairs if p.task == task]
        per_task[task] = {"pairs": float(len(ps)), "identical": float(sum(p.text_a == p.text_b for p in ps)),
                          "score_run": sum(p.correct_a for p in ps) / len(ps),
                          "score_repro": sum(p.correct_b for p in ps) / len(ps)}
    return ReproReport(run_dir=run_dir, repro_dir=repro_dir, varied=dict(varied), pairs=len(pairs),
                       identical=identical, identical_share=identical / len(pairs) if pairs else math.nan,
                       failed=failed, divergence=divergence(pairs, tokenize, unit), paired=diff,
                       verdict=verdict(identical, len(pairs), diff),
                       fingerprint_differences=dict(fingerprint_differences or {}), per_task=per_task)


def report_lines(r: ReproReport) -> list[str]:
    """The plain-text report `repro` prints."""
    varied = ", ".join(f"{k}={v}" for k, v in r.varied.items()) or "nothing (the run's own setup)"
    lines = [f"repro of {r.run_dir}: {r.pairs} samples regenerated into {r.repro_dir} (varied: {varied})"
             + (f"; {r.failed} failed and are left out" if r.failed else "")]
    if r.fingerprint_differences:
        lines.append("setup differences: " + "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in
                                                       r.fingerprint_differences.items()))
    lines.append(f"identical texts: {r.identical}/{r.pairs} ({100 * r.identical_share:.1f}%)" if r.pairs else
                 "identical texts: no pairs")
    d = r.divergence
    if d.positions:
        q = f", quartiles {d.quartiles[0]:g}/{d.quartiles[1]:g}" if d.quartiles else ""
        hist = ", ".join(f"{k}: {v}" for k, v in d.histogram.items())
        lines.append(f"first divergent {d.unit} position of the other {len(d.positions)}: min {d.minimum}, "
                     f"median {d.median:g}{q}, max {d.maximum} (histogram {hist})")
    p = r.paired
    if p.problems:
        ci = ("no CI with one problem" if math.isnan(p.stderr) else
              f"SE {100 * p.stderr:.2f}, 95% CI [{100 * p.ci_low:+.2f}, {100 * p.ci_high:+.2f}]")
        lines.append(f"score on the subset ({p.problems} problems): run {100 * p.score_a:.2f}%, repro "
                     f"{100 * p.score_b:.2f}%; paired difference {100 * p.difference:+.2f} points ({ci})")
    lines.append(f"verdict: {r.verdict}")
    return lines
