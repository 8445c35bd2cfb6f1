"""Check the Codeforces rating's estimate and 95% interval by simulation (docs/statistics.md, "A Codeforces rating").

A synthetic model of known rating R answers Q problems drawn (with replacement) from a real problem-rating
distribution, K samples each. A problem's solve probability is the Elo curve's P(R, r_i), shifted on the logit scale
by a problem-level random effect u_i ~ N(0, sigma^2) (sigma = 0: problems exactly as their rating says; sigma = 1:
a model finds some problems much easier or harder than their rating, as real models do). With sigma > 0 the
estimand is R*: the rating whose Elo curve predicts the model's expected solve rate on this rating distribution
(computed here by quadrature); with sigma = 0, R* = R. Each cell runs `--runs` replicates of
reasoneval.metrics.rating.estimate_rating and reports the bias of the estimate against R* (with its Monte Carlo
SE), how often the interval covers R*, the interval's mean width, and how many replicates gave an open end.

Rating distributions:
- `ladder`: the ratings of 179 real Codeforces problems (contests 1304-1330 and 1578-1623, a Codeforces API
  problemset dump in GitHub raghavpatidar/cfLadder @ 7b6b6f97f894cd2409fac4de22d4a96e2880849d : src/que.js, the
  first 32,000 characters and 200,000-216,000; that list keeps problems rated 800-1800): an easy-heavy benchmark.
- `grid`: every Codeforces problem rating 800-3500 equally often (synthetic: a hard-inclusive benchmark).
- `--ratings FILE`: a JSONL file's `rating` or `cf_rating` values (e.g. rows of open-r1/codeforces).

    PYTHONPATH=src python scripts/rating_simulation.py --runs 2000 --seed 1 --dists grid
    PYTHONPATH=src python scripts/rating_simulation.py --runs 2000 --seed 2 --dists ladder --models 1000,1400,1800
    PYTHONPATH=src python scripts/rating_simulation.py --runs 2000 --seed 3 --dists ladder --models 2400

(the figures in docs/statistics.md, "A Codeforces rating")
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from reasoneval.metrics.rating import ELO_SCALE, elo_probability, estimate_rating

# (rating, count) of the ladder's 179 problems, tallied from the file named above.
LADDER = {800: 40, 900: 16, 1000: 13, 1100: 15, 1200: 15, 1300: 15, 1400: 10, 1500: 10, 1600: 13, 1700: 20,
          1800: 12}
GRID = {r: 1 for r in range(800, 3600, 100)}


def estimand(rating: float, values: np.ndarray, weights: np.ndarray, sigma: float) -> float:
    """R*: the Elo rating whose expected solve rate on the distribution equals that of a model of rating `rating`
    with a N(0, sigma^2) logit random effect per problem."""
    nodes, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    logit = (rating - values[:, None]) * math.log(10) / ELO_SCALE + sigma * nodes[None, :]
    target = float(weights @ ((1 / (1 + np.exp(-logit))) @ w))
    lo, hi = -3000.0, 8000.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if float(weights @ elo_probability(mid, values)) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def simulate(dist: dict[int, int], rating: float, q: int, k: int, sigma: float, runs: int,
             rng: np.random.Generator) -> dict[str, float]:
    values = np.array(sorted(dist), dtype=np.float64)
    weights = np.array([dist[int(v)] for v in values], dtype=np.float64)
    weights /= weights.sum()
    target = estimand(rating, values, weights, sigma)
    est, cover, width, open_end = [], 0, [], 0
    for _ in range(runs):
        r = rng.choice(values, size=q, p=weights)
        logit = (rating - r) * math.log(10) / ELO_SCALE + sigma * rng.standard_normal(q)
        c = rng.binomial(k, 1 / (1 + np.exp(-logit)))
        e = estimate_rating(list(r), [k] * q, list(c))
        assert e is not None
        lo = -math.inf if e.low is None else e.low
        hi = math.inf if e.high is None else e.high
        cover += lo <= target <= hi
        if e.low is None or e.high is None:
            open_end += 1
        if e.rating is not None:
            est.append(e.rating)
            if e.low is not None and e.high is not None:
                width.append(e.high - e.low)
    a = np.array(est)
    return {"R": rating, "R*": round(target, 1), "Q": q, "K": k, "sigma": sigma, "runs": runs,
            "bias": float(a.mean() - target) if len(a) else math.nan,
            "bias_mcse": float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan,
            "sd": float(a.std(ddof=1)) if len(a) > 1 else math.nan,
            "coverage": cover / runs, "width": float(np.mean(width)) if width else math.nan,
            "open": open_end / runs}


def read_ratings(path: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        v = row.get("rating", row.get("cf_rating"))
        if isinstance(v, (int, float)) and v > 0:
            out[int(v)] = out.get(int(v), 0) + 1
    if not out:
        sys.exit(f"{path}: no row has a positive `rating` or `cf_rating`: give rows of a rated problem set")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ratings", type=Path, help="JSONL rows with rating / cf_rating (instead of the built-in two)")
    ap.add_argument("--ks", default="1,4,16")
    ap.add_argument("--qs", default="50,200")
    ap.add_argument("--models", default="1000,1400,1800,2400")
    ap.add_argument("--sigmas", default="0,1")
    ap.add_argument("--dists", default="ladder,grid", help="built-in rating distributions to run (ladder, grid)")
    ap.add_argument("--json", action="store_true", help="one JSON object per cell instead of the table")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    builtin = {"ladder": LADDER, "grid": GRID}
    dists = {"file": read_ratings(a.ratings)} if a.ratings else {d: builtin[d] for d in a.dists.split(",")}
    head = f"{'dist':7} {'R':>5} {'R*':>7} {'Q':>4} {'K':>3} {'sig':>3} {'bias':>7} {'mcse':>5} {'sd':>6} " \
           f"{'cover':>6} {'width':>6} {'open':>5}"
    if not a.json:
        print(head)
    t0 = time.time()
    worst: tuple[float, object] = (0.95, None)
    for name, dist in dists.items():
        for rating in map(float, a.models.split(",")):
            for q in map(int, a.qs.split(",")):
                for k in map(int, a.ks.split(",")):
                    for sigma in map(float, a.sigmas.split(",")):
                        cell = simulate(dist, rating, q, k, sigma, a.runs, rng)
                        cell["dist"] = name  # type: ignore[assignment]
                        if abs(cell["coverage"] - 0.95) > abs(worst[0] - 0.95):
                            worst = (cell["coverage"], cell)
                        if a.json:
                            print(json.dumps(cell))
                        else:
                            print(f"{name:7} {rating:5.0f} {cell['R*']:7.1f} {q:4d} {k:3d} {sigma:3.0f} "
                                  f"{cell['bias']:7.1f} {cell['bias_mcse']:5.1f} {cell['sd']:6.1f} "
                                  f"{cell['coverage']:6.3f} {cell['width']:6.0f} {cell['open']:5.3f}")
    print(f"# {time.time() - t0:.0f} s; coverage farthest from 0.95: {worst[0]:.3f} ({worst[1]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
