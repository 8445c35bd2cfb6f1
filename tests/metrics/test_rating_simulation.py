"""scripts/rating_simulation.py (docs/statistics.md's coverage figures) still runs: one small cell, its JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_simulation_script_runs_a_cell_and_its_interval_covers() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "rating_simulation.py"), "--runs", "300", "--seed", "5", "--dists",
         "grid", "--models", "1800", "--qs", "50", "--ks", "4", "--sigmas", "1", "--json"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=True)
    [cell] = [json.loads(line) for line in out.stdout.splitlines()]
    assert cell["runs"] == 300 and cell["dist"] == "grid" and cell["R*"] == 1800.3
    # 300 replicates: a coverage of 0.95 reads 0.925-0.975 nineteen times in twenty; 0.88 is far outside
    assert 0.88 <= cell["coverage"] <= 1.0
    assert abs(cell["bias"]) < 5 * cell["bias_mcse"] + 5
