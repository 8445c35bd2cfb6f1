"""SIGKILL at seeded random moments, re-run until done: nothing lost, nothing generated twice, same metrics.

The full 20-kill soak is scripts/soak.py (run by CI with a time bound); this is its short form.
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.soak_lib import run_soak


def test_kill_soak_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    res = run_soak(tmp_path, kills=3, seed=1, time_limit_s=90)
    assert not res.violations, res.verdict()
    assert res.kills == 3, res.verdict()
    # each round (a fresh run directory, killed until a run gets through) holds the whole job
    assert res.samples > 0 and res.samples % 80 == 0, res
