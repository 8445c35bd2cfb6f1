"""`reasoneval analyze RUN --rating`: each task's Codeforces-style rating from a scored run (metrics/rating.py), with
the check a reader of the number needs: per rating band, the share of samples right beside what the Elo curve at the
estimate predicts (a band far from its prediction says the curve does not fit this model; docs/statistics.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reasoneval.analysis.outcomes import by_task, read_problem_rows
from reasoneval.errors import UserError
from reasoneval.metrics.rating import (
    HUMAN_PERCENTILE_SOURCE,
    RatingEstimate,
    elo_probability,
    human_percentile,
    numeric_rating,
    rating_from,
)
from reasoneval.results.schema import load_config
from reasoneval.results.store.problems import read_problems
from reasoneval.serial import to_json
from reasoneval.tasks.contests import rating_band


@dataclass(frozen=True)
class BandFit:
    band: str
    num_problems: int
    num_samples: int
    observed: float  # samples right / samples
    predicted: float | None  # the Elo curve at the estimate, averaged over the band's samples (None: no estimate)


@dataclass(frozen=True)
class TaskRating:
    task: str
    estimate: RatingEstimate | None
    bands: list[BandFit]
    # what the rating rests on (config.json's datasets[task]: the codeforces task's): problems per judging method,
    # problems left out before the run per reason
    judged_by: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)


def rating_analysis(run_dir: Path | str) -> list[TaskRating]:
    """Each task's rating; a UserError where no task of the run has rated problems."""
    run_dir = Path(run_dir)
    meta = {(p.task, p.key): p.metadata for p in read_problems(run_dir)}
    datasets = load_config(run_dir).datasets
    out = []
    for task, rows in by_task(read_problem_rows(run_dir)).items():
        ratings = [numeric_rating(meta.get((task, r.problem_key), {}).get("rating")) for r in rows]
        estimate = rating_from(zip(ratings, (r.correct for r in rows)))
        groups: dict[str, list[tuple[float, int, int]]] = {}
        for rating, r in zip(ratings, rows):
            if rating is not None and r.n:
                groups.setdefault(rating_band(rating), []).append((rating, r.n, r.num_correct))
        bands = []
        for band, items in sorted(groups.items(), key=lambda kv: min(x[0] for x in kv[1])):
            n = np.array([x[1] for x in items], dtype=np.float64)
            c = np.array([x[2] for x in items], dtype=np.float64)
            predicted = None
            if estimate is not None and estimate.rating is not None:
                p = elo_probability(estimate.rating, np.array([x[0] for x in items]))
                predicted = float((p * n).sum() / n.sum())
            bands.append(BandFit(band=band, num_problems=len(items), num_samples=int(n.sum()),
                                 observed=float(c.sum() / n.sum()), predicted=predicted))
        data = datasets.get(task)
        out.append(TaskRating(task=task, estimate=estimate, bands=bands, judged_by=dict(data.judged_by) if data else {},
                              left_out=dict(data.left_out) if data else {}))
    if not any(t.estimate is not None for t in out):
        raise UserError(f"{run_dir}: no task has two or more problems of known rating (metadata `rating`: the "
                        "codeforces task, code_contests from the Hub with cf_rating); --rating has nothing to estimate")
    return out


def rating_json(ratings: list[TaskRating]) -> dict[str, Any]:
    return {t.task: {"rating": to_json(t.estimate), "bands": to_json(t.bands),
                     "human_percentile": _percentiles(t.estimate),
                     **({"judged_by": t.judged_by, "left_out": t.left_out} if t.judged_by or t.left_out else {})}
            for t in ratings}


def _percentiles(e: RatingEstimate | None) -> dict[str, str | None] | None:
    """The percent of active Codeforces users rated below the estimate and each end (metrics/rating.py)."""
    if e is None:
        return None
    return {k: None if v is None else human_percentile(v) for k, v in
            (("rating", e.rating), ("low", e.low), ("high", e.high))} | {"source": HUMAN_PERCENTILE_SOURCE}
